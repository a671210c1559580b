#!/usr/bin/env python3
"""Makes Tests/Fixtures/dgc-testdata/cases.json from the EU member states' DCC test data.

Usage: Tools/testing/trim_dgc_testdata.py RAW_DIR [OUT_DIR]

RAW_DIR is a copy of the public eu-digital-green-certificates/dgc-testdata repository (Apache
License 2.0), laid out COUNTRY/.../2DCode/raw/N.json. Each case keeps what a verifier needs: the
QR's text (PREFIX), the signer's certificate (TESTCTX.CERTIFICATE), the clock its expectations
hold at (TESTCTX.VALIDATIONCLOCK), the expectations and the description; the QR picture and the
intermediate layers are left out (they are the same certificate again). LICENSE and NOTICE are
copied beside the cases.
"""
import json
import pathlib
import shutil
import sys


def main() -> None:
    raw = pathlib.Path(sys.argv[1])
    out = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else pathlib.Path("Tests/Fixtures/dgc-testdata")
    out.mkdir(parents=True, exist_ok=True)
    cases = []
    for f in sorted(raw.glob("*/**/*.json")):
        d = json.loads(f.read_text())
        if not isinstance(d, dict) or "PREFIX" not in d:
            continue
        ctx = d.get("TESTCTX", {})
        cases.append({
            "file": str(f.relative_to(raw)),
            "prefix": d["PREFIX"],
            "certificate": ctx.get("CERTIFICATE"),
            "clock": ctx.get("VALIDATIONCLOCK"),
            "description": ctx.get("DESCRIPTION") or "",
            "expected": d.get("EXPECTEDRESULTS", {}),
        })
    (out / "cases.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")
    for name in ("LICENSE", "NOTICE"):
        if (raw / name).exists():
            shutil.copy(raw / name, out / name)
    print(f"{len(cases)} cases from {raw} into {out / 'cases.json'}")


if __name__ == "__main__":
    main()
