'''tracer's BlueZ stand-in: python3-dbusmock's bluez5 template, corrected and extended.

Run it on a private bus, never the machine's own:

    DBUS_SYSTEM_BUS_ADDRESS=unix:path=/tmp/bus /usr/bin/python3 -m dbusmock --system \
        --template Tools/testing/bluez-standin.py

It fixes what bluez5 gets wrong for tracer (ManufacturerData is a{qv}, as BlueZ sends it, not
aa{qv}; StartDiscovery works before SetDiscoveryFilter) and adds, on org.bluez.Mock:

- AddBeacon(adapter, address, uuid, major, minor, power, rssi) -> path: an iBeacon device, with
  InterfacesAdded as BlueZ emits it for a new device;
- Stream(paths, hz, seconds): PropertiesChanged {RSSI} for each device hz times a second, from
  inside the mock, only while its adapter is powered and discovering and not stalled, as BlueZ
  reports adverts; Emitted() counts what was sent;
- Replay(adapter, file, start, seconds) -> count: the adverts of a replay file (as `tracer
  simulate` writes one per kiosk) from `start` for `seconds`, each at its own time from now;
- SetPowered(adapter, on): the adapter powered off (discovery ends) or on;
- Stall(adapter): discovery silently stops delivering while Discovering stays true (bluez#1126),
  until the next StartDiscovery.

and on each adapter org.bluez.LEAdvertisingManager1, as bluetoothd has it: RegisterAdvertisement
asks the caller's advertisement for its properties (org.freedesktop.DBus.Properties.GetAll of
org.bluez.LEAdvertisement1) before it replies, as the real one does; while registered, every other
adapter "hears" it: a device with its ManufacturerData at a new random address (an advertiser
with privacy on), its RSSI signalled 5 times a second; UnregisterAdvertisement removes it.
'''

import json
import struct
import time
import uuid as uuidlib

import dbus
import dbus.lowlevel
from gi.repository import GLib

from dbusmock import OBJECT_MANAGER_IFACE, mockobject
from dbusmock.templates import bluez5
from dbusmock.templates.bluez5 import (  # noqa: F401  (dbusmock registers these by name)
    AddAdapter as _bluez5_add_adapter, RemoveAdapter, RemoveAdapterWithDevices, AddDevice,
    PairDevice, BlockDevice, ConnectDevice, DisconnectDevice,
    ADAPTER_IFACE, BLUEZ_MOCK_IFACE, DEVICE_IFACE)

BUS_NAME = 'org.bluez'
MAIN_OBJ = '/'
SYSTEM_BUS = True
IS_OBJECT_MANAGER = True

PROPERTIES_IFACE = 'org.freedesktop.DBus.Properties'
ADVERTISING_MANAGER_IFACE = 'org.bluez.LEAdvertisingManager1'
ADVERTISEMENT_IFACE = 'org.bluez.LEAdvertisement1'

# Streaming state, module-wide: one stand-in per process.
_emitted = 0
_stalled = set()   # adapter paths whose discovery is stuck
_streams = []      # GLib source ids
_callers = {}      # (path, member) -> the unique name of the last caller (dbusmock does not say)
_advertised = {}   # (adapter path, owner, object path) -> {'devices': [...], 'source': GLib id}


def load(mock, parameters):
    bluez5.load(mock, parameters)


def _emit(path, interface, name, signature, args):
    '''Sends a signal straight onto the bus: dbusmock's EmitSignal logs every one, too slow to
    stream thousands a second.'''
    message = dbus.lowlevel.SignalMessage(path, interface, name)
    message.append(*args, signature=signature)
    for location in mockobject.objects['/'].locations:
        location[0].send_message(message)


def _properties_changed(path, interface, changed, invalidated=()):
    _emit(path, PROPERTIES_IFACE, 'PropertiesChanged', 'sa{sv}as',
          [interface, dbus.Dictionary(changed, signature='sv'), dbus.Array(invalidated, signature='s')])


def _start_discovery(adapter):
    props = adapter.props[ADAPTER_IFACE]
    if not props['Powered']:
        raise dbus.exceptions.DBusException('Resource Not Ready', name='org.bluez.Error.NotReady')
    _stalled.discard(adapter.path)
    props['Discovering'] = dbus.Boolean(True, variant_level=1)
    _properties_changed(adapter.path, ADAPTER_IFACE, {'Discovering': dbus.Boolean(True, variant_level=1)})


def _stop_discovery(adapter):
    props = adapter.props[ADAPTER_IFACE]
    if not props['Discovering']:
        raise dbus.exceptions.DBusException('No discovery started', name='org.bluez.Error.Failed')
    props['Discovering'] = dbus.Boolean(False, variant_level=1)
    _properties_changed(adapter.path, ADAPTER_IFACE, {'Discovering': dbus.Boolean(False, variant_level=1)})


def _set_discovery_filter(adapter, discovery_filter):
    adapter.props[ADAPTER_IFACE]['DiscoveryFilter'] = discovery_filter


def _remove_device(adapter, path):
    if path not in mockobject.objects:
        raise dbus.exceptions.DBusException('Does Not Exist', name='org.bluez.Error.DoesNotExist')
    adapter.RemoveObject(path)
    _emit('/', OBJECT_MANAGER_IFACE, 'InterfacesRemoved', 'oas', [dbus.ObjectPath(path), [DEVICE_IFACE]])


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='ss', out_signature='s')
def AddAdapter(self, device_name, system_name):
    path = _bluez5_add_adapter(self, device_name, system_name)
    adapter = mockobject.objects[path]
    # bluez5's own methods assume SetDiscoveryFilter ran and never refuse: replaced.
    adapter.AddMethods(ADAPTER_IFACE, [
        ('StartDiscovery', '', '', _start_discovery),
        ('StopDiscovery', '', '', _stop_discovery),
        ('SetDiscoveryFilter', 'a{sv}', '', _set_discovery_filter),
        ('RemoveDevice', 'o', '', _remove_device),
    ])
    # BlueZ 5.56+ says what an adapter can be; bleak picks a central one by it.
    adapter.AddProperties(ADAPTER_IFACE, {
        'Roles': dbus.Array(['central', 'peripheral'], signature='s', variant_level=1),
    })
    adapter.AddProperties(ADVERTISING_MANAGER_IFACE, {
        'ActiveInstances': dbus.Byte(0, variant_level=1),
        'SupportedInstances': dbus.Byte(5, variant_level=1),
        'SupportedIncludes': dbus.Array(['tx-power'], signature='s', variant_level=1),
    })
    adapter.AddMethods(ADVERTISING_MANAGER_IFACE, [
        ('RegisterAdvertisement', 'oa{sv}', '', _register_advertisement),
        ('UnregisterAdvertisement', 'o', '', _unregister_advertisement),
    ])
    _watch_callers()
    return path


def _watch_callers():
    '''Notes who calls the advertising manager: dbusmock hands methods their arguments only, and
    RegisterAdvertisement must call back its caller.'''
    if _callers.get('watching'):
        return
    _callers['watching'] = True

    def note(_connection, message):
        if message.get_type() == 1 and message.get_interface() == ADVERTISING_MANAGER_IFACE:
            _callers[(message.get_path(), message.get_member())] = message.get_sender()
        return dbus.lowlevel.HANDLER_RESULT_NOT_YET_HANDLED

    for location in mockobject.objects['/'].locations:
        location[0].add_message_filter(note)


def _bus():
    return next(iter(mockobject.objects['/'].locations))[0]


def _register_advertisement(adapter, path, _options):
    owner = _callers.get((adapter.path, 'RegisterAdvertisement'))
    key = (adapter.path, owner, str(path))
    if key in _advertised:
        raise dbus.exceptions.DBusException('Already Exists', name='org.bluez.Error.AlreadyExists')
    props = adapter.props[ADAPTER_IFACE]
    if not props['Powered']:
        raise dbus.exceptions.DBusException('Not Powered', name='org.bluez.Error.NotReady')
    # As bluetoothd does: the advertisement's properties, from its owner, before the reply.
    advert = dbus.Interface(_bus().get_object(owner, path, introspect=False), PROPERTIES_IFACE)
    properties = advert.GetAll(ADVERTISEMENT_IFACE, timeout=5)
    if str(properties.get('Type', '')) not in ('broadcast', 'peripheral'):
        raise dbus.exceptions.DBusException('Invalid Type', name='org.bluez.Error.InvalidArguments')
    data = {int(company): bytes(value) for company, value in properties.get('ManufacturerData', {}).items()}
    devices = []
    for other, obj in list(mockobject.objects.items()):
        if other == adapter.path or not other.startswith('/org/bluez/hci') or other.count('/') != 3:
            continue
        address = ':'.join(f'{b:02X}' for b in [0x40 | (uuidlib.uuid4().bytes[0] & 0x3F)] + list(uuidlib.uuid4().bytes[:5]))
        devices.append(_add_device(mockobject.objects['/'], other, address, data, -60))
    state = {'tick': 0}

    def tick():
        global _emitted
        if key not in _advertised:
            return False
        state['tick'] += 1
        for device_path in devices:
            device = mockobject.objects.get(device_path)
            if device is None or not _scanning(device_path.rsplit('/', 1)[0]):
                continue
            value = device.rssi + (1 if state['tick'] % 2 else 0)
            _properties_changed(device_path, DEVICE_IFACE, {'RSSI': dbus.Int16(value, variant_level=1)})
            _emitted += 1
        return True

    _advertised[key] = {'devices': devices, 'source': GLib.timeout_add(200, tick)}
    adapter.props[ADVERTISING_MANAGER_IFACE]['ActiveInstances'] = dbus.Byte(len(
        [k for k in _advertised if k[0] == adapter.path]), variant_level=1)


def _unregister_advertisement(adapter, path):
    owner = _callers.get((adapter.path, 'UnregisterAdvertisement'))
    entry = _advertised.pop((adapter.path, owner, str(path)), None)
    if entry is None:
        raise dbus.exceptions.DBusException('Does Not Exist', name='org.bluez.Error.DoesNotExist')
    GLib.source_remove(entry['source'])
    for device_path in entry['devices']:
        if device_path in mockobject.objects:
            _remove_device(mockobject.objects[device_path.rsplit('/', 1)[0]], device_path)
    adapter.props[ADVERTISING_MANAGER_IFACE]['ActiveInstances'] = dbus.Byte(len(
        [k for k in _advertised if k[0] == adapter.path]), variant_level=1)


def _ibeacon(uuid_text, major, minor, power):
    return bytes([0x02, 0x15]) + uuidlib.UUID(uuid_text).bytes + struct.pack('>HHb', major, minor, power)


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='sssqqnn', out_signature='s')
def AddBeacon(self, adapter_name, address, uuid_text, major, minor, power, rssi):
    adapter_path = '/org/bluez/' + adapter_name
    if adapter_path not in mockobject.objects:
        raise dbus.exceptions.DBusException(f'Adapter {adapter_name} does not exist.',
                                            name=BLUEZ_MOCK_IFACE + '.NoSuchAdapter')
    return _add_device(self, adapter_path, address, {0x004C: _ibeacon(uuid_text, major, minor, power)}, rssi)


def _add_device(self, adapter_path, address, manufacturer_data, rssi):
    path = adapter_path + '/dev_' + address.replace(':', '_').upper()
    manufacturer = dbus.Dictionary(
        {dbus.UInt16(company): dbus.Array(data, signature='y', variant_level=1)
         for company, data in manufacturer_data.items()},
        signature='qv', variant_level=1)
    properties = {
        'Address': dbus.String(address, variant_level=1),
        'AddressType': dbus.String('random', variant_level=1),
        'Alias': dbus.String(address.replace(':', '-'), variant_level=1),
        'Paired': dbus.Boolean(False, variant_level=1),
        'Connected': dbus.Boolean(False, variant_level=1),
        'Trusted': dbus.Boolean(False, variant_level=1),
        'Blocked': dbus.Boolean(False, variant_level=1),
        'Adapter': dbus.ObjectPath(adapter_path, variant_level=1),
        'UUIDs': dbus.Array([], signature='s', variant_level=1),
        'RSSI': dbus.Int16(rssi, variant_level=1),
        'ManufacturerData': manufacturer,
    }
    self.AddObject(path, DEVICE_IFACE, properties, [])
    device = mockobject.objects[path]
    device.rssi = int(rssi)
    device.tick = 0
    _emit('/', OBJECT_MANAGER_IFACE, 'InterfacesAdded', 'oa{sa{sv}}',
          [dbus.ObjectPath(path), dbus.Dictionary({DEVICE_IFACE: properties}, signature='sa{sv}')])
    return path


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='ssdd', out_signature='t')
def Replay(self, adapter_name, replay, start, seconds):
    '''Plays the adverts of a replay file (docs/design.md's format, as `tracer simulate` writes one per
    kiosk) whose t lies in [start, start + seconds), each at its own offset from now: a device
    appears with its first advert, then its RSSI changes (BlueZ reports only an RSSI that
    changed, so a repeated value is not signalled). Returns the adverts it will play.'''
    global _emitted
    adapter_path = '/org/bluez/' + adapter_name
    if adapter_path not in mockobject.objects:
        raise dbus.exceptions.DBusException(f'Adapter {adapter_name} does not exist.',
                                            name=BLUEZ_MOCK_IFACE + '.NoSuchAdapter')
    adverts = []
    with open(str(replay)) as f:
        for line in f:
            o = json.loads(line)
            if start <= o['t'] < start + seconds:
                adverts.append(o)
    began = time.monotonic()
    state = {'next': 0}

    def tick():
        global _emitted
        now = time.monotonic() - began
        while state['next'] < len(adverts) and adverts[state['next']]['t'] - start <= now:
            o = adverts[state['next']]
            state['next'] += 1
            if not _scanning(adapter_path):
                continue
            path = adapter_path + '/dev_' + o['address'].replace(':', '_').upper()
            device = mockobject.objects.get(path)
            if device is None:
                data = {int(k): bytes.fromhex(v) for k, v in o.get('manufacturerData', {}).items()}
                _add_device(self, adapter_path, o['address'], data, o['rssi'])
            elif device.rssi != o['rssi']:
                device.rssi = o['rssi']
                _properties_changed(path, DEVICE_IFACE, {'RSSI': dbus.Int16(o['rssi'], variant_level=1)})
            else:
                continue
            _emitted += 1
        return state['next'] < len(adverts)

    _streams.append(GLib.timeout_add(10, tick))
    return dbus.UInt64(len(adverts))


def _scanning(adapter_path):
    adapter = mockobject.objects.get(adapter_path)
    if adapter is None or adapter_path in _stalled:
        return False
    props = adapter.props[ADAPTER_IFACE]
    return bool(props['Powered']) and bool(props['Discovering'])


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='asdd', out_signature='')
def Stream(self, paths, hz, seconds):
    '''RSSI adverts for each device, hz a second for seconds (0: until the mock ends). BlueZ only
    reports an RSSI that changed, so the value steps by a decibel each time.'''
    interval_ms = 10
    per_tick = hz * interval_ms / 1000.0
    state = {'credit': 0.0, 'end': time.monotonic() + seconds if seconds > 0 else None}
    paths = [str(p) for p in paths]

    def tick():
        global _emitted
        if state['end'] is not None and time.monotonic() >= state['end']:
            return False
        state['credit'] += per_tick
        rounds = int(state['credit'])
        state['credit'] -= rounds
        for _ in range(rounds):
            for path in paths:
                device = mockobject.objects.get(path)
                if device is None:
                    continue
                adapter_path = path.rsplit('/', 1)[0]
                if not _scanning(adapter_path):
                    continue
                device.tick += 1
                value = device.rssi + (1 if device.tick % 2 else 0)
                _properties_changed(path, DEVICE_IFACE, {'RSSI': dbus.Int16(value, variant_level=1)})
                _emitted += 1
        return True

    _streams.append(GLib.timeout_add(interval_ms, tick))


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='', out_signature='')
def StopStreams(self):
    while _streams:
        GLib.source_remove(_streams.pop())


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='', out_signature='t')
def Emitted(self):
    return dbus.UInt64(_emitted)


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='sb', out_signature='')
def SetPowered(self, adapter_name, on):
    path = '/org/bluez/' + adapter_name
    props = mockobject.objects[path].props[ADAPTER_IFACE]
    changed = {'Powered': dbus.Boolean(on, variant_level=1)}
    props['Powered'] = dbus.Boolean(on, variant_level=1)
    if not on and props['Discovering']:
        props['Discovering'] = dbus.Boolean(False, variant_level=1)
        changed['Discovering'] = dbus.Boolean(False, variant_level=1)
    _properties_changed(path, ADAPTER_IFACE, changed)


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='s', out_signature='')
def Stall(self, adapter_name):
    _stalled.add('/org/bluez/' + adapter_name)
