#!/usr/bin/python3
"""Writes a simulated random site's radio truth into its map, as a perfect calibration would:
each kiosk's receiverOffset the opposite of its simulated receive error ("receivers"), and with
"radio" also the simulated walls' loss and path-loss exponent (everything the kiosks'
self-calibration fits). With "fitted FIT" it writes what the kiosks' self-calibration fitted
instead (`tracer site calibration --json`'s output in the file FIT): each kiosk's fitted
receiverOffset (a kiosk heard by nobody and hearing nothing keeps none), the fitted walls' loss
and exponent. A diagnostic for Tools/bench/efficacy and Tools/bench/pair-model: what knowing the
radio would win, and what the fit does win, measured before building its use.
Usage: known-radio.py SIMULATION-DIR receivers|radio|fitted FIT"""
import json
import re
import sys

directory, what = sys.argv[1], sys.argv[2]
if what not in ("receivers", "radio", "fitted") or (what == "fitted") != (len(sys.argv) == 4):
    sys.exit(f"known-radio.py: receivers, radio or fitted FIT, not '{' '.join(sys.argv[2:])}'")
manifest = json.load(open(directory + "/manifest.json"))
if what == "fitted":
    fit = json.load(open(sys.argv[3]))
    offsets = {k["key"]: k["receiverOffset"] for k in fit["kiosks"] if k["heard"] + k["heardBy"] > 0}
    walls, exponent = fit["wallLoss"], fit["exponent"]
else:
    offsets = {k["anchor"]: -k["receiverError"] for k in manifest["kiosks"]}
    walls, exponent = manifest["wallLoss"], manifest["exponent"]
lines = []
for line in open(directory + "/map.yaml"):
    m = re.match(r"  - \{key: ([^,]+), kind: kiosk", line)
    if m and m.group(1) in offsets:
        line = line.rstrip().rstrip("}") + f", receiverOffset: {offsets[m.group(1)]:g}}}\n"
    lines.append(line)
if not lines[-1].startswith("  ") or not any(l.startswith("settings:") for l in lines):
    sys.exit(f"known-radio.py: {directory}/map.yaml does not end with its settings")
if what != "receivers":
    # A random site's map ends with its settings: the walls and exponent join them.
    lines.append(f"  wallLoss: {walls:g}\n  pathLossExponent: {exponent:g}\n")
open(directory + "/map.yaml", "w").write("".join(lines))
