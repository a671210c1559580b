'''Tools/bench/campus's driver: a university's days through the real path, on PostgreSQL.

1. The plan (`tracer-bench campus plan`): windows a day and the busiest five minutes' rate; the
   disk it will take (BYTES_PER_WINDOW, measured by this benchmark) against what the database's
   directory has free. With --check it stops there (and fails when the room is not there).
2. The site: the campus's map (`tracer-bench campus map`) published, one kiosk token per kiosk,
   two `tracer serve` on the database.
3. Each day (the last one yesterday, so every window is inside the site's 14-day retention):
   `tracer-bench campus send`, every kiosk's five minutes a batch with its own token, to the two
   servers in turn; the day's rate against its peak, the database's growth, the servers' memory.
4. Flagging: reports of badges present on the last day, accepted and flagged as the site's
   flagger does (`tracer-bench campus flag`), p50 / p99.
5. A whole day's purge: the site's purge of the first day's interactions
   (`tracer-bench campus purge`), stopped (SIGKILL) after --purge-seconds if it has not finished;
   the day's time is then its rate extrapolated, and said so.

Usage: campus.py TRACER TRACER_BENCH (--check DIR | --postgres URI --data DIR) [--badges 10000]
       [--kiosks 500] [--days 1] [--hours 8] [--reports 20] [--concurrency 8] [--purge-seconds 120]
'''
import argparse
import concurrent.futures
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

# Bytes the database grows by a window (documents, index entries, change log, their indexes),
# measured by this benchmark (BENCHMARKS.md, "A whole university"); the plan's estimate.
BYTES_PER_WINDOW = 2600

p = argparse.ArgumentParser()
p.add_argument('tracer')
p.add_argument('bench')
p.add_argument('--check', metavar='DIR')
p.add_argument('--postgres')
p.add_argument('--data')
p.add_argument('--badges', type=int, default=10_000)
p.add_argument('--kiosks', type=int, default=500)
p.add_argument('--days', type=int, default=1)
p.add_argument('--hours', type=float, default=8)
p.add_argument('--reports', type=int, default=20)
p.add_argument('--concurrency', type=int, default=8)
p.add_argument('--purge-seconds', type=float, default=120)
p.add_argument('--dry-run', action='store_true')
a = p.parse_args()

tracer = os.path.abspath(a.tracer)
bench = os.path.abspath(a.bench)
campus = ['--badges', str(a.badges), '--kiosks', str(a.kiosks), '--hours', str(a.hours)]
children = []


def say(text):
    print(text, flush=True)


def fail(text):
    sys.exit(f'bench/campus: {text}')


if not 1 <= a.days <= 13:
    fail(f'--days is 1 to 13, not {a.days}: the last day is yesterday, and the site keeps 14 days '
         '(a 14th would be refused by /v1/sync for part of the day)')
if not 0 < a.hours <= 8:
    fail(f'--hours is of the teaching day, 08:00 to 16:00: above 0 and at most 8, not {a.hours}')
if a.kiosks < 2 or a.badges < 1:
    fail('--kiosks takes 2 or more (two to a room), --badges 1 or more')

def plan_of(hours):
    return json.loads(subprocess.run([bench, 'campus', 'plan', *campus[:-1], str(hours)], capture_output=True,
                                     text=True, check=True).stdout)


plan = plan_of(a.hours)
# The whole teaching day: its busiest five minutes (lunch, everyone in) are what ingest is held
# against, and its windows what a part of a day sent is extrapolated to.
whole = plan if a.hours == 8 else plan_of(8)
peak = whole['peakPerSecond']
windows = plan['windows'] * a.days
estimate = windows * BYTES_PER_WINDOW
gb = 1e9
if a.check:
    free = shutil.disk_usage(a.check).free
    say(f'plan: {a.badges} badges, {plan["kiosks"]} kiosks, {a.days} day(s) of {a.hours:g} h: '
        f'{windows:,} windows ({plan["windows"]:,} a day), the day\'s busiest five minutes '
        f'{peak:.0f} windows/s')
    say(f'disk: about {estimate / gb:.1f} GB in {a.check} (its disk has {free / gb:.1f} GB free)')
    if estimate > 0.8 * free:
        fail(f'needs about {estimate / gb:.1f} GB and {a.check} has {free / gb:.1f} GB free: '
             'fewer --days or --hours, or TMPDIR on a larger disk')
    sys.exit(0)
if not (a.postgres and a.data):
    fail('give --check DIR, or --postgres URI and --data DIR')

scratch = tempfile.mkdtemp(prefix='tracer-bench-campus-')


def cleanup(*_):
    for c in children:
        if c.poll() is None:
            c.kill()
            c.wait()
    shutil.rmtree(scratch, ignore_errors=True)


signal.signal(signal.SIGTERM, lambda *_: (cleanup(), sys.exit(1)))


def run(*args):
    r = subprocess.run([tracer, *args, '--store', a.postgres], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f'tracer {" ".join(args)}: {r.stderr.strip()}')
    return r.stdout


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def serve():
    port = free_port()
    log = open(os.path.join(scratch, f'serve-{port}.log'), 'w')
    proc = subprocess.Popen([tracer, 'serve', '--bind', f'127.0.0.1:{port}', '--store', a.postgres],
                            stdout=subprocess.PIPE, stderr=log, text=True)
    children.append(proc)
    line = proc.stdout.readline()
    if 'serving' not in line:
        fail(f'tracer serve did not start: {line.strip()!r} (its log: {log.name})')
    return proc, f'http://127.0.0.1:{port}'


def memory(pid):
    '''Resident and peak resident MiB of a process.'''
    values = {}
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            key, _, rest = line.partition(':')
            if key in ('VmRSS', 'VmHWM'):
                values[key] = int(rest.split()[0]) / 1024
    return values['VmRSS'], values['VmHWM']


def database_bytes():
    out = subprocess.run(['psql', a.postgres, '-Atc', 'SELECT pg_database_size(current_database())'],
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip())


def relation_sizes():
    out = subprocess.run(['psql', a.postgres, '-Atc',
                          "SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relkind = 'r' "
                          "AND relnamespace = 'public'::regnamespace ORDER BY 2 DESC LIMIT 5"],
                         capture_output=True, text=True, check=True).stdout
    return [(name, int(size)) for name, size in (line.split('|') for line in out.split())]


try:
    say(f'campus: {a.badges} badges, {plan["kiosks"]} kiosks, {a.days} day(s) of {a.hours:g} h from 08:00; '
        f'{plan["windows"]:,} windows a day, the whole day\'s busiest five minutes {peak:.0f}/s')
    started = time.monotonic()
    site_map = os.path.join(scratch, 'campus.yaml')
    subprocess.run([bench, 'campus', 'map', *campus, '--out', site_map], check=True)
    run('map', 'publish', site_map)
    tokens = os.path.join(scratch, 'tokens')
    os.mkdir(tokens)
    keys = [f'kiosk-{k:03d}' for k in range(plan['kiosks'])]

    def token(key):
        with open(os.path.join(tokens, key), 'w') as f:
            f.write(run('token', 'create', '--role', 'kiosk', '--anchor', key).strip() + '\n')

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(token, keys))
    servers = [serve(), serve()]
    say(f'site: the map published, {len(keys)} kiosk tokens, two servers ({time.monotonic() - started:.0f} s)')
    before = database_bytes()
    rss = [memory(s.pid)[0] for s, _ in servers]
    say(f'database {before / 1e6:.0f} MB; servers resident {rss[0]:.0f} and {rss[1]:.0f} MiB')

    midnight = (int(time.time()) // 86_400) * 86_400
    days = [midnight - (a.days - i) * 86_400 for i in range(a.days)]
    sent = []
    for i, day in enumerate(days):
        r = subprocess.run([bench, 'campus', 'send', *campus, '--servers', ','.join(u for _, u in servers),
                            '--tokens', tokens, '--day', str(day), '--day-index', str(i),
                            '--concurrency', str(a.concurrency)], stdout=subprocess.PIPE, text=True)
        if r.returncode != 0:
            fail(f'day {i + 1} was not sent (above)')
        day_result = json.loads(r.stdout)
        size = database_bytes()
        grew = size - (sent[-1]['size'] if sent else before)
        day_result.update(size=size, grew=grew)
        sent.append(day_result)
        rss = [memory(s.pid) for s, _ in servers]
        say(f'day {i + 1}: {day_result["windows"]:,} windows in {day_result["seconds"]:.0f} s: '
            f'{day_result["perSecond"]:,.0f}/s, {day_result["perSecond"] / peak:.1f}x the '
            f'campus day\'s peak ({peak:.0f}/s; target 10x); a batch p50 {day_result["requestP50"] * 1000:.0f} ms, '
            f'p99 {day_result["requestP99"] * 1000:.0f} ms; the database grew {grew / 1e9:.2f} GB '
            f'({grew / day_result["windows"]:.0f} bytes a window), now {size / 1e9:.2f} GB; servers resident '
            f'{rss[0][0]:.0f} and {rss[1][0]:.0f} MiB (peak {rss[0][1]:.0f}, {rss[1][1]:.0f})')
    per_window = (sent[-1]['size'] - before) / sum(d['windows'] for d in sent)
    say(f'a whole campus day ({whole["windows"]:,} windows) at {per_window:.0f} bytes a window: '
        f'{whole["windows"] * per_window / 1e9:.1f} GB a day, {14 * whole["windows"] * per_window / 1e9:.0f} GB for '
        f'the 14 days kept (from the {sum(d["windows"] for d in sent):,} sent)')
    for name, size in relation_sizes():
        say(f'  {name}: {size / 1e9:.2f} GB')

    r = subprocess.run([bench, 'campus', 'flag', *campus, '--store', a.postgres, '--day', str(days[-1]),
                        '--day-index', str(a.days - 1), '--reports', str(a.reports)], stdout=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        fail('flagging failed (above)')
    flag = json.loads(r.stdout)
    say(f'flagging one report, {a.days} day(s) held ({flag["separation"]} rule, {flag["reports"]} reports, '
        f'{flag["reporterWindows"]:.0f} reporter windows and {flag["exposures"]:.0f} exposures each on average): '
        f'p50 {flag["p50"] * 1000:.0f} ms, p99 {flag["p99"] * 1000:.0f} ms, worst {flag["max"] * 1000:.0f} ms')

    # The first day's purge, as the site's purge deletes it; stopped after --purge-seconds.
    purge = subprocess.Popen([bench, 'campus', 'purge', '--store', a.postgres, '--before', str(days[0] + 86_400)],
                             stdout=subprocess.PIPE, text=True)
    children.append(purge)
    progress = []

    def read_purge():
        for line in purge.stdout:
            parts = line.split()
            if len(parts) >= 3 and parts[0] == 'purged':
                progress.append((int(parts[1]), float(parts[2]), parts[-1] == 'done'))

    reader = threading.Thread(target=read_purge)
    reader.start()
    try:
        purge.wait(timeout=a.purge_seconds)
    except subprocess.TimeoutExpired:
        purge.send_signal(signal.SIGKILL)
    purge.wait()
    reader.join()
    if purge.returncode not in (0, -signal.SIGKILL):
        fail('the purge failed (above)')
    last = progress[-1][:2] if progress else None
    finished = bool(progress) and progress[-1][2]
    first_day = sent[0]['windows']
    if finished:
        say(f'a whole day\'s purge: {last[0]:,} interactions in {last[1]:.1f} s')
    elif last:
        rate = last[0] / last[1]
        say(f'a whole day\'s purge: stopped after {a.purge_seconds:g} s, {last[0]:,} of {first_day:,} deleted at '
            f'{rate:,.0f}/s: those would take about {first_day / rate / 60:.0f} minutes, a whole campus day '
            f'({whole["windows"]:,} windows) about {whole["windows"] / rate / 60:.0f} (extrapolated)')
    else:
        say(f'a whole day\'s purge: nothing deleted within {a.purge_seconds:g} s')
    rss = [memory(s.pid) for s, _ in servers]
    say(f'servers at the end: resident {rss[0][0]:.0f} and {rss[1][0]:.0f} MiB, peak {rss[0][1]:.0f} and '
        f'{rss[1][1]:.0f} MiB; the whole run {time.monotonic() - started:.0f} s')
finally:
    cleanup()
