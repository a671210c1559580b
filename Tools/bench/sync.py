'''Tools/bench/sync's driver: replication from kiosks to the site server, against the site
store's own import rate measured in the same run.

1. Backlog drain: N interaction documents queued at a kiosk (its store filled by `tracer db
   import`, as a kiosk offline for days would have them) drained by `tracer daemon --upstream`
   into a `tracer serve` on a SQLite site store. Baseline: `tracer db import` of the same
   documents into an empty site store. Also: bytes on the loopback wire per document (the
   interface's counters: request and answer, HTTP and TCP/IP headers included), and the kiosk's
   peak memory and CPU while it drains.
2. Fan-in: K kiosks (one process, `tracer-bench sync-fanin`, playing all of them with the
   product's replicator) writing B badges' windows live; p50/p99 from a window's write at its
   kiosk to its commit in the site store; the server's CPU per document.

Usage: sync.py TRACER TRACER_BENCH [--documents 1000000] [--kiosks 50] [--badges 20] [--seconds 90]
'''
import argparse
import json
import os
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

p = argparse.ArgumentParser()
p.add_argument('tracer')
p.add_argument('bench')
p.add_argument('--documents', type=int, default=1_000_000)
p.add_argument('--kiosks', type=int, default=50)
p.add_argument('--badges', type=int, default=20)
p.add_argument('--seconds', type=int, default=90)
p.add_argument('--skip-fanin', action='store_true')
a = p.parse_args()

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
site_map = os.path.join(root, 'BeaconMap/example-campus.yaml')
tracer = os.path.abspath(a.tracer)
bench = os.path.abspath(a.bench)
scratch = tempfile.mkdtemp(prefix='tracer-bench-sync-')
children = []


def say(text):
    print(text, flush=True)


def cleanup(*_):
    for c in children:
        if c.poll() is None:
            c.kill()
            c.wait()
    shutil.rmtree(scratch, ignore_errors=True)


signal.signal(signal.SIGTERM, lambda *_: (cleanup(), sys.exit(1)))


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def lo_bytes():
    with open('/proc/net/dev') as f:
        for line in f:
            if line.strip().startswith('lo:'):
                return int(line.split(':')[1].split()[0])
    return 0


def cpu_seconds(pid):
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def serve(store):
    port = free_port()
    proc = subprocess.Popen([tracer, 'serve', '--bind', f'127.0.0.1:{port}', '--store', store],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    children.append(proc)
    line = proc.stdout.readline()
    if not line.startswith('serving'):
        raise SystemExit(f'tracer serve did not start: {line!r}')
    return proc, f'http://127.0.0.1:{port}'


def token(store, anchor, path):
    out = subprocess.run([tracer, 'token', 'create', '--role', 'kiosk', '--anchor', anchor, '--store', store],
                         capture_output=True, text=True, check=True).stdout
    with open(path, 'w') as f:
        f.write(out)
    return path


def run(cmd):
    '''Runs a command to its end; its seconds, peak RSS (MiB) and CPU seconds.'''
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    children.append(proc)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f'{cmd[1]} failed ({proc.returncode}): {proc.stderr.read()[-2000:]}')
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


try:
    # 1. Backlog drain.
    n = a.documents
    say(f'writing {n:,} interaction documents to import…')
    lines = os.path.join(scratch, 'backlog.jsonl')
    rng = random.Random(7)
    # The windows end before the run and begin at most 13 days earlier, inside the site's 14 days:
    # dated from a fixed day (2026-11-22, as they once were), the server would purge them as they
    # arrive once that day is 14 days gone, and the drain would be measured with the purge. Twenty
    # badges' windows every 30 s, closer together when the documents would not fit in 13 days.
    step = min(30.0, 13 * 86400 / max(1, -(-n // 20)))
    t0 = int(time.time()) - 13 * 86400
    with open(lines, 'w') as f:
        for i in range(n):
            start = t0 + int((i // 20) * step)
            f.write(json.dumps({
                'path': f'beacons/kiosk-lab/interactions/w{i:09d}',
                'data': {
                    'deviceId': f'f7826da6-4fa2-4e98-8024-bc5b71e0893e:1:{i % 20}',
                    'beacon': {'uuid': 'f7826da6-4fa2-4e98-8024-bc5b71e0893e', 'major': 1, 'minor': i % 20},
                    'proximity': 'near', 'proximityCode': 2, 'distance': round(rng.uniform(0.5, 6), 2),
                    'nearest': round(rng.uniform(0.4, 5), 2), 'rssi': round(rng.uniform(-80, -55), 1),
                    'measuredPower': -59, 'samples': rng.randint(5, 30), 'testResult': False,
                    'start': {'__time__': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(start))},
                    'end': {'__time__': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(start + 30))},
                    'anchor': 'kiosk-lab',
                },
            }) + '\n')

    empty = os.path.join(scratch, 'empty.jsonl')
    open(empty, 'w').close()

    def declared(store):
        '''A store with the product's indexes declared, as a site store (and a kiosk's) has them:
        a daemon on an empty replay declares them and exits.'''
        run([tracer, 'daemon', '--map', site_map, '--anchor', 'kiosk-lab', '--source', f'replay:{empty}',
             '--store', store])
        return store

    say('baseline: tracer db import into an empty site store (with the site\'s indexes)…')
    base_seconds, _, _ = run([tracer, 'db', 'import', lines, '--store',
                              declared(os.path.join(scratch, 'baseline.sqlite'))])
    base_rate = n / base_seconds

    kiosk = os.path.join(scratch, 'kiosk.sqlite')
    say('the kiosk\'s backlog: the same documents imported into its store (indexes declared, as a daemon has them)…')
    run([tracer, 'db', 'import', lines, '--store', declared(kiosk)])
    site = os.path.join(scratch, 'site.sqlite')
    server, url = serve(site)
    t = token(site, 'kiosk-lab', os.path.join(scratch, 'lab.token'))
    say(f'draining {n:,} documents from the kiosk to {url}…')
    wire = lo_bytes()
    server_cpu = cpu_seconds(server.pid)
    drain_seconds, kiosk_rss, kiosk_cpu = run([
        tracer, 'daemon', '--map', site_map, '--anchor', 'kiosk-lab', '--source', f'replay:{empty}',
        '--store', kiosk, '--upstream', url, '--token-file', t, '--drain-timeout', '36000'])
    wire = lo_bytes() - wire
    server_cpu = cpu_seconds(server.pid) - server_cpu
    server.terminate()
    server.wait(60)
    check = subprocess.run([tracer, 'db', 'query', 'beacons/kiosk-lab/interactions', '--count', '--store', site],
                           capture_output=True, text=True, check=True).stdout.strip()
    if int(check) != n:
        raise SystemExit(f'the site store has {check} documents, not {n}')
    drain_rate = n / drain_seconds
    say('')
    say(f'backlog drain, {n:,} documents (SQLite site store):')
    say(f'  site store\'s own import (baseline)  {base_rate:10,.0f} documents/s  ({base_seconds:.1f} s)')
    say(f'  drained from a kiosk over HTTP       {drain_rate:10,.0f} documents/s  ({drain_seconds:.1f} s)')
    say(f'  ratio                                {drain_rate / base_rate:10.2f}   (target >= 0.70)')
    say(f'  on the wire (loopback, both ways)    {wire / n:10.0f} bytes per document')
    say(f'  kiosk while draining                 {kiosk_rss:10.0f} MiB peak RSS, {kiosk_cpu:.1f} s CPU '
        f'({kiosk_cpu / n * 1e6:.1f} us per document)')
    say(f'  server while taking it               {server_cpu / n * 1e6:10.1f} us CPU per document')

    # 2. Fan-in.
    if a.skip_fanin:
        raise SystemExit(0)
    site = os.path.join(scratch, 'fanin.sqlite')
    server, url = serve(site)
    tokens = os.path.join(scratch, 'tokens')
    os.makedirs(tokens)
    anchors = [f'k{i:02d}' for i in range(a.kiosks)]
    for k in anchors:
        token(site, k, os.path.join(tokens, k))
    say('')
    say(f'fan-in: {a.kiosks} kiosks x {a.badges} badges, live for {a.seconds} s…')
    server_cpu = cpu_seconds(server.pid)
    out = subprocess.run([bench, 'sync-fanin', '--server', url, '--tokens', tokens, '--site-store', site,
                          '--badges', str(a.badges), '--seconds', str(a.seconds), '--scratch',
                          os.path.join(scratch, 'fanin-kiosks')] + sum((['--kiosk', k] for k in anchors), []),
                         capture_output=True, text=True)
    server_cpu = cpu_seconds(server.pid) - server_cpu
    if out.returncode != 0:
        raise SystemExit(f'tracer-bench sync-fanin failed: {out.stderr[-2000:]}')
    result = json.loads(out.stdout.strip().splitlines()[-1])
    server.terminate()
    server.wait(60)
    docs = result['documents']
    say(f'  documents written at the kiosks      {docs:10,}  ({docs / a.seconds:.0f}/s), all in the site store: '
        f'{result["missing"] == 0}')
    say(f'  kiosk write -> site commit           p50 {result["p50"]:.3f} s, p99 {result["p99"]:.3f} s, '
        f'max {result["max"]:.3f} s  (target p99 <= 2 s)')
    say(f'  server CPU                           {server_cpu / max(docs, 1) * 1e6:10.0f} us per document '
        f'(heartbeats included: {server_cpu:.1f} s over {a.seconds} s)')
finally:
    cleanup()
