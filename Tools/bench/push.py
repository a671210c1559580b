'''Tools/bench/push's driver: one flagging that changes N devices' status, each with one browser
subscribed; every push must reach the push service stand-in, verified and decrypted.

Usage: push.py TRACER [--subscriptions 1000]
'''
import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

p = argparse.ArgumentParser()
p.add_argument('tracer')
p.add_argument('--subscriptions', type=int, default=1000)
a = p.parse_args()

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
tracer = os.path.abspath(a.tracer)
scratch = tempfile.mkdtemp(prefix='tracer-bench-push-')
store = os.path.join(scratch, 's.sqlite')
children = []


def say(text):
    print(text, flush=True)


def cleanup(*_):
    for c in children:
        if c.poll() is None:
            c.terminate()
            try:
                c.wait(10)
            except subprocess.TimeoutExpired:
                c.kill()
    shutil.rmtree(scratch, ignore_errors=True)


def run(*args):
    subprocess.run([tracer, *args, '--store', store], check=True, stdout=subprocess.DEVNULL)


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


def deliveries(port):
    return get(f'http://127.0.0.1:{port}/deliveries')


def flag(devices, risk, name):
    '''The flagging's writes: the devices' statuses in one transaction (as the exposure engine
    commits a report's), imported; returns when it is committed.'''
    lines = os.path.join(scratch, name + '.jsonl')
    with open(lines, 'w') as f:
        for d in devices:
            f.write(json.dumps({'path': f'devices/{d}', 'data': {'status': 'exposed', 'risk': risk, 'exposureCount': 1}}) + '\n')
    run('db', 'import', lines, '--batch-size', str(len(devices) + 1))
    return time.time()


def wait_for(port, count, timeout=600):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = deliveries(port)
        if len(got) >= count:
            return got
        time.sleep(0.05)
    return deliveries(port)


signal.signal(signal.SIGTERM, lambda *_: (cleanup(), sys.exit(1)))
try:
    state = os.path.join(scratch, 'push')
    os.makedirs(state)
    standin = subprocess.Popen([os.path.join(root, 'Tools/testing/push-standin'), state], stdout=subprocess.PIPE, text=True)
    children.append(standin)
    port = int(standin.stdout.readline().split()[-1])
    with open(os.path.join(root, 'BeaconMap/example-campus.yaml')) as f:
        site = f.read().replace('settings:', 'settings:\n  pushServices: [127.0.0.1]', 1)
    with open(os.path.join(scratch, 'campus.yaml'), 'w') as f:
        f.write(site)
    run('map', 'publish', os.path.join(scratch, 'campus.yaml'))
    n = a.subscriptions
    devices = [f'dev-{i}' for i in range(n + 1)]
    say(f'{n + 1} browsers subscribing at the stand-in…')
    with open(os.path.join(scratch, 'subscriptions.jsonl'), 'w') as f:
        for d in devices:
            s = get(f'http://127.0.0.1:{port}/subscribe/{d}')
            sid = hashlib.sha256(s['endpoint'].encode()).hexdigest()[:32]
            f.write(json.dumps({'path': f'devices/{d}/push/{sid}',
                                'data': {'endpoint': s['endpoint'], 'p256dh': s['keys']['p256dh'], 'auth': s['keys']['auth']}}) + '\n')
    run('db', 'import', os.path.join(scratch, 'subscriptions.jsonl'))
    server = subprocess.Popen([tracer, 'serve', '--store', store, '--bind', '127.0.0.1:0'],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    children.append(server)
    line = server.stdout.readline()
    assert line.startswith('serving'), line
    # The notifier's first run starts from now: give it a moment to listen.
    time.sleep(1)

    # The baseline: one device, one push.
    committed = flag(devices[:1], 'medium', 'one')
    got = wait_for(port, 1)
    one = max(x['at'] for x in got) - committed
    say(f'baseline: 1 push, {one * 1000:.0f} ms from the commit to the push taken')

    committed = flag(devices[1:], 'medium', 'all')
    got = wait_for(port, n + 1)
    taken = [x for x in got if x['name'] != devices[0]]
    last = max(x['at'] for x in taken) - committed
    first = min(x['at'] for x in taken) - committed
    refused = open(os.path.join(state, 'refused.jsonl')).read().count('\n') if os.path.exists(os.path.join(state, 'refused.jsonl')) else 0
    names = {x['name'] for x in taken}
    say(f'{n} browsers after one flagging: {len(names)} told ({len(taken)} pushes taken, {refused} refused by the stand-in), '
        f'the first {first * 1000:.0f} ms and the last {last:.2f} s after the commit ({len(taken) / last:.0f} pushes/s)')
    ok = len(names) == n and refused == 0 and all(x['payload'] == '{"type":"status"}' for x in taken)
    say('every one told, each push verified and decrypted' if ok else 'MISSING OR REFUSED PUSHES')
    sys.exit(0 if ok else 1)
finally:
    cleanup()
