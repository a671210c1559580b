#!/usr/bin/python3
"""Renders test-result images for the OCR verifier (`tracer verify`: is this photographed test
result a recent POSITIVE COVID-19 test?) plus a manifest of what the verifier should say.

    Tools/testing/make_fixtures.py OUTDIR [--today YYYY-MM-DD]      # default today: `date -u +%F`
    Tools/testing/make_fixtures.py OUTDIR --only lab-pcr-positive.png  # one page (and its manifest entry)

Writes OUTDIR/*.png|jpg|tiff|webp|... and OUTDIR/manifest.json, a JSON array of
    {"file": "name.png", "expect": "accept"|"hold"|"reject"|"error", "failed": ["rule", ...],
     "collected": "YYYY-MM-DD" or null, "about": "one line", "set": "photo" (the photographed set only)}
Rule names: covid, testKind, result, date, confidence ("error" = bad input, failed = []; "hold" =
doubtful: every failed rule is one a person could overrule, and a reviewing site holds it).
Dates on the pages are relative to --today; the output is deterministic for a given --today
(fixed noise seed, no timestamps in the files). Needs ImageMagick 6 `convert` with the DejaVu
fonts, and Debian's /usr/bin/python3 (the standard library only). One progress line per file
goes to stderr.
"""
import datetime as dt
import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

if shutil.which("convert") is None:
    print("make-fixtures: ImageMagick's 'convert' is not installed (apt-get install imagemagick)", file=sys.stderr)
    sys.exit(1)


def usage(msg=None):
    if msg:
        print(f"make-fixtures: {msg}", file=sys.stderr)
    print("usage: Tools/testing/make_fixtures.py OUTDIR [--today YYYY-MM-DD] [--only NAME]", file=sys.stderr)
    sys.exit(2)


args = sys.argv[1:]
outdir = None
values = {"--today": None, "--only": None}   # the options that take a value: --X V or --X=V
i = 0
while i < len(args):
    a = args[i]
    name = a.split("=", 1)[0]
    if a in ("-h", "--help"):
        usage()
    elif name in values:
        if "=" in a:
            values[name] = a.split("=", 1)[1]
        elif i + 1 < len(args):
            values[name] = args[i + 1]
            i += 1
        else:
            usage(f"{name} needs a value")
    elif a.startswith("-"):
        usage(f"unknown option {a}")
    elif outdir is None:
        outdir = a
    else:
        usage("only one OUTDIR")
    i += 1
if outdir is None:
    usage("OUTDIR is required")
today, only = values["--today"], values["--only"]
try:
    TODAY = dt.date.fromisoformat(today) if today else dt.datetime.now(dt.timezone.utc).date()
except ValueError:
    usage(f"--today must be YYYY-MM-DD, got {today!r}")
os.makedirs(outdir, exist_ok=True)

ENV = dict(os.environ, MAGICK_THREAD_LIMIT="1", OMP_NUM_THREADS="1", LC_ALL="C")
START = time.monotonic()

MON = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
MONTH = ["January", "February", "March", "April", "May", "June", "July", "August",
         "September", "October", "November", "December"]


def day(n):
    return TODAY + dt.timedelta(days=n)


def iso(d):        # 2026-11-20
    return d.isoformat()


def dmy(d):        # 20/11/2026
    return f"{d.day:02d}/{d.month:02d}/{d.year}"


def dmon(d):       # 20 Nov 2026
    return f"{d.day} {MON[d.month - 1]} {d.year}"


def longus(d):     # November 20, 2026
    return f"{MONTH[d.month - 1]} {d.day}, {d.year}"


def path(name):
    return os.path.join(outdir, name)


def progress(name, what):
    print(f"make-fixtures: {name:<40} {what}  ({time.monotonic() - START:.1f}s)", file=sys.stderr, flush=True)


# 8-bit, no alpha, no timestamps or other varying metadata in the written files.
NOMETA = ["-alpha", "off", "-depth", "8", "-strip", "+set", "date:create", "+set", "date:modify", "+set", "date:timestamp",
          "-define", "png:exclude-chunks=date,time"]


def run(argv):
    r = subprocess.run(argv, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SystemExit(f"make-fixtures: {' '.join(argv[:1])} failed ({r.returncode}): {r.stderr.strip()}")


def esc(text):
    # -annotate expands %-escapes; a leading @ would read a file.
    return text.replace("%", "%%")


# ---------------------------------------------------------------- page layout
SANS, BOLD, MONO, SERIF = "DejaVu-Sans", "DejaVu-Sans-Bold", "DejaVu-Sans-Mono", "DejaVu-Serif"


class Page:
    """A white page laid out top to bottom; each line is drawn with -annotate."""

    def __init__(self, width=1280, bg="white", fg="black", margin=80, top=70, body=26):
        self.w, self.bg, self.fg, self.margin, self.y, self.body = width, bg, fg, margin, top, body
        self.ops = []

    def text(self, s, size=None, font=SANS, fill=None, x=None, gap=1.55):
        self.row([(x if x is not None else self.margin, s)], size, font, fill, gap)

    def row(self, cells, size=None, font=SANS, fill=None, gap=1.55):
        size = size or self.body
        base = self.y + round(size * 0.95)
        for x, s in cells:
            self.ops += ["-font", font, "-pointsize", str(size), "-fill", fill or self.fg,
                         "-annotate", f"+{x}+{base}", esc(s)]
        self.y += round(size * gap)

    def rule(self, color="#9a9a9a", pad=14, thick=2):
        self.y += pad
        self.ops += ["-fill", color, "-draw",
                     f"rectangle {self.margin},{self.y} {self.w - self.margin},{self.y + thick - 1}"]
        self.y += thick + pad + 6

    def gap(self, px):
        self.y += px

    def argv(self, out, bottom=70):
        h = self.y + bottom
        return ["convert", "-size", f"{self.w}x{h}", f"xc:{self.bg}"] \
            + self.ops + NOMETA + [out]


# ---------------------------------------------------------------- page contents
def lab_report(result="positive", collected=None, reported=None, also_collected=None):
    """Northfield's RT-PCR report. collected/reported: date objects, or None to leave them out;
    also_collected: a second collection date further down (a page that disagrees with itself)."""
    p = Page()
    p.text("Northfield Clinical Laboratory", 42, BOLD)
    p.text("1200 Harbour Road, Northfield  -  Tel 0100 555 0142  -  Accredited lab no. 9999",
           20, fill="#444444")
    p.rule()
    p.text("SARS-CoV-2 RT-PCR", 34, BOLD)
    p.gap(6)
    c2 = 700
    p.row([(80, "Name: A. Sample"), (c2, "Patient ID: NCL-000-4417")])
    p.row([(80, "Date of birth: 1990-04-12"), (c2, "Sex: F")])
    if collected is not None:
        p.row([(80, f"Collected: {iso(collected)} 09:40"), (c2, "Specimen: Nasopharyngeal swab")])
    else:
        p.row([(80, "Specimen: Nasopharyngeal swab"), (c2, "Requested by: Dr. K. Demo")])
    if reported is not None:
        p.row([(80, f"Reported: {iso(reported)} 16:12"), (c2, "Lab no.: 26-318-0457")])
    else:
        p.row([(80, "Lab no.: 26-318-0457"), (c2, "Ward: Outpatients")])
    if also_collected is not None:
        p.row([(80, f"Sample date: {dmon(also_collected)}"), (c2, "Container: VTM tube")])
    p.rule()
    p.row([(80, "Test"), (560, "Result")], 24, BOLD)
    row = "DETECTED" if result == "positive" else "NOT DETECTED"
    p.row([(80, "SARS-CoV-2 RNA"), (560, row)], 28)
    p.rule()
    if result == "positive":
        p.text("Result: POSITIVE", 32, BOLD)
        p.text("Reference range: Not Detected")
        p.text("Internal positive control: passed")
        p.text("A negative result does not rule out infection.")
    else:
        p.text("Result: NEGATIVE", 32, BOLD)
        p.text("Reference range: Not Detected")
        p.text("Positive control: passed")
        p.text("A positive result indicates the presence of SARS-CoV-2 RNA.")
        p.text("A negative result does not rule out infection.")
    p.gap(20)
    p.text("Authorised by: Dr. J. Placeholder, Clinical Scientist", 22, fill="#333333")
    return p


def lab_not_detected_many_positive():
    p = Page()
    p.text("Riverside Diagnostics", 42, BOLD)
    p.text("COVID-19 Test Report", 30, BOLD)
    p.rule()
    p.text("Patient: B. Example          DOB: 1985-07-03")
    p.text(f"Sample date: {dmy(day(-1))}")
    p.text("Test: SARS-CoV-2 PCR (nasal and throat swab)")
    p.rule()
    p.text("SARS-CoV-2 PCR: Not Detected", 32, BOLD)
    p.gap(6)
    p.text("Positive control: passed")
    p.text("Negative control: passed")
    p.text("Assay positive percent agreement: 97.1%")
    p.text("The positive predictive value of any test depends on prevalence.")
    p.text("If you have symptoms and a positive lateral flow result, contact your doctor.")
    p.text("A positive result would mean SARS-CoV-2 RNA was found in the sample.")
    return p


def antigen_certificate(result_line, collected, fmt=dmy, extra=()):
    p = Page(margin=90)
    p.text("COVID-19 Rapid Antigen Test Certificate", 40, BOLD)
    p.text("Issued by: Harbourside Pharmacy Testing Point (fictitious)", 22, fill="#444444")
    p.rule()
    p.text("Name: C. Placeholder")
    p.text("Date of birth: 14/02/1978")
    p.text("Document no.: HPT-2026-004812")
    p.text("Test device: SARS-CoV-2 antigen lateral flow (nasal swab)")
    p.text(f"Sample collected: {fmt(collected)} 14:05")
    p.rule()
    p.text(result_line, 32, BOLD)
    for line in extra:
        p.text(line)
    p.gap(10)
    p.text(f"This certificate was issued on {fmt(collected)}.", 22, fill="#333333")
    p.text("Please follow local public health guidance.", 22, fill="#333333")
    return p


def unrelated_invoice():
    p = Page(margin=90)
    p.text("Brightwater Energy Ltd", 42, BOLD, fill="#1d3f6e")
    p.text("Electricity bill - Invoice", 30, BOLD)
    p.rule()
    p.text("Customer: E. Imaginary, 7 Orchard Lane, Northfield")
    p.text("Account number: 4417 0091 2231")
    p.text(f"Invoice date: {iso(day(-3))}")
    p.text(f"Billing period: {dmon(day(-35))} - {dmon(day(-5))}")
    p.rule()
    p.row([(90, "Previous balance"), (900, "42.10")])
    p.row([(90, f"Payment received {dmon(day(-20))}"), (900, "-42.10")])
    p.row([(90, "Charges this period (312 kWh)"), (900, "37.85")])
    p.row([(90, "Credit applied"), (900, "-50.25")])
    p.rule()
    p.text("Your account has a positive balance of 12.40 GBP.", 28, BOLD)
    p.text("No payment is needed. Meter reading: 018423 (actual).")
    return p


def flu_positive():
    p = Page()
    p.text("Eastgate Walk-in Clinic", 42, BOLD)
    p.text("Influenza A/B Rapid Antigen Test", 32, BOLD)
    p.rule()
    p.text("Patient: D. Fictional          DOB: 2001-09-30")
    p.text("Specimen: nasal swab")
    p.text(f"Collected: {iso(day(-1))} 11:20")
    p.rule()
    p.text("Influenza type: A", 28)
    p.text("Result: Positive", 32, BOLD)
    p.gap(6)
    p.text("Antiviral treatment may be offered within 48 hours of symptom onset.")
    p.text("Rest, drink fluids and stay home until you feel better.")
    return p


def no_test_kind_positive():
    p = Page()
    p.text("Westbrook Health Centre", 42, BOLD)
    p.text("Coronavirus (COVID-19) test result", 32, BOLD)
    p.rule()
    p.text("Patient: F. Madeup          DOB: 1969-12-01")
    p.text(f"Sample taken: {dmon(day(-2))}")
    p.rule()
    p.text("Result: Positive", 32, BOLD)
    p.gap(6)
    p.text("Please stay at home and avoid contact with other people.")
    p.text("Tell the people you live with about this result.")
    return p


def sms(collected, dark=False):
    w, h = 720, 1280
    bg, fg, sub = ("#111111", "#eeeeee", "#8e8e93") if dark else ("#f2f2f2", "#111111", "#6b6b6b")
    bubble = "#2c2c2e" if dark else "#ffffff"
    bar = "#1c1c1e" if dark else "#e4e4e4"
    date = longus(collected) if dark else dmon(collected)
    msg = (f"NHS Test and Trace: Your coronavirus (COVID-19) PCR test taken on "
           f"{date.replace(' ', chr(0xA0))} is positive. You must self-isolate.")
    lines = [ln.replace(chr(0xA0), " ") for ln in textwrap.wrap(msg, 32)]
    ops = []

    def t(x, y, s, size=28, font=SANS, fill=fg):
        ops.extend(["-font", font, "-pointsize", str(size), "-fill", fill, "-annotate", f"+{x}+{y}", esc(s)])

    ops += ["-fill", bar, "-draw", "rectangle 0,0 719,150"]
    t(36, 44, "10:05", 24, BOLD)
    t(560, 44, "4G  87%", 22)
    t(30, 120, "<", 36, fill="#0a84ff")
    t(300, 118, "NHS", 34, BOLD)
    t(300 - 24, 190, "Text Message", 20, fill=sub)
    line_h = 42
    top, left = 230, 40
    bottom = top + 36 + line_h * len(lines)
    ops += ["-fill", bubble, "-draw", f"roundrectangle {left},{top} {left + 600},{bottom} 30,30"]
    y = top + 20 + 30
    for ln in lines:
        t(left + 26, y, ln, 28)
        y += line_h
    t(left + 8, bottom + 34, "Delivered 10:02", 18, fill=sub)
    ops += ["-fill", bar, "-draw", "rectangle 0,1170 719,1279",
            "-fill", bubble, "-draw", "roundrectangle 30,1190 690,1250 28,28"]
    t(60, 1232, "Text Message", 24, fill=sub)
    return ["convert", "-size", f"{w}x{h}", f"xc:{bg}"] + ops


# ---------------------------------------------------------------- bad inputs
def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def write_bomb(out, side=20000):
    # 1-bit greyscale side x side: 50 MB of pixels in a ~50 KB valid PNG.
    comp = zlib.compressobj(9)
    row = b"\x00" + b"\xff" * ((side + 7) // 8)
    idat = b"".join(comp.compress(row) for _ in range(side)) + comp.flush()
    with open(out, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(png_chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)))
        f.write(png_chunk(b"IDAT", idat))
        f.write(png_chunk(b"IEND", b""))


# ---------------------------------------------------------------- the fixtures
manifest = []


def add(file, expect, failed, collected, about):
    manifest.append({"file": file, "expect": expect, "failed": failed,
                     "collected": iso(collected) if collected else None, "about": about})


jobs1 = []   # (name, argv) rendered from scratch
jobs2 = []   # derived from stage-1 files


def page(name, p):
    jobs1.append((name, p.argv(path(name))))


page("lab-pcr-positive.png", lab_report("positive", day(-2), day(-1)))
add("lab-pcr-positive.png", "accept", [], day(-2),
    "Lab RT-PCR report, SARS-CoV-2 RNA DETECTED, Result: POSITIVE; collected ISO date+time, DOB 1990 must not count")

page("lab-pcr-positive-two-dates.png", lab_report("positive", day(-2), day(-1), also_collected=day(-5)))
add("lab-pcr-positive-two-dates.png", "hold", ["date"], day(-2),
    "Positive RT-PCR report giving two collection dates three days apart: doubtful, for the health team")

page("lab-pcr-negative.png", lab_report("negative", day(-1), day(0)))
add("lab-pcr-negative.png", "reject", ["result"], day(-1),
    "Same lab layout, NOT DETECTED / Result: NEGATIVE; disclaimers mention 'positive'")

page("antigen-certificate-positive.png",
     antigen_certificate("Test result: Positive", day(-1), dmy))
add("antigen-certificate-positive.png", "accept", [], day(-1),
    "Rapid antigen certificate, Test result: Positive, sample collected DD/MM/YYYY 14:05")

jobs1.append(("sms-positive-light.png", sms(day(-1), dark=False) + NOMETA + [path("sms-positive-light.png")]))
add("sms-positive-light.png", "accept", [], day(-1),
    "Phone screenshot, light mode: NHS text, COVID-19 PCR test taken on 'D Mon YYYY' is positive")

jobs1.append(("sms-positive-dark.png", sms(day(-1), dark=True) + NOMETA + [path("sms-positive-dark.png")]))
add("sms-positive-dark.png", "accept", [], day(-1),
    "Phone screenshot, dark mode (light text on #111): PCR test taken on 'Month D, YYYY' is positive")

page("lab-not-detected-many-positive.png", lab_not_detected_many_positive())
add("lab-not-detected-many-positive.png", "reject", ["result"], day(-1),
    "SARS-CoV-2 PCR: Not Detected; the word 'positive' appears six times in controls/disclaimers")

page("lab-pcr-positive-old.png", lab_report("positive", day(-30), day(-29)))
add("lab-pcr-positive-old.png", "reject", ["date"], day(-30),
    "Positive RT-PCR report collected 30 days ago")

page("lab-pcr-positive-future.png", lab_report("positive", day(5), day(6)))
add("lab-pcr-positive-future.png", "reject", ["date"], day(5),
    "Positive RT-PCR report collected 5 days in the future")

page("lab-pcr-positive-nodate.png", lab_report("positive", None, None))
add("lab-pcr-positive-nodate.png", "reject", ["date"], None,
    "Positive RT-PCR report whose only date is the date of birth")

page("antigen-inconclusive.png",
     antigen_certificate("Result: INCONCLUSIVE - please repeat the test", day(-1), dmy))
add("antigen-inconclusive.png", "reject", ["result"], day(-1),
    "Rapid antigen certificate, Result: INCONCLUSIVE - please repeat the test")

page("antigen-invalid.png",
     antigen_certificate("Result: Invalid", day(-2), dmon,
                         ["The control line did not appear.", "Please take a new test with a new kit."]))
add("antigen-invalid.png", "reject", ["result"], day(-2),
    "Rapid antigen certificate, Result: Invalid (no control line); dates as 'D Mon YYYY'")

page("unrelated-invoice.png", unrelated_invoice())
add("unrelated-invoice.png", "reject", ["covid", "testKind", "result"], None,
    "Electricity invoice with several dates and 'positive balance'; nothing about a test")

page("flu-positive.png", flu_positive())
add("flu-positive.png", "reject", ["covid"], day(-1),
    "Influenza A/B rapid antigen test, Result: Positive, collected yesterday; no COVID mention")

page("covid-positive-no-test-kind.png", no_test_kind_positive())
add("covid-positive-no-test-kind.png", "reject", ["testKind"], day(-2),
    "COVID-19 test result: Positive, recent sample date, but no PCR/antigen/NAAT/lateral flow/rapid")

# Derived images (stage 2).
src = path("lab-pcr-positive.png")
jobs2.append(("photo-pcr-positive.jpg", [
    "convert", src,
    "(", "+clone", "-fill", "#f1e9d6", "-colorize", "100", ")", "-compose", "Multiply", "-composite",
    "-compose", "Over", "-bordercolor", "#f1e9d6", "-border", "12",
    "-bordercolor", "#4a3f35", "-border", "70",
    "-background", "#4a3f35", "-virtual-pixel", "background",
    "-distort", "Perspective",
    "0,0 18,10  %[fx:w-1],0 %[fx:w-9],24  0,%[fx:h-1] 4,%[fx:h-20]  %[fx:w-1],%[fx:h-1] %[fx:w-22],%[fx:h-1]",
    "-rotate", "3", "+repage",
    "-blur", "0x0.8", "-seed", "7", "-attenuate", "0.3", "+noise", "Gaussian",
    ] + NOMETA + ["-quality", "70", path("photo-pcr-positive.jpg")]))
add("photo-pcr-positive.jpg", "accept", [], day(-2),
    "lab-pcr-positive photographed: tinted paper, slight perspective, rotated 3 deg, blur, noise, JPEG q70")

jobs2.append(("lowres-pcr-positive.png",
              ["convert", src, "-resize", "35%", "-blur", "0x1.5"] + NOMETA + [path("lowres-pcr-positive.png")]))
add("lowres-pcr-positive.png", "reject", ["confidence", "image"], day(-2),
    "lab-pcr-positive downscaled to 35% (body text ~9 px high) and blurred 0x1.5: unreadable, and said to be blurred")

# Pictures nobody could read, each refused with what is wrong with it (the `image` rule).
jobs2.append(("grainy-pcr-positive.jpg",
              ["convert", src, "-seed", "7", "-attenuate", "3", "+noise", "Gaussian"] + NOMETA +
              ["-quality", "90", path("grainy-pcr-positive.jpg")]))
add("grainy-pcr-positive.jpg", "reject", ["image"], day(-2),
    "lab-pcr-positive under heavy sensor noise (a photo in the dark at high ISO): unreadable, said to be grainy")
jobs2.append(("dark-pcr-positive.jpg",
              ["convert", src, "-level", "0%,100%,0.5", "-modulate", "20"] + NOMETA +
              ["-quality", "90", path("dark-pcr-positive.jpg")]))
add("dark-pcr-positive.jpg", "reject", ["image"], day(-2),
    "lab-pcr-positive photographed with almost no light: unreadable, said to be too dark")

jobs2.append(("lab-pcr-positive.tiff",
              ["convert", src, "-compress", "LZW"] + NOMETA + [path("lab-pcr-positive.tiff")]))
add("lab-pcr-positive.tiff", "accept", [], day(-2), "lab-pcr-positive as TIFF (LZW)")

webp_ok = subprocess.run(["convert", "-list", "format"], env=ENV, capture_output=True, text=True).stdout
webp_ok = any(len(f) > 2 and f[0].rstrip("*") == "WEBP" and "w" in f[2]
              for f in (l.split() for l in webp_ok.splitlines()))
WEBP = "antigen-certificate-positive.webp"
if webp_ok:
    jobs2.append((WEBP, ["convert", path("antigen-certificate-positive.png"), "-quality", "90"]
                  + NOMETA + [path(WEBP)]))
    add(WEBP, "accept", [], day(-1), "antigen-certificate-positive as WebP (lossy q90)")

jobs2.append(("wrong-extension.png",
              ["convert", path("sms-positive-light.png")] + NOMETA + ["gif:" + path("wrong-extension.png")]))
add("wrong-extension.png", "error", [], None,
    "A GIF named .png (content: the accepted light SMS); only PNG, JPEG, TIFF, WebP are accepted")


# The photographed set (issue 17): each readable page as a phone photographs it, at 2-8 degrees
# either way, each with its own mix of what phone photos suffer: the page's edges in mild
# perspective on a darker ground, blur, sensor noise, JPEG at quality 30-50, dim light. The
# positives are judged as a share accepted (the aim: 95%; OCRFixtureTests holds the floor reached
# so far), the rest one by one (none accepted), so each entry says "set": "photo".
PHOTO_ANGLES = [-8, -6, -4, -2, 2, 4, 6, 8]


def photograph(src, out, angle, k):
    """`src` photographed: rotated `angle` degrees, with the k-th mix of degradations."""
    blur = ["0x0.6", "0x0.9", "0x1.1", "0x0.8"][k % 4]
    noise = ["0.3", "0.5", "0.4", "0.6"][k % 4]
    quality = ["50", "40", "30", "45"][k % 4]
    light = [[], ["-modulate", "70"], ["-level", "0%,100%,0.8"], ["-modulate", "60", "-level", "8%,100%"]][k % 4]
    # Mild perspective: each corner pulled in by a few pixels, one side of the page more than the
    # other (it was further from the lens).
    a, b, c, d, e, f, g, h = [(14, 8, 4, 20, 4, 6, 16, 24), (4, 16, 18, 6, 20, 22, 2, 8),
                              (18, 4, 6, 12, 10, 18, 4, 4), (6, 6, 20, 18, 8, 4, 22, 16)][k % 4]
    warp = (f"0,0 {a},{b}  %[fx:w-1],0 %[fx:w-1-{c}],{d}  "
            f"0,%[fx:h-1] {e},%[fx:h-1-{f}]  %[fx:w-1],%[fx:h-1] %[fx:w-1-{g}],%[fx:h-1-{h}]")
    return ["convert", src,
            "(", "+clone", "-fill", "#f3ecdc", "-colorize", "100", ")", "-compose", "Multiply", "-composite",
            "-compose", "Over", "-bordercolor", "#f3ecdc", "-border", "10",
            "-bordercolor", "#5a5048", "-border", "60",
            "-background", "#5a5048", "-virtual-pixel", "background",
            "-distort", "Perspective", warp,
            "-rotate", str(angle), "+repage"] + light + [
            "-blur", blur, "-seed", str(100 + k), "-attenuate", noise, "+noise", "Gaussian",
            ] + NOMETA + ["-quality", quality, out]


PHOTO_POSITIVES = ["lab-pcr-positive.png", "antigen-certificate-positive.png",
                   "sms-positive-light.png", "sms-positive-dark.png"]
# Negatives, a trap, an old result and unrelated pages: each at two angles.
PHOTO_OTHERS = ["lab-pcr-negative.png", "lab-not-detected-many-positive.png", "lab-pcr-positive-old.png",
                "unrelated-invoice.png", "flu-positive.png", "antigen-inconclusive.png"]
k = 0
for base in PHOTO_POSITIVES + PHOTO_OTHERS:
    original = next(m for m in manifest if m["file"] == base)
    angles = PHOTO_ANGLES if base in PHOTO_POSITIVES else [PHOTO_ANGLES[k % 8], PHOTO_ANGLES[(k + 5) % 8]]
    for angle in angles:
        name = f"photo-{base[:-4]}-{'m' if angle < 0 else 'p'}{abs(angle)}.jpg"
        jobs2.append((name, photograph(path(base), path(name), angle, k)))
        manifest.append(dict(original, file=name, set="photo",
                             about=f"{base} photographed at {angle} deg (mix {k % 4}): {original['about']}"))
        k += 1


def run_all(jobs):
    def one(job):
        name, argv = job
        run(argv)
        return name

    with ThreadPoolExecutor(max_workers=2) as pool:
        for name in pool.map(one, jobs):
            progress(name, "rendered")


if only is not None:
    # One page rendered from scratch (not a photograph of another, nor a bad input).
    wanted = [job for job in jobs1 if job[0] == only]
    if not wanted:
        usage(f"--only takes one of the pages rendered from scratch: {', '.join(sorted(n for n, _ in jobs1))}")
    run_all(wanted)
    with open(path("manifest.json"), "w") as f:
        json.dump([m for m in manifest if m["file"] == only], f, indent=1)
    sys.exit(0)
run_all(jobs1)
run_all(jobs2)
if webp_ok and not os.path.exists(path(WEBP)):
    manifest[:] = [m for m in manifest if m["file"] != WEBP]

# Bad inputs, written directly.
with open(src, "rb") as f:
    good = f.read()
with open(path("truncated.png"), "wb") as f:
    f.write(good[:2000])
progress("truncated.png", "written")
add("truncated.png", "error", [], None, "The first 2000 bytes of lab-pcr-positive.png")

with open(path("not-an-image.png"), "w") as f:
    f.write("This is not an image.\nSARS-CoV-2 RT-PCR Result: POSITIVE\n")
progress("not-an-image.png", "written")
add("not-an-image.png", "error", [], None, "A text file named .png (its text claims a positive result)")

open(path("empty.png"), "wb").close()
progress("empty.png", "written")
add("empty.png", "error", [], None, "Zero bytes")

write_bomb(path("bomb.png"))
progress("bomb.png", f"written ({os.path.getsize(path('bomb.png'))} bytes)")
add("bomb.png", "error", [], None,
    "Valid 1-bit PNG whose header says 20000x20000 (50 MB of pixels decompressed, ~50 KB on disk)")

with open(path("sms-positive-light.png"), "rb") as f:
    small = f.read()
with open(path("huge.png"), "wb") as f:
    f.write(small)
    zeros = b"\x00" * (1 << 20)
    for _ in range(21):
        f.write(zeros)
progress("huge.png", f"written ({os.path.getsize(path('huge.png'))} bytes)")
add("huge.png", "error", [], None,
    "Over 20 MB: the accepted light SMS PNG followed by 21 MiB of zero bytes")

with open(path("manifest.json"), "w") as f:
    json.dump(manifest, f, indent=2)
    f.write("\n")
print(f"make-fixtures: {len(manifest)} files and manifest.json in {outdir} "
      f"(today {iso(TODAY)}, {time.monotonic() - START:.1f}s)", file=sys.stderr)
