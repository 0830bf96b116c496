"""What the kernel does to the fake driver's host, as scriptable actions.

On a real host PCI functions change hands and state under the agent:
libvirt hands a VF to vfio-pci for a guest and gives it back, a function
is reset, a sensor file stops reading, a card leaves the bus and comes
back. ``FakeHost(state_dir)`` does each of these to the simulated tree in
``[fake_driver]state_dir`` (drivers/fake.py) the way the kernel changes
sysfs (Documentation/ABI/testing/sysfs-bus-pci, Documentation/fpga/
dfl.rst "FPGA virtualization - PCIe SRIOV"), so the agent's scans meet
what they would meet on a real host::

    host = FakeHost('state/fake_fpga')
    host.bind_vfio('0000:5e:00.1')     # the VF of region0, to a guest
    host.unbind_vfio('0000:5e:00.1')   # given back to dfl-pci
    host.reset_function('0000:5e:00.1')
    host.sensor_unreadable(host.fme_dir(0) + '/errors/catfatal_errors')
    host.sensor_readable(host.fme_dir(0) + '/errors/catfatal_errors')
    host.hot_remove('0000:5e:00.0')    # the card and its VFs
    host.hot_add('0000:5e:00.0')

From a shell (the all-in-one's tree is ``state/fake_fpga``)::

    python -m cyborg_lite.drivers.fake_host --state-dir state/fake_fpga \\
        bind-vfio 0000:5e:00.1

What an action takes out of the tree is kept under ``<state_dir>/host``,
so it outlives a restart of the agent (or of the all-in-one) until it is
undone; a rebuild of the tree (another layout) forgets it.
"""
import argparse
import json
import os
import shutil
import sys

from cyborg_lite.drivers import fake

VFIO_DRIVER = 'vfio-pci'
# Its read at offset 0 fails with EIO, as a sysfs attribute whose device
# stopped answering does (a plain file cannot).
EIO_TARGET = '/proc/self/mem'
SENSORS_FILE = 'sensors.json'
MANIFEST = 'manifest.json'
# Where a function's kept parts lie: one folder per PCI address.
VFIO, REMOVED = 'vfio', 'removed'


class ActionRefused(Exception):
    """The kernel would refuse this (or it makes no sense now)."""


def _read_json(path, default):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def _write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fake.atomic_write(path, json.dumps(value, sort_keys=True))


def _under(path, dirs):
    return any(path == d or path.startswith(d + os.sep) for d in dirs)


class FakeHost:
    """The actions, on the tree under ``state_dir``."""

    def __init__(self, state_dir):
        self.root = os.path.abspath(state_dir)
        self.sys = os.path.join(self.root, 'sys')
        self.dev = os.path.join(self.root, 'dev')
        self.kept = os.path.join(self.root, fake.HOST_DIR)

    # --- where things are ---------------------------------------------

    def function_dir(self, address):
        """The real directory of a PCI function on the bus."""
        link = os.path.join(self.sys, 'bus', 'pci', 'devices', address)
        if not os.path.isdir(link):
            raise ActionRefused('no PCI function %s on the bus' % address)
        return os.path.realpath(link)

    def driver_of(self, address):
        """The name of the kernel driver bound to the function, or None."""
        link = os.path.join(self.function_dir(address), 'driver')
        return os.path.basename(os.readlink(link)) \
            if os.path.islink(link) else None

    def fme_dir(self, card):
        """The FME of card ``card`` (0, 1, ...) as class/fpga_region
        shows it."""
        layout = self._layout()
        region = card * (layout['regions'] + 1)
        return os.path.join(self.sys, 'class', 'fpga_region',
                            'region%d' % region, 'dfl-fme.%d' % card)

    def port_dir(self, card, port):
        """The port of region ``port`` of card ``card``: under the card's
        base region, or with [fake_driver]sriov under its VF's."""
        layout = self._layout()
        global_port = card * layout['regions'] + port
        if layout.get('sriov'):
            region = layout['num_cards'] * (layout['regions'] + 1) + \
                global_port
        else:
            region = card * (layout['regions'] + 1)
        return os.path.join(self.sys, 'class', 'fpga_region',
                            'region%d' % region, 'dfl-port.%d' % global_port)

    def vf_address(self, card, port):
        """The PCI address of the VF holding region ``port`` of ``card``
        (with [fake_driver]sriov): devfn port + 1 on the card's bus."""
        return '0000:%02x:%02x.%d' % (fake.FIRST_BUS + card, (port + 1) >> 3,
                                      (port + 1) & 7)

    def _layout(self):
        layout = _read_json(os.path.join(self.root, fake.LAYOUT_FILE), None)
        if layout is None:
            raise ActionRefused('no simulated tree under %s (start the '
                                'agent once first)' % self.root)
        return layout

    # --- vfio-pci: a function handed to a guest ----------------------------

    def bind_vfio(self, address):
        """Unbind the function from dfl-pci and bind it to vfio-pci, as
        libvirt does for a managed hostdev (driver_override, unbind,
        drivers_probe): dfl-pci's remove takes its FPGA base region down,
        so its port (a PF's FME and ports) leaves class/fpga_region and
        /dev; the function stays on the bus, its ``driver`` link at
        vfio-pci."""
        function = self.function_dir(address)
        if self.driver_of(address) == VFIO_DRIVER:
            raise ActionRefused('%s is bound to vfio-pci already' % address)
        vfs = [n for n in os.listdir(function) if n.startswith('virtfn')]
        if vfs:
            raise ActionRefused(
                '%s has %d VFs enabled: dfl-pci disables SR-IOV when it '
                'lets go of the PF; hand over its VFs instead'
                % (address, len(vfs)))
        self._take_out(address, VFIO, [os.path.join(function,
                                                    'fpga_region')])
        fake.bind_driver(self.sys, function, VFIO_DRIVER)
        fake.atomic_write(os.path.join(function, 'driver_override'),
                          VFIO_DRIVER + '\n')

    def unbind_vfio(self, address):
        """The guest let go: driver_override cleared, the function bound
        to dfl-pci again, its region back as it was (the same AFU: only
        the FME, on the PF, programs one)."""
        function = self.function_dir(address)
        if self.driver_of(address) != VFIO_DRIVER:
            raise ActionRefused('%s is not bound to vfio-pci' % address)
        fake.atomic_write(os.path.join(function, 'driver_override'),
                          '(null)\n')
        fake.bind_driver(self.sys, function, fake.HOST_DRIVER)
        self._put_back(address, VFIO)

    # --- reset ---------------------------------------------------------

    def reset_function(self, address):
        """``echo 1 > .../reset`` (an FLR): the ports behind the function
        are reset, their simulated local memory emptied; the loaded AFU
        stays, and so do the AER counters (the kernel keeps a function's
        aer_stats across a reset). A function handed to vfio-pci is reset
        too (vfio-pci itself resets one when a guest lets go of it)."""
        function = self.function_dir(address)
        kept = os.path.join(self.kept, address, 'tree')
        for top in (os.path.join(function, 'fpga_region'), kept):
            for _dirpath, dirnames, _files in os.walk(top):
                for name in dirnames:
                    memory = os.path.join(self.root, 'local_memory', name)
                    if name.startswith('dfl-port.') and \
                            os.path.exists(memory):
                        fake.atomic_write(memory, '')

    # --- sensors -------------------------------------------------------

    def sensor_unreadable(self, path, vanish=False):
        """The sensor file at ``path`` (in the tree, through its links
        or not) fails its reads with EIO, or with ``vanish`` is gone;
        what it held is kept for ``sensor_readable``."""
        real, rel = self._sensor(path)
        sensors = _read_json(self._sensors_file(), {})
        if rel not in sensors:
            if not os.path.isfile(real):
                raise ActionRefused('no sensor file %s' % path)
            with open(real) as f:
                sensors[rel] = {'text': f.read()}
        sensors[rel]['vanish'] = bool(vanish)
        _write_json(self._sensors_file(), sensors)
        if os.path.lexists(real):
            os.unlink(real)
        if not vanish:
            os.symlink(EIO_TARGET, real)

    def sensor_readable(self, path, text=None):
        """The sensor file reads again: ``text``, or what it held."""
        real, rel = self._sensor(path)
        sensors = _read_json(self._sensors_file(), {})
        if rel not in sensors:
            raise ActionRefused('%s was not made unreadable' % path)
        if os.path.lexists(real):
            os.unlink(real)
        fake.atomic_write(real, sensors.pop(rel)['text'] if text is None
                          else text)
        _write_json(self._sensors_file(), sensors)

    def _sensor(self, path):
        path = path if os.path.isabs(path) else os.path.join(self.sys, path)
        real = os.path.join(os.path.realpath(os.path.dirname(path)),
                            os.path.basename(path))
        if not _under(real, [self.sys]):
            raise ActionRefused('%s is not in the tree %s' % (path, self.sys))
        return real, os.path.relpath(real, self.root)

    def _sensors_file(self):
        return os.path.join(self.kept, SENSORS_FILE)

    # --- the bus: hot removal and rescan -------------------------------

    def hot_remove(self, address):
        """``echo 1 > .../remove``: the function leaves the bus with all
        under it (a PF with its VFs: disabling SR-IOV removes them)."""
        function = self.function_dir(address)
        if os.path.islink(os.path.join(function, 'physfn')):
            raise ActionRefused('%s is a VF: remove its PF' % address)
        dirs = [function] + [
            os.path.realpath(os.path.join(function, name))
            for name in sorted(os.listdir(function))
            if name.startswith('virtfn')]
        self._take_out(address, REMOVED, dirs)

    def hot_add(self, address=None):
        """``echo 1 > /sys/bus/pci/rescan``: a removed function (every
        one, without ``address``) is on the bus again, as a new device:
        its AER counters start from zero. Its VFs come back with it (as
        the boot's configuration enables them again)."""
        found = [address] if address else sorted(
            a for a in self._kept_addresses()
            if self._manifest(a)['kind'] == REMOVED)
        for each in found:
            manifest = self._manifest(each)
            if manifest is None or manifest['kind'] != REMOVED:
                raise ActionRefused('%s was not removed from the bus' % each)
            for rel in self._put_back(each, REMOVED):
                for name, text in fake.aer_files().items():
                    fake.atomic_write(os.path.join(self.root, rel, name),
                                      text)

    def removed(self):
        """PCI addresses removed from the bus, not added again."""
        return [a for a in self._kept_addresses()
                if self._manifest(a)['kind'] == REMOVED]

    # --- taking parts of the tree out and back -------------------------

    def _kept_addresses(self):
        try:
            return sorted(n for n in os.listdir(self.kept)
                          if os.path.isfile(os.path.join(self.kept, n,
                                                         MANIFEST)))
        except FileNotFoundError:
            return []

    def _manifest(self, address):
        return _read_json(os.path.join(self.kept, address, MANIFEST), None)

    def _take_out(self, address, kind, dirs):
        """Move ``dirs`` to <kept>/<address>/tree, with the links into
        them (class, bus and driver links) and their /dev nodes; the
        manifest first, so a crash half way leaves what to put back."""
        dirs = [d for d in dirs if os.path.isdir(d)]
        here = os.path.join(self.kept, address)
        if os.path.exists(os.path.join(here, MANIFEST)):
            raise ActionRefused('%s is %s already' % (
                address, self._manifest(address)['kind']))
        links = self._links_into(dirs)
        nodes = sorted({name for d in dirs for _p, names, _f in os.walk(d)
                        for name in names if name.startswith('dfl-') and
                        os.path.exists(os.path.join(self.dev, name))})
        moved = [os.path.relpath(d, self.root) for d in dirs]
        _write_json(os.path.join(here, MANIFEST), {
            'kind': kind, 'moved': moved, 'links': links, 'dev': nodes})
        for rel, _target in links:
            os.unlink(os.path.join(self.root, rel))
        for name in nodes:
            os.unlink(os.path.join(self.dev, name))
        for index, d in enumerate(dirs):
            target = os.path.join(here, 'tree', str(index))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.rename(d, target)

    def _put_back(self, address, kind):
        """Undo ``_take_out``; the moved directories, relative."""
        here = os.path.join(self.kept, address)
        manifest = self._manifest(address)
        if manifest is None or manifest['kind'] != kind:
            raise ActionRefused('nothing of %s is kept as %s' % (address,
                                                                 kind))
        for index, rel in enumerate(manifest['moved']):
            os.rename(os.path.join(here, 'tree', str(index)),
                      os.path.join(self.root, rel))
        for name in manifest['dev']:
            fake.atomic_write(os.path.join(self.dev, name), '')
        for rel, target in manifest['links']:
            path = os.path.join(self.root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if not os.path.lexists(path):
                os.symlink(target, path)
        shutil.rmtree(here)
        return manifest['moved']

    def _links_into(self, dirs):
        """[(link, target)] of the links in class/*, bus/pci/devices and
        bus/pci/drivers/* that lead into ``dirs``."""
        holders = [os.path.join(self.sys, 'bus', 'pci', 'devices')]
        for parent in (os.path.join(self.sys, 'class'),
                       os.path.join(self.sys, 'bus', 'pci', 'drivers')):
            holders += [os.path.join(parent, n)
                        for n in sorted(_listdir(parent))]
        found = []
        for holder in holders:
            for name in sorted(_listdir(holder)):
                path = os.path.join(holder, name)
                if os.path.islink(path) and _under(os.path.realpath(path),
                                                   dirs):
                    found.append([os.path.relpath(path, self.root),
                                  os.readlink(path)])
        return found


def _listdir(path):
    try:
        return os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return []


# --- the command line ------------------------------------------------------

def _parser():
    parser = argparse.ArgumentParser(
        prog='python -m cyborg_lite.drivers.fake_host',
        description='Do to the fake driver\'s simulated host what the '
                    'kernel does to a real one (docs/drivers.md).')
    parser.add_argument('--state-dir', default='state/fake_fpga',
                        help='[fake_driver]state_dir (default: the '
                             'all-in-one\'s, %(default)s)')
    actions = parser.add_subparsers(dest='action', required=True)
    for name, what in (('bind-vfio', 'hand a function to vfio-pci'),
                       ('unbind-vfio', 'give it back to dfl-pci'),
                       ('reset', 'reset a function (FLR)'),
                       ('remove', 'remove a function from the bus')):
        actions.add_parser(name, help=what).add_argument('address')
    rescan = actions.add_parser('rescan', help='add removed functions '
                                               'again')
    rescan.add_argument('address', nargs='?')
    unreadable = actions.add_parser('unreadable', help='make a sensor '
                                    'file fail with EIO (or vanish)')
    unreadable.add_argument('path', help='in the tree, e.g. class/'
                            'fpga_region/region0/dfl-fme.0/errors/'
                            'catfatal_errors')
    unreadable.add_argument('--vanish', action='store_true')
    readable = actions.add_parser('readable', help='make it read again')
    readable.add_argument('path')
    readable.add_argument('--text', help='what it reads now (default: '
                                         'what it held)')
    return parser


def main(argv=None):
    args = _parser().parse_args(argv)
    host = FakeHost(args.state_dir)
    calls = {
        'bind-vfio': lambda: host.bind_vfio(args.address),
        'unbind-vfio': lambda: host.unbind_vfio(args.address),
        'reset': lambda: host.reset_function(args.address),
        'remove': lambda: host.hot_remove(args.address),
        'rescan': lambda: host.hot_add(args.address),
        'unreadable': lambda: host.sensor_unreadable(args.path,
                                                     args.vanish),
        'readable': lambda: host.sensor_readable(
            args.path, None if args.text is None else args.text + '\n'),
    }
    try:
        calls[args.action]()
    except ActionRefused as e:
        print('%s: %s' % (args.action, e), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
