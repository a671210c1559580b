#!/usr/bin/python3
"""Writes a simulated random site's radio truth into its map, as a perfect calibration would:
each kiosk's receiverOffset the opposite of its simulated receive error ("receivers"), and with
"radio" also the simulated walls' loss and path-loss exponent (everything the kiosks'
self-calibration fits; what it does fit is written by `tracer site calibration --write`, see
Tools/bench/fitted-radio). A diagnostic for Tools/bench/efficacy and Tools/bench/pair-model:
what knowing the radio would win.
Usage: known-radio.py SIMULATION-DIR receivers|radio"""
import json
import re
import sys

directory, what = sys.argv[1], sys.argv[2]
if what not in ("receivers", "radio") or len(sys.argv) != 3:
    sys.exit(f"known-radio.py: receivers or radio, not '{' '.join(sys.argv[2:])}'")
manifest = json.load(open(directory + "/manifest.json"))
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
