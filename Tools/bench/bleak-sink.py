'''Tools/bench/bluez's third receiver: bleak (the Python BLE library most room-presence projects
build on) scanning through BlueZ on the system bus, counting each advertisement it reports.
Prints "ready" once scanning, and on SIGTERM the number of adverts its detection callback saw.
Run with bleak and dbus-fast on PYTHONPATH (Tools/testing/pip-target installs them).
'''
import asyncio
import signal
import sys

from bleak import BleakScanner

seen = 0


def detected(_device, _advertisement):
    global seen
    seen += 1


async def main():
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with BleakScanner(detected, scanning_mode='active'):
        print('ready', flush=True)
        await stop.wait()
    print(seen, flush=True)


asyncio.run(main())
