'''Tools/bench/pages's driver: N SSE watchers (one per device, as the person's page), one
flagging of M devices, the commit-to-event latency of each affected page.

Usage: pages.py TRACER [--pages 10000] [--flagged 1000] [--postgres URI]

With --postgres, the store is that database and two servers share it, each holding half the
pages; the memory figure is both servers' growth over all the pages.
'''
import argparse
import asyncio
import hashlib
import json
import os
import random
import re
import resource
import shutil
import string
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import datetime

p = argparse.ArgumentParser()
p.add_argument('tracer')
p.add_argument('--pages', type=int, default=10000)
p.add_argument('--flagged', type=int, default=1000)
p.add_argument('--postgres')
a = p.parse_args()
_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
scratch = tempfile.mkdtemp(prefix='tracer-bench-pages-')
store = a.postgres or os.path.join(scratch, 's.sqlite')
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
servers = []


def run(*args):
    return subprocess.run([a.tracer, *args, '--store', store], check=True, capture_output=True, text=True).stdout


def rss_kib(pid):
    for line in open(f'/proc/{pid}/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1])


def cpu_seconds(pid):
    fields = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float('nan')


alphabet = string.ascii_letters + string.digits
try:
    run('map', 'publish', os.path.join(root, 'BeaconMap/example-campus.yaml'))
    # The people's device tokens, as `token create --link` and the page's exchange leave them.
    tokens = {}
    with open(os.path.join(scratch, 'tokens.jsonl'), 'w') as f:
        for i in range(a.pages):
            tid = ''.join(random.choices(alphabet, k=12))
            secret = ''.join(random.choices(alphabet, k=32))
            tokens[f'dev-{i}'] = f'tracer_{tid}_{secret}'
            f.write(json.dumps({'path': f'tokens/{tid}', 'data': {
                'role': 'device', 'deviceId': f'dev-{i}', 'name': 'bench', 'hash': hashlib.sha256(secret.encode()).hexdigest()}}) + '\n')
            f.write(json.dumps({'path': f'devices/dev-{i}', 'data': {'status': 'clear', 'risk': 'low', 'exposureCount': 0}}) + '\n')
    run('db', 'import', os.path.join(scratch, 'tokens.jsonl'))
    ports = []
    for _ in range(2 if a.postgres else 1):
        server = subprocess.Popen([a.tracer, 'serve', '--store', store, '--bind', '127.0.0.1:0',
                                   '--max-connections', str(a.pages + 1000), '--max-connections-per-client', str(a.pages + 1000)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        servers.append(server)
        ports.append(int(re.search(r':(\d+)/', server.stdout.readline()).group(1)))
    port = ports[0]
    time.sleep(1)
    idle = sum(rss_kib(s.pid) for s in servers)

    connected = 0
    arrivals = {}
    extra = 0
    all_connected = asyncio.Event()

    async def page(device):
        global connected, extra
        # Half the pages on each server (PostgreSQL): whichever a balancer sent them to.
        reader, writer = await asyncio.open_connection('127.0.0.1', ports[int(device[4:]) % len(ports)])
        writer.write((f'GET /v1/watch?path=devices%2F{device} HTTP/1.1\r\nHost: x\r\n'
                      f'Authorization: Bearer {tokens[device]}\r\nAccept: text/event-stream\r\n\r\n').encode())
        await writer.drain()
        first, buffer = True, b''
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
                        connected += 1
                        if connected == a.pages:
                            all_connected.set()
                        continue
                    at = re.search(rb'"at":\{"__time__":"([^"]+)"\}', event)
                    if at and device not in arrivals:
                        t = datetime.fromisoformat(at.group(1).decode().replace('Z', '+00:00')).timestamp()
                        arrivals[device] = (now - t) * 1000
                    else:
                        extra += 1
        finally:
            writer.close()

    health = []
    stop = threading.Event()

    def probe():
        while not stop.is_set():
            started = time.time()
            urllib.request.urlopen(f'http://127.0.0.1:{port}/health', timeout=10).read()
            health.append((time.time() - started) * 1000)
            time.sleep(0.02)

    async def main():
        tasks = []
        started = time.time()
        for i in range(a.pages):
            tasks.append(asyncio.create_task(page(f'dev-{i}')))
            if i % 200 == 199:
                await asyncio.sleep(0.05)  # as pages open over a moment, not in one SYN burst
        await asyncio.wait_for(all_connected.wait(), 600)
        print(f'{a.pages} pages connected in {time.time() - started:.1f} s', flush=True)
        await asyncio.sleep(2)
        connected_rss = sum(rss_kib(s.pid) for s in servers)
        flagged = [f'dev-{i}' for i in range(0, a.pages, a.pages // a.flagged)][:a.flagged]
        lines = os.path.join(scratch, 'flagging.jsonl')
        with open(lines, 'w') as f:
            for d in flagged:
                f.write(json.dumps({'path': f'devices/{d}', 'data': {
                    'status': 'exposed', 'risk': 'medium', 'exposureCount': 1, 'at': {'__serverTimestamp__': True}}}) + '\n')
        prober = threading.Thread(target=probe)
        prober.start()
        await asyncio.sleep(1)
        server_cpu, own_cpu = sum(cpu_seconds(s.pid) for s in servers), time.process_time()
        proc = await asyncio.create_subprocess_exec(a.tracer, 'db', 'import', lines, '--batch-size', str(a.flagged + 1),
                                                    '--store', store, stdout=asyncio.subprocess.DEVNULL)
        await proc.wait()
        deadline = time.time() + 60
        while len(arrivals) < len(flagged) and time.time() < deadline:
            await asyncio.sleep(0.01)
        await asyncio.sleep(1)
        server_cpu, own_cpu = sum(cpu_seconds(s.pid) for s in servers) - server_cpu, time.process_time() - own_cpu
        stop.set()
        prober.join()
        for t in tasks:
            t.cancel()
        return connected_rss, flagged, server_cpu, own_cpu

    connected_rss, flagged, server_cpu, own_cpu = asyncio.run(main())
    latencies = list(arrivals.values())
    missed = len(flagged) - len(arrivals)
    per = (connected_rss - idle) / a.pages
    print(f'{len(servers)} server(s) on {"PostgreSQL" if a.postgres else "SQLite"}')
    print(f'server memory: {idle / 1024:.0f} MiB idle, {connected_rss / 1024:.0f} MiB with {a.pages} pages: '
          f'{per:.1f} KiB a connection (target <= 32)')
    print(f'one flagging of {len(flagged)} devices: {len(arrivals)} pages told, {missed} missed, {extra} events to others; '
          f'commit to event p50 {pct(latencies, .5):.0f} ms, p99 {pct(latencies, .99):.0f} ms, max {max(latencies or [0]):.0f} ms (target p99 <= 500)')
    print(f'/health meanwhile: {len(health)} requests, p50 {pct(health, .5):.1f} ms, p99 {pct(health, .99):.1f} ms (target <= 20)')
    print(f'CPU over the flagging: the server {server_cpu:.2f} s, this load generator {own_cpu:.2f} s')
    ok = missed == 0 and pct(latencies, .99) <= 500 and per <= 32 and pct(health, .99) <= 20
    print('targets met' if ok else 'TARGETS MISSED')
    sys.exit(0 if ok else 1)
finally:
    for server in servers:
        if server.poll() is None:
            server.terminate()
            server.wait(30)
    shutil.rmtree(scratch, ignore_errors=True)
