#!/usr/bin/env python3
# The fit behind Tools/bench/pair-model: reads the evidence a run wrote (OUT/site-*.jsonl, with
# tracer evaluate's JSON beside each), fits the pair decision's logistic model, checks it site by
# site held out, sets the weights tracer ships beside it on the same evidence, and (WRITE "yes")
# writes Sources/TracerColocation/PairModel+Fitted.swift. Plain Python: no numpy needed.
# Usage: Tools/bench/pair-model.py OUT WRITE ORACLE  (run from the repository's root)
import glob, json, math, re, sys
out, write, fitted = sys.argv[1], sys.argv[2] == "yes", sys.argv[3] == "fitted"
names = ["constant", "best", "mean", "bestJoint", "roomMean", "roomHigh", "near", "pairs", "together", "low",
         "high", "gap", "common", "compared", "byPositions", "bestByPositions"]
rows = []
reporters = {}
for f in sorted(glob.glob(out + "/site-*.jsonl")):
    site = f.split("site-")[1].split(".")[0]
    reporters[site] = json.load(open(f.replace(".jsonl", ".json")))["reporters"]
    for l in open(f):
        o = json.loads(l)
        assert "trulyNear" not in names and isinstance(o["trulyNear"], bool), f"{f}: no truth per stretch"
        rows.append((site, o["reporter"], o["device"], [o[n] for n in names], 1.0 if o["trulyNear"] else 0.0, o["counted"]))
# Recall and precision by device as tracer evaluate counts them: a device is rightly flagged when
# it was truly near the reporter in any stretch; the true partners no stretch covers are misses
# whatever the threshold (tracer evaluate's count of them all is in its JSON).
truths, partners = {}, {}
for site, r, d, x, y, _ in rows:
    if y: truths.setdefault((site, r), set()).add(d)
for s in reporters:
    o = json.load(open(f"{out}/site-{s}.json"))["overall"]
    partners[s] = o["truePositives"] + o["falseNegatives"]
sites = sorted(reporters)
print(f"pair-model: {len(rows)} stretches of evidence on {len(sites)} sites, {sum(r[4] for r in rows) / max(len(rows), 1):.0%} truly near")

def solve(A, b):
    n = len(b)
    M = [A[i][:] + [b[i]] for i in range(n)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(M[r][c]))
        M[c], M[p] = M[p], M[c]
        for r in range(n):
            if r != c and M[r][c] != 0:
                f = M[r][c] / M[c][c]
                M[r] = [a - f * b for a, b in zip(M[r], M[c])]
    return [M[i][n] / M[i][i] for i in range(n)]

def fit(data, ridge=1.0):
    k = len(names)
    w = [0.0] * k
    for _ in range(30):
        g = [0.0] * k
        H = [[0.0] * k for _ in range(k)]
        for _, _, _, x, y, _ in data:
            z = sum(a * b for a, b in zip(w, x))
            p = 1 / (1 + math.exp(-max(-30, min(30, z))))
            s = p * (1 - p)
            for i in range(k):
                g[i] += (p - y) * x[i]
                xi = s * x[i]
                Hi = H[i]
                for j in range(i, k):
                    Hi[j] += xi * x[j]
        for i in range(k):
            for j in range(i):
                H[i][j] = H[j][i]
            if i:
                g[i] += ridge * w[i]
                H[i][i] += ridge
        step = solve(H, g)
        w = [a - b for a, b in zip(w, step)]
        if max(abs(s) for s in step) < 1e-7:
            break
    return w

def chance(w, x):
    return 1 / (1 + math.exp(-max(-30, min(30, sum(a * b for a, b in zip(w, x))))))

# Site by site: fitted on the others, judged on the one left out.
held = []
for s in sites:
    w = fit([r for r in rows if r[0] != s])
    held += [(r, chance(w, r[3])) for r in rows if r[0] == s]
def reliability(judged, title):
    print(f"\n{title} — chance given → truly near:")
    print("| chance | stretches | given (mean) | truly near |")
    print("|---|---|---|---|")
    for b in range(10):
        sel = [(r, p) for r, p in judged if min(9, int(p * 10)) == b]
        if sel:
            print(f"| {b / 10:.1f}–{(b + 1) / 10:.1f} | {len(sel)} | {sum(p for _, p in sel) / len(sel):.2f} | {sum(r[4] for r, _ in sel) / len(sel):.2f} |")

def thresholds(judged, title):
    print(f"\n{title} — flagged from each threshold where a pair counts as near on its own; recall and precision by")
    print("device, a device right when a stretch of it is truly near (stricter than tracer evaluate, which counts a device near")
    print("the reporter anywhere, at any time, as right); 'none': every stretch where a pair counts, as before the decision:")
    print("| threshold | mean recall | mean precision | least recall | least precision |")
    print("|---|---|---|---|---|")
    for t in [0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5]:
        R, P = [], []
        for s in sites:
            tp = fp = 0
            for rep in reporters[s]:
                truth = truths.get((s, rep), set())
                flagged = {r[2] for r, p in judged if r[0] == s and r[1] == rep and r[5] and p >= t}
                tp += len(truth & flagged); fp += len(flagged - truth)
            R.append(tp / max(partners[s], 1)); P.append(tp / max(tp + fp, 1))
        print(f"| {'none' if t == 0 else f'{t:.2f}'} | {sum(R) / len(R):.3f} | {sum(P) / len(P):.3f} | {min(R):.3f} | {min(P):.3f} |")

reliability(held, "Held out site by site")
thresholds(held, "Held out site by site")
# The weights tracer ships, on the same evidence: what a new fit is weighed against before it is
# written (they were fitted on these seeds, perhaps with other code, so they are not held out).
shipped = [float(v) for v in re.findall(r"-?\d+\.\d+", open("Sources/TracerColocation/PairModel+Fitted.swift").read().split("weights: [")[1])]
assert len(shipped) == len(names), "PairModel+Fitted.swift: not one weight a feature"
reliability([(r, chance(shipped, r[3])) for r in rows], "The shipped weights on this evidence")
thresholds([(r, chance(shipped, r[3])) for r in rows], "The shipped weights on this evidence")
w = fit(rows)
print("\nweights: " + ", ".join(f"{n} {v:+.4f}" for n, v in zip(names, w)))
if write:
    near = sum(r[4] for r in rows) / max(len(rows), 1)
    lines = [f"{v:.4f}" for v in w]
    body = ",\n".join("        " + ", ".join(lines[i:i + 8]) for i in range(0, len(lines), 8))
    ranged = " ranged under their kiosks' own fit of the first hour" if fitted else ""
    open("Sources/TracerColocation/PairModel+Fitted.swift", "w").write(
        f"// Written by Tools/bench/pair-model{' --fitted-radio' if fitted else ''}: the pair decision's weights, fitted on random sites\n"
        f"// {sites[0]}–{sites[-1]}{ranged} ({len(reporters[sites[0]])} reporters each; {len(rows):,} stretches of\n"
        f"// evidence, {near:.0%} truly near). Do not edit by hand: run the fit again.\n\n"
        "extension PairModel {\n"
        "    public static let fitted = PairModel(weights: [\n" + body + ",\n    ])\n}\n")
    print("pair-model: wrote Sources/TracerColocation/PairModel+Fitted.swift (rebuild tracer to use it)")