'''Tools/bench/page's driver: a new link opened in a new headless Chromium, N times.

Usage: page.py TRACER [--runs 5]
'''
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

p = argparse.ArgumentParser()
p.add_argument('tracer')
p.add_argument('--runs', type=int, default=5)
a = p.parse_args()
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
scratch = tempfile.mkdtemp(prefix='tracer-bench-page-')
store = os.path.join(scratch, 's.sqlite')
server = None
try:
    run = lambda *args: subprocess.run([a.tracer, *args, '--store', store], check=True, capture_output=True, text=True).stdout
    run('map', 'publish', os.path.join(root, 'BeaconMap/example-campus.yaml'))
    # A status with three exposures to show, for a badge's iBeacon id (a card names one the site knows).
    device = 'f7826da6-4fa2-4e98-8024-bc5b71e0893e:1:7'
    # Of the day before the run: inside the site's 14 days, whatever the day it runs (fixed days
    # pass the retention period, and the server purges them before the page is measured).
    day = int(time.time()) - 86400
    for i in range(3):
        run('db', 'set', f'devices/{device}/exposures/r{i}-kiosk-lab',
            json.dumps({'reportId': f'r{i}', 'beaconKey': 'kiosk-lab', 'from': {'__time__': day + i * 3600},
                        'to': {'__time__': day + 600 + i * 3600}, 'overlapSeconds': 600, 'separation': {'min': 0.5, 'max': 2.5}}))
    run('db', 'set', f'devices/{device}', json.dumps({'status': 'exposed', 'risk': 'high', 'exposureCount': 3}))
    server = subprocess.Popen([a.tracer, 'serve', '--store', store, '--bind', '127.0.0.1:0'],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline()
    base = line.split(' on ')[1].split('/ ')[0]
    measure = ("document.body.dataset.firstStatusMs && JSON.stringify({ms: +document.body.dataset.firstStatusMs, "
               "bytes: performance.getEntriesByType('navigation')[0].encodedBodySize + performance.getEntriesByType('resource')"
               ".filter(e => !e.name.includes('/v1/watch')).reduce((n, e) => n + e.encodedBodySize, 0), "
               "resources: performance.getEntriesByType('resource').map(e => e.name.replace(location.origin, ''))})")
    results = []
    for i in range(a.runs):
        link = run('token', 'create', '--role', 'device', '--device', device, '--link', base).strip()
        shot = os.path.join(scratch, f'page-{i}.png')
        out = subprocess.run(['/usr/bin/python3', os.path.join(root, 'Tools/testing/browser.py'), link, '--screenshot', shot,
                              '--width', '390', '--height', '844', '--ready', measure, '--timeout', '30'],
                             capture_output=True, text=True)
        outcome = json.loads(out.stdout.strip().splitlines()[-1])
        assert outcome['ready'], out.stdout
        results.append(json.loads(outcome['value']))
    ms = [r['ms'] for r in results]
    print(f"fetched before the first status: {', '.join(r for r in ['/me'] + results[0]['resources'] if 'watch' not in r)}")
    print(f"page weight to the first status: {results[0]['bytes']:,} bytes (uncompressed)")
    print(f"time from opening the link to the status on screen: median {statistics.median(ms):.0f} ms "
          f"(runs: {', '.join(f'{m:.0f}' for m in ms)})")
finally:
    if server and server.poll() is None:
        server.terminate()
        server.wait(10)
    shutil.rmtree(scratch, ignore_errors=True)
