'''Tools/bench/bluez's driver: tracer's daemon, a minimal C libdbus client and (with --bleak)
bleak, the Python library most room-presence projects scan with, receive the same BlueZ
stand-in stream in the same run; prints loss, CPU and the ratios.

Usage: bluez.py TRACER DBUS_SINK MAP STANDIN [--beacons 200] [--hz 10] [--seconds 30]
                [--bleak PYTHONPATH]
'''
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import dbus

p = argparse.ArgumentParser()
p.add_argument('tracer')
p.add_argument('sink')
p.add_argument('map')
p.add_argument('standin')
p.add_argument('--beacons', type=int, default=200)
p.add_argument('--hz', type=float, default=10)
p.add_argument('--seconds', type=float, default=30)
p.add_argument('--bleak', help='PYTHONPATH holding bleak and dbus-fast: run bleak-sink.py beside')
a = p.parse_args()

TICK = os.sysconf('SC_CLK_TCK')
BADGE = 'f7826da6-4fa2-4e98-8024-bc5b71e0893e'


def cpu_seconds(pid):
    fields = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def say(text):
    print(text, file=sys.stderr, flush=True)


scratch = tempfile.mkdtemp(prefix='tracer-bench-bluez.')
socket = os.path.join(scratch, 'bus')
children = []
try:
    bus_daemon = subprocess.Popen(['dbus-daemon', '--session', '--nofork', '--print-address=1',
                                   f'--address=unix:path={socket}'], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
    children.append(bus_daemon)
    bus_daemon.stdout.readline()
    address = f'unix:path={socket}'
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address)
    mock = subprocess.Popen(['/usr/bin/python3', '-m', 'dbusmock', '--system', '--template', a.standin],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children.append(mock)
    bus = dbus.bus.BusConnection(address)
    for _ in range(500):
        if bus.name_has_owner('org.bluez'):
            break
        time.sleep(0.02)
    control = dbus.Interface(bus.get_object('org.bluez', '/'), 'org.bluez.Mock')
    control.AddAdapter('hci0', 'kiosk-lab')
    paths = [control.AddBeacon('hci0', f'C3:11:9A:22:{i >> 8:02X}:{i & 0xFF:02X}', BADGE, 1, i, -59, -60 - i % 25)
             for i in range(a.beacons)]

    sink = subprocess.Popen([a.sink], env=env, stdout=subprocess.PIPE, text=True)
    children.append(sink)
    assert sink.stdout.readline().strip() == 'ready'
    bleak = None
    if a.bleak:
        bleak = subprocess.Popen(['/usr/bin/python3', os.path.join(os.path.dirname(__file__), 'bleak-sink.py')],
                                 env=dict(env, PYTHONPATH=a.bleak), stdout=subprocess.PIPE, text=True)
        children.append(bleak)
        assert bleak.stdout.readline().strip() == 'ready', 'bleak did not start scanning'
    store = os.path.join(scratch, 'store.sqlite')
    daemon = subprocess.Popen([a.tracer, 'daemon', '--map', a.map, '--anchor', 'kiosk-lab', '--store', store,
                               '--metrics', '127.0.0.1:0', '--status-interval', '0'], env=env,
                              stdout=subprocess.PIPE, text=True)
    children.append(daemon)
    port = int(re.search(r':(\d+)/metrics', daemon.stdout.readline()).group(1))
    adapter = dbus.Interface(bus.get_object('org.bluez', '/org/bluez/hci0'), 'org.freedesktop.DBus.Properties')
    for _ in range(500):
        if adapter.Get('org.bluez.Adapter1', 'Discovering'):
            break
        time.sleep(0.02)
    time.sleep(0.5)

    def metric(name):
        text = urllib.request.urlopen(f'http://127.0.0.1:{port}/metrics').read().decode()
        return float(re.search(rf'^tracer_{name} (\S+)$', text, re.M).group(1))

    signals_before = metric('bluez_device_signals_total')
    emitted_before = int(control.Emitted())
    cpu_daemon, cpu_sink, wall = cpu_seconds(daemon.pid), cpu_seconds(sink.pid), time.monotonic()
    cpu_bleak = cpu_seconds(bleak.pid) if bleak else 0
    say(f'streaming {a.beacons} beacons x {a.hz:g} Hz for {a.seconds:g} s '
        f'({a.beacons * a.hz:,.0f} signals/s)…')
    control.Stream(paths, a.hz, a.seconds)
    for s in range(int(a.seconds)):
        time.sleep(1)
        print(f'\r  {s + 1}/{int(a.seconds)} s', end='', file=sys.stderr, flush=True)
    time.sleep(a.seconds - int(a.seconds) + 1.0)  # the tail drains
    print(file=sys.stderr)
    wall = time.monotonic() - wall
    cpu_daemon = cpu_seconds(daemon.pid) - cpu_daemon
    cpu_sink = cpu_seconds(sink.pid) - cpu_sink
    cpu_bleak = cpu_seconds(bleak.pid) - cpu_bleak if bleak else 0
    emitted = int(control.Emitted()) - emitted_before
    received_daemon = int(metric('bluez_device_signals_total') - signals_before)
    adverts = int(metric('adverts_total'))
    sink.send_signal(signal.SIGTERM)
    received_sink = int(sink.stdout.read().strip()) - 0
    received_bleak = 0
    if bleak:
        bleak.send_signal(signal.SIGTERM)
        received_bleak = int(bleak.stdout.read().strip())
    t = time.monotonic()
    daemon.send_signal(signal.SIGTERM)
    last = daemon.stdout.read().strip().splitlines()[-1:]
    daemon.wait()
    stop_seconds = time.monotonic() - t

    # The sink counted from its start, before the window: only emitted signals exist, so its
    # count is the stream's (no other RSSI changes happen).
    lost_daemon = emitted - received_daemon
    lost_sink = emitted - received_sink
    per_daemon = cpu_daemon / max(received_daemon, 1) * 1e6
    per_sink = cpu_sink / max(received_sink, 1) * 1e6
    print(f'window: {wall:.1f} s; the stand-in emitted {emitted:,} signals ({emitted / a.seconds:,.0f}/s)')
    print(f'{"receiver":<28}{"received":>10}{"lost":>8}{"CPU s":>8}{"% of a core":>13}{"µs/signal":>11}')
    print(f'{"tracer daemon":<28}{received_daemon:>10,}{lost_daemon:>8,}{cpu_daemon:>8.2f}'
          f'{cpu_daemon / wall * 100:>12.1f}%{per_daemon:>11.1f}')
    print(f'{"C libdbus sink (baseline)":<28}{received_sink:>10,}{lost_sink:>8,}{cpu_sink:>8.2f}'
          f'{cpu_sink / wall * 100:>12.1f}%{per_sink:>11.1f}')
    if bleak:
        per_bleak = cpu_bleak / max(received_bleak, 1) * 1e6
        print(f'{"bleak 3.1 (Python)":<28}{received_bleak:>10,}{emitted - received_bleak:>8,}{cpu_bleak:>8.2f}'
              f'{cpu_bleak / wall * 100:>12.1f}%{per_bleak:>11.1f}')
    ratio = per_daemon / per_sink if per_sink > 0 else float('inf')
    print(f'CPU per signal, tracer / baseline: {ratio:.2f}x (target <= 2x): '
          f'{"met" if ratio <= 2 else "NOT met"}')
    if bleak:
        to_bleak = per_daemon / per_bleak if per_bleak > 0 else float('inf')
        print(f'CPU per signal, tracer / bleak: {to_bleak:.2f}x (target <= 0.7x): '
              f'{"met" if to_bleak <= 0.7 else "NOT met"}')
    print(f'tracer CPU: {cpu_daemon / wall * 100:.1f}% of one core (target <= 15%): '
          f'{"met" if cpu_daemon / wall <= 0.15 else "NOT met"}')
    print(f'loss: {lost_daemon} (target 0): {"met" if lost_daemon == 0 else "NOT met"}')
    print(f'adverts ranged: {adverts:,}; SIGTERM to exit: {stop_seconds:.2f} s; {" ".join(last)}')
finally:
    for child in reversed(children):
        if child.poll() is None:
            child.kill()
            child.wait()
    subprocess.run(['rm', '-rf', scratch])
