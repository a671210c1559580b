'''Tools/bench/uploads's driver: N concurrent POST /v1/reports against one `tracer serve`.

Usage: uploads.py TRACER [--uploads 50] [--ocr-threads 2] [--queue 8]
'''
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import date

p = argparse.ArgumentParser()
p.add_argument('tracer')
p.add_argument('--uploads', type=int, default=50)
p.add_argument('--ocr-threads', type=int, default=2)
p.add_argument('--queue', type=int, default=8)
a = p.parse_args()

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
tracer = os.path.abspath(a.tracer)
scratch = tempfile.mkdtemp(prefix='tracer-bench-uploads-')
store = os.path.join(scratch, 's.sqlite')
server = None


def say(text):
    print(text, flush=True)


def cleanup(*_):
    if server and server.poll() is None:
        server.terminate()
        server.wait(10)
    shutil.rmtree(scratch, ignore_errors=True)


signal.signal(signal.SIGTERM, lambda *_: (cleanup(), sys.exit(1)))
try:
    say('rendering test results…')
    images = os.path.join(scratch, 'images')
    subprocess.run(['/usr/bin/python3', os.path.join(root, 'Tools/testing/make_fixtures.py'), images,
                    '--today', date.today().isoformat()], check=True, stderr=subprocess.DEVNULL)
    files = [os.path.join(images, f) for f in ('lab-pcr-positive.png', 'lab-pcr-negative.png')]
    bodies = [open(f, 'rb').read() for f in files]

    token = subprocess.run([tracer, 'token', 'create', '--role', 'kiosk', '--store', store],
                           capture_output=True, text=True, check=True).stdout.strip()
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([tracer, 'serve', '--bind', f'127.0.0.1:{port}', '--store', store,
                               '--map', os.path.join(root, 'BeaconMap/example-campus.yaml'),
                               '--ocr-threads', str(a.ocr_threads), '--ocr-queue', str(a.queue)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    server.stdout.readline()  # "serving …": listening

    def status_of(pid):
        fields = {}
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                k, _, v = line.partition(':')
                fields[k] = v.strip()
        return int(fields['Threads']), int(fields['VmRSS'].split()[0]) // 1024, int(fields['VmHWM'].split()[0]) // 1024

    def upload(body, device):
        boundary = uuid.uuid4().hex
        form = (f'--{boundary}\r\nContent-Disposition: form-data; name="deviceId"\r\n\r\n{device}\r\n'
                f'--{boundary}\r\nContent-Disposition: form-data; name="image"; filename="r.png"\r\n'
                f'Content-Type: image/png\r\n\r\n').encode() + body + f'\r\n--{boundary}--\r\n'.encode()
        request = urllib.request.Request(f'http://127.0.0.1:{port}/v1/reports', data=form, method='POST', headers={
            'Authorization': f'Bearer {token}', 'Content-Type': f'multipart/form-data; boundary={boundary}'})
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=300) as r:
                return r.status, time.monotonic() - started, None
        except urllib.error.HTTPError as e:
            return e.code, time.monotonic() - started, e.headers.get('Retry-After')
        except Exception as e:  # noqa: BLE001 - an upload with no answer is what this measures
            return f'no answer ({type(e).__name__})', time.monotonic() - started, None

    idle_threads, idle_rss, _ = status_of(server.pid)
    alone = [upload(bodies[0], 'baseline-device')[1] for _ in range(1)][0]
    say(f'one upload alone: {alone * 1000:.0f} ms; the idle server: {idle_threads} threads, {idle_rss} MiB')

    results = [None] * a.uploads
    peak_threads, peak_rss = idle_threads, idle_rss
    done = threading.Event()

    def sample():
        nonlocal_peak = [idle_threads, idle_rss]
        while not done.is_set():
            t, rss, _ = status_of(server.pid)
            nonlocal_peak[0] = max(nonlocal_peak[0], t)
            nonlocal_peak[1] = max(nonlocal_peak[1], rss)
            time.sleep(0.02)
        sample.peak = nonlocal_peak

    sampler = threading.Thread(target=sample)
    sampler.start()

    def one(i):
        results[i] = upload(bodies[i % 2], f'dev-{i}')

    say(f'{a.uploads} uploads at once (positives and negatives alternating)…')
    started = time.monotonic()
    workers = [threading.Thread(target=one, args=(i,)) for i in range(a.uploads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall = time.monotonic() - started
    done.set()
    sampler.join()
    peak_threads, peak_rss = sample.peak
    _, _, hwm = status_of(server.pid)

    by = {}
    for code, _, _ in results:
        by[code] = by.get(code, 0) + 1
    answered = sum(v for k, v in by.items() if k in (200, 201, 422, 503))
    retry = [r for c, _, r in results if c == 503]
    read = sorted(t for c, t, _ in results if c in (200, 201, 422))
    say(f'answers: ' + ', '.join(f'{k}: {v}' for k, v in sorted(by.items(), key=lambda kv: str(kv[0]))))
    say(f'every upload answered with 201/200/422/503: {"yes" if answered == a.uploads else "NO"} '
        f'({answered} of {a.uploads}); 503s with Retry-After: {sum(1 for r in retry if r)} of {len(retry)}')
    if read:
        say(f'pages read: {len(read)} in {wall:.1f} s; slowest answer {read[-1]:.1f} s '
            f'({read[-1] / alone:.1f}× one upload alone)')
    say(f'server threads: {idle_threads} idle, {peak_threads} at the peak (+{peak_threads - idle_threads}); '
        f'RSS {idle_rss} MiB idle, {peak_rss} MiB at the peak (high-water {hwm} MiB)')
finally:
    cleanup()
