'''Tools/bench/serve's driver.

Usage: serve.py TRACER [--seconds 10] [--clients 500] [--writes 20] [--devices 20000] [--postgres URI]

With --postgres, the store is that database and a second `tracer serve` shares it: the SSE
clients watch the second server while each write goes through the first (POST /v1/sync), and
the latency runs from the write's request to each client's event.
'''
import urllib.request
import argparse
import asyncio
import itertools
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

p = argparse.ArgumentParser()
p.add_argument('tracer')
p.add_argument('--seconds', type=int, default=10)
p.add_argument('--clients', type=int, default=500)
p.add_argument('--writes', type=int, default=20)
p.add_argument('--devices', type=int, default=20000)
p.add_argument('--port', type=int, default=18181)
p.add_argument('--postgres')
a = p.parse_args()

scratch = tempfile.mkdtemp(prefix='tracer-bench-serve-')
store = a.postgres or os.path.join(scratch, 's.sqlite')
tracer = os.path.abspath(a.tracer)


def run(*args, stdin=None):
    return subprocess.run([tracer, *args, '--store', store], input=stdin, capture_output=True, text=True, check=True).stdout


def say(text):
    print(text, flush=True)


# A store of the size a campus term gives: devices, each with a few exposures. The exposures are
# of the last three days, inside the site's 14 days: dated fixed days (2026-11-10 to 12, as they
# once were), they passed the retention period on 2026-11-26, and from then on every run measured
# the server purging them and working out 20,000 devices' summaries again (16% of its CPU during
# the device route's run, `perf record -a`), not the route.
say(f'filling a store: {a.devices} devices, 3 exposures each…')
lines = []
today = datetime.now(timezone.utc).replace(hour=9, minute=0, second=0, microsecond=0)
for i in range(a.devices):
    status = 'exposed' if i % 7 == 0 else 'clear'
    lines.append(json.dumps({'path': f'devices/dev-{i}', 'data': {'status': status, 'risk': 'low', 'exposureCount': 3}}))
    for k in range(3):
        t = (today - timedelta(days=3 - k)).strftime('%Y-%m-%dT%H:%M:%S.000000Z')
        lines.append(json.dumps({'path': f'devices/dev-{i}/exposures/r{k}', 'data': {
            'reportId': f'r{k}', 'beaconKey': 'kiosk-lab', 'from': {'__time__': t}, 'to': {'__time__': t},
            'overlapSeconds': 600, 'separation': {'min': 0.5, 'max': 2.5}}}))
dump = os.path.join(scratch, 'devices.jsonl')
with open(dump, 'w') as f:
    f.write('\n'.join(lines) + '\n')
run('db', 'import', dump)
device = 'dev-4242'
token = run('token', 'create', '--role', 'device', '--device', device).strip()
fan = 'dev-fan'
fan_token = run('token', 'create', '--role', 'device', '--device', fan).strip()
admin_token = run('token', 'create', '--role', 'admin', '--name', 'bench').strip()


def serve(port):
    # Every client of the benchmark is on 127.0.0.1: one address, beyond the 128 connections a
    # client address may hold by default (a proxy in front of a server needs the same).
    server = subprocess.Popen([tracer, 'serve', '--bind', f'127.0.0.1:{port}', '--store', store,
                               '--max-connections-per-client', str(a.clients + 64)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    servers.append(server)
    line = server.stdout.readline()
    if 'serving' not in line:
        sys.exit(f'bench/serve: the server did not start: {line!r}')


servers = []
try:
    serve(a.port)
    # The watchers' server: the first one, or on PostgreSQL a second sharing the database.
    watch_port = a.port
    if a.postgres:
        watch_port = a.port + 1
        serve(watch_port)
    base = f'http://127.0.0.1:{a.port}'

    def wrk(path, headers=()):
        argv = ['wrk', '-t2', '-c32', f'-d{a.seconds}s', '--latency']
        for h in headers:
            argv += ['-H', h]
        out = subprocess.run(argv + [base + path], capture_output=True, text=True, check=True).stdout
        rps = float(re.search(r'Requests/sec:\s+([\d.]+)', out).group(1))

        def ms(label):
            m = re.search(rf'\s{label}%\s+([\d.]+)(us|ms|s)', out)
            v = float(m.group(1))
            return v / 1000 if m.group(2) == 'us' else v * 1000 if m.group(2) == 's' else v
        errors = re.search(r'Non-2xx or 3xx responses: (\d+)', out)
        return rps, ms('50'), ms('99'), int(errors.group(1)) if errors else 0

    say(f'\nGET, wrk -t2 -c32 -d{a.seconds}s (server and load share the 2 cores)')
    say(f'{"request":<34}{"req/s":>10}{"p50 ms":>9}{"p99 ms":>9}{"non-2xx":>9}')
    health = wrk('/health')
    say(f'{"GET /health (baseline)":<34}{health[0]:>10.0f}{health[1]:>9.2f}{health[2]:>9.2f}{health[3]:>9}')
    dev = wrk(f'/v1/devices/{device}', [f'Authorization: Bearer {token}'])
    # The route measured is the one a person's page asks: a device with its three exposures.
    answer = json.load(urllib.request.urlopen(urllib.request.Request(
        base + f'/v1/devices/{device}', headers={'Authorization': f'Bearer {token}'})))
    if len(answer.get('exposures', [])) != 3:
        sys.exit(f'bench/serve: the device answered {len(answer.get("exposures", []))} exposures, not 3: '
                 'the store is not the one this benchmark measures')
    say(f'{"GET /v1/devices/{id} + token":<34}{dev[0]:>10.0f}{dev[1]:>9.2f}{dev[2]:>9.2f}{dev[3]:>9}')
    say(f'ratio devices/health: {dev[0] / health[0]:.2f}x the requests/s;  target >= 5000 req/s: '
        f'{"met" if dev[0] >= 5000 else "MISSED"}; p99 <= 20 ms: {"met" if dev[2] <= 20 else "MISSED"}')

    async def fanout(clients, writes):
        '''clients watch devices/dev-fan; returns the write-to-event latencies in ms.'''
        received = {}  # n -> [latency ms]
        sent = {}  # n -> when its write was sent (PostgreSQL: through the other server)
        ready = 0
        all_ready = asyncio.Event()

        async def client():
            nonlocal ready
            reader, writer = await asyncio.open_connection('127.0.0.1', watch_port)
            writer.write((f'GET /v1/watch?path=devices/{fan} HTTP/1.1\r\nHost: x\r\n'
                          f'Authorization: Bearer {fan_token}\r\nAccept: text/event-stream\r\n\r\n').encode())
            await writer.drain()
            first = True
            buffer = b''
            try:
                while True:
                    chunk = await reader.read(65536)
                    if not chunk:
                        return
                    now = time.time()
                    buffer += chunk
                    while b'\n\n' in buffer:
                        event, buffer = buffer.split(b'\n\n', 1)
                        if b'event: document' not in event:
                            continue
                        if first:
                            first = False
                            ready += 1
                            if ready == clients:
                                all_ready.set()
                            continue
                        text = event.decode()
                        n = re.search(r'"n":(\d+)', text)
                        ts = re.search(r'"ts":\{"__time__":"([^"]+)"\}', text)
                        if n and a.postgres and int(n.group(1)) in sent:
                            received.setdefault(int(n.group(1)), []).append((now - sent[int(n.group(1))]) * 1000)
                        elif n and ts:
                            t = datetime.fromisoformat(ts.group(1).replace('Z', '+00:00')).timestamp()
                            received.setdefault(int(n.group(1)), []).append((now - t) * 1000)
            finally:
                writer.close()

        tasks = [asyncio.create_task(client()) for _ in range(clients)]
        try:
            await asyncio.wait_for(all_ready.wait(), 120)
        except asyncio.TimeoutError:
            sys.exit(f'bench/serve: only {ready} of {clients} clients got their first event')
        for n in range(1, writes + 1):
            if a.postgres:
                # The server applies a kiosk's batch only beyond the change it acknowledged last
                # (a replay changes nothing): each round's batches go on from the last round's.
                body = json.dumps({'kiosk': 'bench', 'through': next(through), 'sentAt': time.time(),
                                   'documents': [{'path': f'devices/{fan}', 'data': {'n': n}}]}).encode()
                request = urllib.request.Request(f'{base}/v1/sync', data=body, method='POST', headers={
                    'Authorization': f'Bearer {admin_token}', 'Content-Type': 'application/json'})
                sent[n] = time.time()
                await asyncio.to_thread(lambda: urllib.request.urlopen(request, timeout=30).read())
            else:
                proc = await asyncio.create_subprocess_exec(
                    tracer, 'db', 'set', f'devices/{fan}', json.dumps({'n': n, 'ts': {'__serverTimestamp__': True}}),
                    '--store', store, stdout=asyncio.subprocess.DEVNULL)
                await proc.wait()
            deadline = time.time() + 10
            while len(received.get(n, [])) < clients and time.time() < deadline:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)
        for t in tasks:
            t.cancel()
        lost = sum(clients - len(received.get(n, [])) for n in range(1, writes + 1))
        return [v for vs in received.values() for v in vs], lost

    through = itertools.count(1)

    def pct(values, q):
        values = sorted(values)
        return values[min(len(values) - 1, int(q * len(values)))]

    if a.postgres:
        say(f'\nSSE fan-out across servers: {a.writes} writes to devices/{fan} through POST /v1/sync on one server, '
            f'clients watching another on the same PostgreSQL; the write\'s request to each client\'s event')
    else:
        say(f'\nSSE fan-out: {a.writes} writes to devices/{fan} from another process; commit to each client\'s event')
    say(f'{"clients":<34}{"events":>10}{"p50 ms":>9}{"p99 ms":>9}{"max ms":>9}{"lost":>7}')
    one, lost1 = asyncio.run(fanout(1, a.writes))
    say(f'{"1 (baseline)":<34}{len(one):>10}{pct(one, .5):>9.1f}{pct(one, .99):>9.1f}{max(one):>9.1f}{lost1:>7}')
    many, lost = asyncio.run(fanout(a.clients, a.writes))
    say(f'{a.clients:<34}{len(many):>10}{pct(many, .5):>9.1f}{pct(many, .99):>9.1f}{max(many):>9.1f}{lost:>7}')
    say(f'ratio p99 {a.clients}/1: {pct(many, .99) / pct(one, .99):.1f}x;  target p99 <= 100 ms: '
        f'{"met" if pct(many, .99) <= 100 and lost == 0 else "MISSED"}')
finally:
    for server in servers:
        server.send_signal(signal.SIGTERM)
    for server in servers:
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            say('bench/serve: a server did not stop within 15 s of SIGTERM')
    shutil.rmtree(scratch, ignore_errors=True)
