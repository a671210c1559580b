'''Tools/bench/ocr's driver: `tracer verify` against the tesseract CLI (one OpenMP thread) on the
same pages in the same run, then a batch of 20 pages through one engine.

Usage: ocr.py TRACER TRACER_BENCH FIXTURES_DIR [--rounds 3]
'''
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

p = argparse.ArgumentParser()
p.add_argument('tracer')
p.add_argument('tracer_bench')
p.add_argument('fixtures')
p.add_argument('--rounds', type=int, default=3)
a = p.parse_args()

manifest = json.load(open(os.path.join(a.fixtures, 'manifest.json')))
pages = [os.path.join(a.fixtures, m['file']) for m in manifest
         if m['expect'] in ('accept', 'reject') and 'lowres' not in m['file']]
env1 = dict(os.environ, OMP_THREAD_LIMIT='1')


def timed(argv, env=None):
    t = time.monotonic()
    r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t, r.returncode


print(f'{"page":<40}{"tesseract CLI":>14}{"tracer verify":>15}{"ratio":>8}')
ratios = []
cli_all, ours_all = [], []
for page in pages:
    cli, ours = [], []
    for _ in range(a.rounds):
        t, _ = timed(['tesseract', page, 'stdout'], env1)
        cli.append(t)
        t, code = timed([a.tracer, 'verify', page])
        assert code in (0, 2, 3), f'{page}: tracer verify exited {code}'
        ours.append(t)
    c, o = statistics.median(cli), statistics.median(ours)
    cli_all.append(c)
    ours_all.append(o)
    ratios.append(o / c)
    print(f'{os.path.basename(page):<40}{c:>13.3f}s{o:>14.3f}s{o / c:>8.2f}', flush=True)
total = sum(ours_all) / sum(cli_all)
photographed = {os.path.join(a.fixtures, m['file']) for m in manifest if m.get('set') == 'photo'}
for label, chosen in (('the photographed set (sum)', True), ('the other pages (sum)', False)):
    c = sum(t for p, t in zip(pages, cli_all) if (p in photographed) == chosen)
    o = sum(t for p, t in zip(pages, ours_all) if (p in photographed) == chosen)
    print(f'{label:<40}{c:>13.3f}s{o:>14.3f}s{o / c:>8.2f}')
print(f'{"all pages (sum)":<40}{sum(cli_all):>13.3f}s{sum(ours_all):>14.3f}s{total:>8.2f}')
print(f'verification per page / tesseract CLI: {total:.2f}x over {len(pages)} pages, median of {a.rounds} '
      f'(worst page {max(ratios):.2f}x); target <= 1.2x (issue 17): {"met" if total <= 1.2 else "NOT met"}')

batch = [pages[i % len(pages)] for i in range(20)]
r = subprocess.run([a.tracer_bench, 'ocr'] + batch, capture_output=True, text=True)
print('batch of 20 with one engine: ' + r.stdout.strip())
