#!/usr/bin/python3
"""Makes signed test results for tracer's certificate verifier: issuer keys and certificates, a
trust list, and EU Digital COVID Certificates ("HC1:" + Base45 + zlib + COSE_Sign1 + CBOR) as QR
codes on rendered pages, some photographed, plus a manifest of what tracer should decide.

    Tools/testing/make_certificates.py OUTDIR [--today YYYY-MM-DD]

Writes OUTDIR/trust.pem (the two trusted issuers: one ES256, one PS256), OUTDIR/dcc-*.png|jpg,
OUTDIR/dcc-*.txt (each QR code's text) and OUTDIR/certificates.json, a JSON array of
    {"file", "expect": "accept"|"reject", "failed": [rule, ...], "collected": "YYYY-MM-DD" or null, "about"}
with the rules of tracer's certificate verifier: signature, expiry, covid, testKind, result, date.
Every key is made afresh on each run (nothing secret is kept in the repository); the holders'
names and dates of birth are made up, and tracer must never print or store them. Needs Debian's
python3-cryptography, python3-cbor2 and python3-qrcode, and ImageMagick's convert.
"""
import datetime as dt
import json
import os
import subprocess
import sys
import zlib

import cbor2
import qrcode
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

args = sys.argv[1:]
if not args or args[0] in ("-h", "--help"):
    print(__doc__, file=sys.stderr)
    sys.exit(2)
outdir = args[0]
today = dt.datetime.now(dt.timezone.utc).date()
if len(args) >= 3 and args[1] == "--today":
    today = dt.date.fromisoformat(args[2])
os.makedirs(outdir, exist_ok=True)
ENV = dict(os.environ, MAGICK_THREAD_LIMIT="1", OMP_NUM_THREADS="1", LC_ALL="C")
NOW = dt.datetime.combine(today, dt.time(12, 0), tzinfo=dt.timezone.utc)


def path(name):
    return os.path.join(outdir, name)


def issuer(name, key):
    subject = x509.Name([
        x509.NameAttribute(NameOID.COUNTRY_NAME, "NL"),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example Health Authority (test)"),
        x509.NameAttribute(NameOID.COMMON_NAME, name),
    ])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(NOW - dt.timedelta(days=365)).not_valid_after(NOW + dt.timedelta(days=365))
            .sign(key, hashes.SHA256()))
    der = cert.public_bytes(serialization.Encoding.DER)
    kid = hashes.Hash(hashes.SHA256())
    kid.update(der)
    return {"key": key, "cert": cert, "kid": kid.finalize()[:8]}


ES = issuer("DSC ES256 test", ec.generate_private_key(ec.SECP256R1()))
PS = issuer("DSC PS256 test", rsa.generate_private_key(public_exponent=65537, key_size=2048))
ROGUE = issuer("DSC not on the trust list", ec.generate_private_key(ec.SECP256R1()))
with open(path("trust.pem"), "wb") as f:
    for i in (ES, PS):
        f.write(i["cert"].public_bytes(serialization.Encoding.PEM))


def b45encode(data):
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:"
    out = []
    for i in range(0, len(data), 2):
        chunk = data[i:i + 2]
        if len(chunk) == 2:
            n = chunk[0] * 256 + chunk[1]
            c, n = n % 45, n // 45
            d, e = n % 45, n // 45
            out += [alphabet[c], alphabet[d], alphabet[e]]
        else:
            n = chunk[0]
            out += [alphabet[n % 45], alphabet[n // 45]]
    return "".join(out)


def hcert(result="260373001", collected=None, test_type="LP6464-4", group="t"):
    collected = collected or (NOW - dt.timedelta(days=1, hours=2))
    entry = {
        "tg": "840539006", "tt": test_type, "nm": "Example PCR", "sc": collected.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tr": result, "tc": "Northfield Testing Centre", "co": "NL", "is": "Ministry of Health Test",
        "ci": "URN:UVCI:01:NL:TEST0000001#X",
    }
    if group == "v":
        entry = {"tg": "840539006", "vp": "1119349007", "mp": "EU/1/20/1528", "ma": "ORG-100030215", "dn": 2,
                 "sd": 2, "dt": "2026-06-01", "co": "NL", "is": "Ministry of Health Test",
                 "ci": "URN:UVCI:01:NL:TEST0000002#Y"}
    return {"ver": "1.3.0", "nam": {"fn": "Proefpersoon", "gn": "Jan", "fnt": "PROEFPERSOON", "gnt": "JAN"},
            "dob": "1990-04-12", group: [entry]}


def sign(issuer_, claims, alg, tamper=None):
    protected = cbor2.dumps({1: alg, 4: issuer_["kid"]})
    payload = cbor2.dumps(claims)
    to_sign = cbor2.dumps(["Signature1", protected, b"", payload])
    key = issuer_["key"]
    if alg == -7:
        r, s = decode_dss_signature(key.sign(to_sign, ec.ECDSA(hashes.SHA256())))
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    else:
        signature = key.sign(to_sign, padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32), hashes.SHA256())
    if tamper:
        payload = cbor2.dumps(tamper(claims))
    cose = cbor2.dumps(cbor2.CBORTag(18, [protected, {}, payload, signature]))
    return "HC1:" + b45encode(zlib.compress(cose, 9))


def claims(h, expires=None):
    expires = expires or (NOW + dt.timedelta(days=2))
    return {1: "NL", 4: int(expires.timestamp()), 6: int((NOW - dt.timedelta(hours=20)).timestamp()), -260: {1: h}}


def positive_to_negative(c):
    c[-260][1]["t"][0]["tr"] = "260373001"
    return c


NEG = claims(hcert(result="260415000"))
CASES = [
    ("dcc-positive-es256.png", sign(ES, claims(hcert()), -7), "accept", [], 1,
     "PCR, detected, collected yesterday, ES256 by a trusted issuer"),
    ("dcc-positive-ps256.png", sign(PS, claims(hcert(test_type="LP217198-3")), -37), "accept", [], 1,
     "rapid antigen, detected, PS256 by a trusted issuer"),
    ("dcc-negative.png", sign(ES, NEG, -7), "reject", ["result"], 1, "PCR, not detected, validly signed"),
    ("dcc-tampered.png", sign(ES, claims(hcert(result="260415000")), -7, tamper=positive_to_negative), "reject",
     ["signature"], 1, "a negative whose result was changed to detected after signing"),
    ("dcc-unknown-issuer.png", sign(ROGUE, claims(hcert()), -7), "reject", ["signature"], 1,
     "a positive signed by a key not on the trust list"),
    ("dcc-expired.png", sign(ES, claims(hcert(), expires=NOW - dt.timedelta(days=1)), -7), "reject", ["expiry"], 1,
     "a positive whose certificate expired yesterday"),
    ("dcc-old.png", sign(ES, claims(hcert(collected=NOW - dt.timedelta(days=30)), expires=NOW + dt.timedelta(days=1)),
                         -7), "reject", ["date"], 30, "a positive collected 30 days ago"),
    ("dcc-vaccination.png", sign(ES, claims(hcert(group="v")), -7), "reject", ["result"], None,
     "a vaccination certificate, not a test"),
    ("dcc-nan-expiry.png", sign(ES, {**claims(hcert()), 4: float("nan")}, -7), "reject", ["signature"], None,
     "a positive validly signed whose expiry is NaN: malformed, never 'valid until '"),
]

# A page around each code: a header, the QR code, and printed words that the code overrules
# (the tampered one's page says POSITIVE: only the signature tells).
MAGICK_PAGE = ["-font", "DejaVu-Sans-Bold", "-pointsize", "34", "-fill", "black", "-annotate", "+70+90",
               "EU Digital COVID Certificate", "-font", "DejaVu-Sans", "-pointsize", "24", "-annotate", "+70+140",
               "Test certificate - scan the QR code to verify", "-annotate", "+70+1130",
               "Result printed on this page: POSITIVE (the QR code decides)"]
manifest = []


def qr_image(text, out):
    qr = qrcode.QRCode(error_correction=qrcode.constants.ERROR_CORRECT_Q, border=4, box_size=1)
    qr.add_data(text, optimize=0)
    qr.make(fit=True)
    matrix = qr.get_matrix()
    n = len(matrix)
    with open(out, "w") as f:
        f.write(f"P1\n{n} {n}\n")
        for row in matrix:
            f.write(" ".join("1" if c else "0" for c in row) + "\n")
    return n


def run(argv):
    r = subprocess.run(argv, env=ENV, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"make-certificates: {argv[0]} failed: {r.stderr.strip()}")


for name, text, expect, failed, days_ago, about in CASES:
    with open(path(name[:-4] + ".txt"), "w") as f:
        f.write(text + "\n")
    pbm = path(name[:-4] + ".pbm")
    qr_image(text, pbm)
    run(["convert", "-size", "1000x1200", "xc:white"] + MAGICK_PAGE
        + ["(", pbm, "-filter", "point", "-resize", "800x800", ")", "-geometry", "+100+200", "-composite",
           "-alpha", "off", "-strip", "-colorspace", "Gray", path(name)])
    os.remove(pbm)
    collected = (today - dt.timedelta(days=days_ago)).isoformat() if days_ago is not None else None
    manifest.append({"file": name, "expect": expect, "failed": failed, "collected": collected, "about": about})
    print(f"make-certificates: {name:<28} {expect}", file=sys.stderr)

# The positive photographed: rotated 5 degrees, in mild perspective, blurred, noisy, JPEG q60.
src = path("dcc-positive-es256.png")
warp = "0,0 14,8  %[fx:w-1],0 %[fx:w-1-18],6  0,%[fx:h-1] 4,%[fx:h-1-20]  %[fx:w-1],%[fx:h-1] %[fx:w-1-10],%[fx:h-1-8]"
run(["convert", src, "-bordercolor", "#5a5048", "-border", "60", "-background", "#5a5048",
     "-virtual-pixel", "background", "-distort", "Perspective", warp, "-rotate", "5", "+repage",
     "-modulate", "80", "-blur", "0x0.8", "-seed", "11", "-attenuate", "0.4", "+noise", "Gaussian",
     "-strip", "-quality", "60", path("dcc-photo-positive.jpg")])
manifest.append({"file": "dcc-photo-positive.jpg", "expect": "accept", "failed": [],
                 "collected": (today - dt.timedelta(days=1)).isoformat(),
                 "about": "dcc-positive-es256 photographed at 5 degrees: perspective, blur, noise, dim, JPEG q60"})
print("make-certificates: dcc-photo-positive.jpg       accept", file=sys.stderr)

# The positive as a small code (3.4 px a module) in the corner of a large scanned page: too fine
# to read at half size, so it is found by the full-size pass.
pbm = path("small.pbm")
qr_image(open(path("dcc-positive-es256.txt")).read().strip(), pbm)
run(["convert", "-size", "2400x3300", "xc:white", "-font", "DejaVu-Sans", "-pointsize", "40", "-fill", "black",
     "-annotate", "+150+200", "Laboratory report with a verification code", "(", pbm, "-filter", "point",
     "-resize", "330x330", ")", "-geometry", "+1900+2800", "-composite", "-alpha", "off", "-strip",
     "-colorspace", "Gray", path("dcc-small-on-scan.png")])
os.remove(pbm)
manifest.append({"file": "dcc-small-on-scan.png", "expect": "accept", "failed": [],
                 "collected": (today - dt.timedelta(days=1)).isoformat(),
                 "about": "dcc-positive-es256 as a 330 px code in the corner of a 2400x3300 scan"})
print("make-certificates: dcc-small-on-scan.png        accept", file=sys.stderr)

with open(path("certificates.json"), "w") as f:
    json.dump(manifest, f, indent=2)
    f.write("\n")
print(f"make-certificates: {len(manifest)} certificates, trust.pem and certificates.json in {outdir}", file=sys.stderr)
