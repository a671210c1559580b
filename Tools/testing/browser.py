#!/usr/bin/python3
"""Drives a real headless Chromium over the DevTools protocol, for tests and the demo.

    browser.py URL --screenshot OUT.png [--ready JS] [--act JS] [--check JS] [--go FILE] [--timeout S] [--full-page]
               [--width W --height H] [--lang fr] [--axe axe.min.js] [--installable] [--file SELECTOR=PATH]
               [--step ACT CHECK]...

Opens URL, waits until the JavaScript expression --ready is true, and writes OUT.png.ready (so a
test knows the page is up and listening). With --check, it then waits for the file --go to exist
(the test has changed something), waits until --check is true, and exits 0, or 1 when --timeout
seconds pass first. With --act, the page is screenshotted as it is (OUT-before.png) and the
JavaScript --act is run (a click, say) before --check is waited for. Every outcome is one JSON line on stdout: {"ready", "check", "value",
"seconds"}. The screenshot is taken last, whatever happened. With --axe (axe-core's script:
Tools/testing/axe-core prints where it is), axe-core checks the page as it is at the end, and
the outcome's "axe" lists its serious and critical violations. --installable lists, once the
page is ready, Chromium's reasons it would not offer to install the page as an app
("installability"; none is a pass). --lang sets the browser's
language (navigator.languages). --file puts a file in a file input once the page is ready (as a
person choosing a photo would). Each --step, after all that, runs ACT, waits until CHECK is true,
and screenshots the page (OUT-step1.png, …; with --axe, axe-core checks it there too); the outcome
lists each step's seconds, and stops at the first that fails. A step's ACT may instead be
"@go FILE" (wait until the test creates FILE: it changed something) or "@file SELECTOR=PATH"
(another file chosen). Needs Debian's chromium and
python3-websocket.
"""
import argparse
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("browser.py: chromium not found (apt-get install chromium)")


class Page:
    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        mine = self.next_id
        self.ws.send(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == mine:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def value(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")


# axe-core's serious and critical violations, each with the first few elements it names.
AXE_RUN = """
axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
  .filter(v => v.impact === 'serious' || v.impact === 'critical')
  .map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))})))
"""


def choose_file(page, spec):
    """SELECTOR=PATH: the file put in the file input, as a person choosing a photo would."""
    selector, path = spec.split("=", 1)
    root = page.call("DOM.getDocument")["root"]["nodeId"]
    node = page.call("DOM.querySelector", nodeId=root, selector=selector)["nodeId"]
    page.call("DOM.setFileInputFiles", files=[os.path.abspath(path)], nodeId=node)
    page.value(f"document.querySelector({json.dumps(selector)}).dispatchEvent(new Event('change', {{bubbles: true}})), true")


def axe(page, script):
    """axe-core's serious and critical violations on the page as it is."""
    if not page.value("typeof axe !== 'undefined'"):
        page.call("Runtime.evaluate", expression=open(script).read())
    result = page.call("Runtime.evaluate", expression=AXE_RUN, awaitPromise=True, returnByValue=True)
    return result.get("result", {}).get("value") or []


def wait(page, expression, deadline):
    value = None
    while time.time() < deadline:
        try:
            value = page.value(expression)
        except RuntimeError:
            value = None
        if value:
            return True, value
        time.sleep(0.1)
    return False, value


def alive(group):
    """Whether a process of the group is still running (a zombie is not)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[2]) == group:
            return True
    return False


def stop(browser):
    """Stops Chromium and every process it started, and returns once none is left. Waiting for
    Chromium alone was not enough: its network service writes Default/Network Persistent State
    as it ends, after Chromium has, and now and then after the profile was removed, which left
    a tracer-chromium-* directory in /tmp (25 after a day of test runs). Its crash handlers
    (their own session) end by themselves when it does and write elsewhere."""
    group = browser.pid
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        browser.wait(10)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.time() + 10
    while alive(group) and time.time() < deadline:
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    if browser.poll() is None:
        browser.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--screenshot", required=True)
    parser.add_argument("--ready", default="document.readyState === 'complete'")
    parser.add_argument("--check")
    parser.add_argument("--act", help="JavaScript run once ready (after --go), before --check")
    parser.add_argument("--go")
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=1000)
    parser.add_argument("--full-page", action="store_true", help="screenshot the whole page, not the window")
    parser.add_argument("--lang", help="the browser's language (fr, en-GB, …)")
    parser.add_argument("--axe", help="axe-core's axe.min.js: check the page at the end")
    parser.add_argument("--installable", action="store_true", help="list why the page cannot be installed as an app, once ready")
    parser.add_argument("--file", action="append", default=[], help="SELECTOR=PATH: a file for a file input")
    parser.add_argument("--step", nargs=2, action="append", default=[], metavar=("ACT", "CHECK"))
    args = parser.parse_args()

    profile = tempfile.mkdtemp(prefix="tracer-chromium-")
    browser = subprocess.Popen(
        [
            chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--no-default-browser-check", "--disable-extensions",
            "--remote-debugging-port=0", "--remote-allow-origins=*", f"--user-data-dir={profile}",
            f"--window-size={args.width},{args.height}",
        ] + ([f"--lang={args.lang}", f"--accept-lang={args.lang}"] if args.lang else []) + ["about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # Chromium makes its singleton socket's directory under TMPDIR and leaves it there when
        # it is stopped (63 in /tmp after a day of test runs): inside the profile, it goes with it.
        env=dict(os.environ, TMPDIR=profile),
        # Its own process group, so that it is stopped with every process it started.
        start_new_session=True,
    )
    outcome = {"ready": False, "check": None, "value": None, "seconds": 0}
    started = time.time()
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.time() + 60
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if time.time() > deadline or browser.poll() is not None:
                sys.exit("browser.py: chromium did not start")
            time.sleep(0.05)
        port = int(open(port_file).read().split()[0])
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        target = next(t for t in targets if t.get("type") == "page")
        page = Page(websocket.create_connection(target["webSocketDebuggerUrl"], timeout=60, suppress_origin=True))
        page.call("Page.enable")
        page.call("Emulation.setDeviceMetricsOverride", width=args.width, height=args.height, deviceScaleFactor=1, mobile=False)
        page.call("Page.navigate", url=args.url)
        outcome["ready"], outcome["value"] = wait(page, args.ready, time.time() + args.timeout)
        open(args.screenshot + ".ready", "w").write(json.dumps(outcome["ready"]))
        if args.check and outcome["ready"]:
            deadline = time.time() + args.timeout
            while args.go and not os.path.exists(args.go) and time.time() < deadline:
                time.sleep(0.05)
            if args.act:
                shot = page.call("Page.captureScreenshot", format="png")
                with open(args.screenshot[:-4] + "-before.png", "wb") as f:
                    f.write(base64.b64decode(shot["data"]))
                page.value(args.act)
            checked = time.time()
            outcome["check"], outcome["value"] = wait(page, args.check, time.time() + args.timeout)
            if outcome["check"]:
                outcome["checkedAt"] = time.time()  # the wall clock, for a test's latency
            outcome["seconds"] = round(time.time() - checked, 3)
        if args.installable and outcome["ready"]:
            # Chromium's own reasons a phone would not offer to install the page (none: it would).
            errors = page.call("Page.getInstallabilityErrors").get("installabilityErrors", [])
            outcome["installability"] = [e.get("errorId") for e in errors]
            outcome["manifest"] = page.call("Page.getAppManifest").get("url")
        for spec in args.file if outcome["ready"] else []:
            choose_file(page, spec)
        violations = []
        if args.axe and outcome["ready"]:
            violations += axe(page, args.axe)
        steps = []
        for number, (act, check) in enumerate(args.step if outcome["ready"] else [], start=1):
            begun = time.time()
            if act.startswith("@go "):
                # The test's signal that it changed something (a server stopped, say).
                go = act[4:]
                while not os.path.exists(go) and time.time() < begun + args.timeout:
                    time.sleep(0.05)
            elif act.startswith("@file "):
                choose_file(page, act[6:])
            else:
                page.value(act)
            held, _ = wait(page, check, time.time() + args.timeout)
            steps.append({"check": held, "seconds": round(time.time() - begun, 3), "at": time.time()})
            shot = page.call("Page.captureScreenshot", format="png")
            with open(f"{args.screenshot[:-4]}-step{number}.png", "wb") as f:
                f.write(base64.b64decode(shot["data"]))
            if args.axe:
                violations += axe(page, args.axe)
            if not held:
                break
        if args.step:
            outcome["steps"] = steps
        if args.axe and outcome["ready"]:
            outcome["axe"] = violations
        if args.full_page:
            height = page.value("document.documentElement.scrollHeight") or args.height
            page.call("Emulation.setDeviceMetricsOverride", width=args.width, height=int(height), deviceScaleFactor=1, mobile=False)
        time.sleep(0.3)  # let the last paint land
        shot = page.call("Page.captureScreenshot", format="png")
        with open(args.screenshot, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
    finally:
        stop(browser)
        shutil.rmtree(profile, ignore_errors=True)
    outcome.setdefault("seconds", round(time.time() - started, 3))
    print(json.dumps(outcome))
    ok = (
        outcome["ready"]
        and (args.check is None or outcome["check"])
        and not outcome.get("axe")
        and not outcome.get("installability")
        and all(s["check"] for s in outcome.get("steps", []))
        and len(outcome.get("steps", [])) == len(args.step)
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
