"""A simulated host of DFL FPGA cards, for the all-in-one and for tests.

The fake writes a DFL-style sysfs tree (the layout drivers/dfl.py reads,
see that module) under ``[fake_driver] state_dir`` and discovers it with
the same reader the real fpga_sysfs driver uses, so the fake exercises the
real parsing code. Programming is real in the simulated tree: after
``program_delay`` seconds the port's afu_id file holds the new function.
The tree is kept across restarts (programmed functions persist) and is
rebuilt only when the configured layout changes.

With ``[fake_driver] sriov`` each card exposes its ports through SR-IOV
VFs, laid out as on a real Intel PAC (dfl.rst "FPGA virtualization"):
the PF keeps the FME and has ``sriov_totalvfs``, ``sriov_numvfs`` and
``virtfnN`` links; VF N (device 0x09c5, ``physfn`` link back) holds port
N in its own base region. Each region then has its own VF as attach
handle; without it every region of a card is reached through the PF.

Cleaning is simulated too: each region has a simulated local memory,
the file ``<state_dir>/local_memory/dfl-port.N`` (kept outside the sysfs
tree, which stays a copy of a real one; a test or a demo writes "tenant
data" there). ``clean`` takes ``clean_delay`` seconds, honours its own
failure injection, empties that memory (the port reset) and, with
``scrub_function_id`` set, loads that function as a scrub image would.

What the kernel does to a host (a VF handed to vfio-pci, a function
reset, a sensor that stops reading, a card removed from the bus and added
again) is done to the tree by drivers/fake_host.py.

Function id of an image: the id its header declares (GBS
accelerator-type-uuid, xclbin uuid, via cyborg_lite.common.
bitstream_formats); for a headerless image, by convention, the first 32
hex digits of the sha256 of the whole file.
"""
import hashlib
import json
import logging
import os
import shutil
import time

from cyborg_lite.bitstreams import formats as bitstream_formats
from cyborg_lite.common import exception
from cyborg_lite.drivers import base
from cyborg_lite.drivers import dfl
from cyborg_lite.drivers import topology

LOG = logging.getLogger(__name__)

# What the simulated cards look like on the PCI bus: Intel PAC Arria 10
# (PF and VF device ids of the kernel's drivers/fpga/dfl-pci.c).
VENDOR_ID = '0x8086'
DEVICE_ID = '0x09c4'
VF_DEVICE_ID = '0x09c5'
PCI_CLASS = '0x120000'
FIRST_BUS = 0x5e
LAYOUT_FILE = 'layout.json'
# Under the state directory: what drivers/fake_host.py took out of the
# tree (a region handed to vfio-pci, a card removed from the bus).
HOST_DIR = 'host'
# The kernel drivers a simulated function is bound to.
HOST_DRIVER = 'dfl-pci'
CPUS_PER_NODE = 4
# SLIT distances: to itself, within a socket, across sockets.
LOCAL, SAME_SOCKET, REMOTE = 10, 12, 21


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def atomic_write(path, text):
    """Replace a file at once, so a concurrent scan never reads half."""
    tmp = '%s.tmp.%d' % (path, os.getpid())
    _write(tmp, text)
    os.replace(tmp, path)


def _write_group(directory, files):
    """Write ``{name: text}`` into ``directory`` only when it holds none
    of them yet (a tree built before they existed): one a test or a
    person changed, made unreadable or removed (an injected fault,
    drivers/fake_host.py) is kept across restarts."""
    if any(os.path.lexists(os.path.join(directory, name))
           for name in files):
        return
    for name, text in files.items():
        _write(os.path.join(directory, name), text)


def _link(path, target):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


class SimulatedTree:
    """Writes the DFL sysfs and /dev trees of N cards x M regions."""

    def __init__(self, root, num_cards, regions_per_card, region_types,
                 initial_function_id, sriov=False, numa_nodes=1):
        self.numa_nodes = numa_nodes
        self.root = root
        self.sys = os.path.join(root, 'sys')
        self.dev = os.path.join(root, 'dev')
        self.num_cards = num_cards
        self.regions = regions_per_card
        self.region_types = region_types
        self.initial_function_id = initial_function_id
        self.sriov = sriov

    def layout(self):
        layout = {'num_cards': self.num_cards, 'regions': self.regions,
                  'region_types': list(self.region_types)}
        if self.sriov:
            # NOTE: only when on, so trees built before the option exist
            # are kept as they are.
            layout['sriov'] = True
        if self.numa_nodes != 1:
            layout['numa_nodes'] = self.numa_nodes
        return layout

    def ensure(self):
        """Build the tree unless one with the same layout is there; give
        a kept tree the health files it may lack (once per process)."""
        marker = os.path.join(self.root, LAYOUT_FILE)
        try:
            with open(marker) as f:
                if json.load(f) == self.layout():
                    self._ensure_health_files()
                    return
        except (OSError, ValueError):
            pass
        LOG.info('Building simulated FPGA host under %s', self.root)
        for old in (self.sys, self.dev, os.path.join(self.root, HOST_DIR)):
            shutil.rmtree(old, ignore_errors=True)
        self._write_nodes()
        for card in range(self.num_cards):
            self._write_card(card)
        self._health_files_checked = False
        self._ensure_health_files()
        atomic_write(marker, json.dumps(self.layout()))

    def socket(self, node):
        """One socket per node on two nodes, two nodes a socket above."""
        return node if self.numa_nodes == 2 else node // 2

    def node_of(self, card):
        return card % self.numa_nodes

    def _cpulist(self, node):
        first = node * CPUS_PER_NODE
        return '%d-%d' % (first, first + CPUS_PER_NODE - 1)

    def _write_nodes(self):
        """devices/system/node/nodeN/{cpulist,distance} and each CPU's
        physical_package_id, as the kernel prints them."""
        system = os.path.join(self.sys, 'devices', 'system')
        for node in range(self.numa_nodes):
            row = [LOCAL if other == node else
                   SAME_SOCKET if self.socket(other) == self.socket(node)
                   else REMOTE for other in range(self.numa_nodes)]
            here = os.path.join(system, 'node', 'node%d' % node)
            _write(os.path.join(here, 'cpulist'), self._cpulist(node) + '\n')
            _write(os.path.join(here, 'distance'),
                   ' '.join(map(str, row)) + '\n')
            for cpu in range(node * CPUS_PER_NODE,
                             (node + 1) * CPUS_PER_NODE):
                _write(os.path.join(system, 'cpu', 'cpu%d' % cpu, 'topology',
                                    'physical_package_id'),
                       '%d\n' % self.socket(node))

    _health_files_checked = False

    def _ensure_health_files(self):
        if self._health_files_checked:
            return
        for card in range(self.num_cards):
            self._write_card_health(card)
        self._health_files_checked = True

    def _write_card_health(self, card):
        """The files health is read from, as a real card has them, with
        healthy values: PCI AER counters and link of every function, the
        FME's error registers and hwmon devices, each port's errors; and
        each function's driver link (a tree of an older release lacks
        them). Only into what is there: a region handed to vfio-pci or a
        card removed from the bus (drivers/fake_host.py) is not."""
        parent = os.path.join(self.sys, 'devices/pci0000:%02x'
                              % (FIRST_BUS + card))
        functions = [0] + ([vf + 1 for vf in range(self.regions)]
                           if self.sriov else [])
        for devfn in functions:
            function = os.path.join(parent, _address(card, devfn))
            if os.path.isdir(function):
                write_pci_health(function)
                self._write_driver(function)
        base_index = card * (self.regions + 1)
        pf = os.path.join(parent, _address(card, 0))
        fme = os.path.join(pf, 'fpga_region/region%d' % base_index,
                           'dfl-fme.%d' % card)
        if os.path.isdir(fme):
            write_fme_health(fme, card)
        for port in range(self.regions):
            global_port = card * self.regions + port
            holder = os.path.join(
                parent, _address(card, port + 1), 'fpga_region',
                'region%d' % (self.num_cards * (self.regions + 1) +
                              global_port)) if self.sriov else \
                os.path.dirname(fme)
            port_dir = os.path.join(holder, 'dfl-port.%d' % global_port)
            if os.path.isdir(port_dir):
                _write_group(os.path.join(port_dir, 'errors'), dict.fromkeys(
                    ('errors', 'first_error', 'first_malformed_req'),
                    '0x0\n'))

    def _write_driver(self, function):
        """The function's ``driver`` link (to dfl-pci), its driver's link
        back and ``driver_override`` ("(null)" when none is set), as
        drivers/base/bus.c and pci-sysfs.c show them; kept as they are."""
        if os.path.lexists(os.path.join(function, 'driver')):
            return
        bind_driver(self.sys, function, HOST_DRIVER)
        _write_group(function, {'driver_override': '(null)\n'})

    def _write_card(self, card):
        address = _address(card, 0)
        parent_rel = 'devices/pci0000:%02x' % (FIRST_BUS + card)
        pf_rel = '%s/%s' % (parent_rel, address)
        self._write_function(pf_rel, DEVICE_ID, self.node_of(card))
        base_index = card * (self.regions + 1)
        region_rel = '%s/fpga_region/region%d' % (pf_rel, base_index)
        _link(os.path.join(self.sys, 'class/fpga_region',
                           'region%d' % base_index), '../../' + region_rel)
        fme_rel = '%s/dfl-fme.%d' % (region_rel, card)
        self._write_fme(card, fme_rel)
        if self.sriov:
            self._write_sriov(card, parent_rel, pf_rel)
        for port in range(self.regions):
            self._write_pr_region(card, port, fme_rel, base_index)
            holder = (self._vf_region_rel(card, port, parent_rel)
                      if self.sriov else region_rel)
            self._write_port(card, port, holder)

    def _write_function(self, rel, device_id, node):
        """One PCI function's identity and locality files and its bus/pci
        link."""
        path = os.path.join(self.sys, rel)
        for name, value in (('vendor', VENDOR_ID), ('device', device_id),
                            ('class', PCI_CLASS), ('numa_node', str(node)),
                            ('local_cpulist', self._cpulist(node))):
            _write(os.path.join(path, name), value + '\n')
        _link(os.path.join(self.sys, 'bus/pci/devices',
                           os.path.basename(rel)), '../../../' + rel)

    def _write_sriov(self, card, parent_rel, pf_rel):
        """The PF's SR-IOV files and one VF per port, linked both ways."""
        pf = os.path.join(self.sys, pf_rel)
        # sriov_totalvfs/sriov_numvfs are "%u\n" (drivers/pci/iov.c).
        _write(os.path.join(pf, 'sriov_totalvfs'), '%d\n' % self.regions)
        _write(os.path.join(pf, 'sriov_numvfs'), '%d\n' % self.regions)
        for vf in range(self.regions):
            vf_address = _address(card, vf + 1)
            self._write_function('%s/%s' % (parent_rel, vf_address),
                                 VF_DEVICE_ID, self.node_of(card))
            _link(os.path.join(pf, 'virtfn%d' % vf), '../' + vf_address)
            _link(os.path.join(self.sys, parent_rel, vf_address, 'physfn'),
                  '../' + _address(card, 0))

    def _vf_region_rel(self, card, port, parent_rel):
        """The base region of the VF hosting ``port``; region numbers
        after every PF's, as VFs are enabled after the PFs probed."""
        index = (self.num_cards * (self.regions + 1) +
                 card * self.regions + port)
        rel = '%s/%s/fpga_region/region%d' % (parent_rel,
                                              _address(card, port + 1), index)
        _link(os.path.join(self.sys, 'class/fpga_region',
                           'region%d' % index), '../../' + rel)
        return rel

    def _write_fme(self, card, fme_rel):
        fme = os.path.join(self.sys, fme_rel)
        _write(os.path.join(fme, 'ports_num'), '%d\n' % self.regions)
        _write(os.path.join(fme, 'bitstream_id'), '0x23000410010309\n')
        manager_rel = '%s/dfl-fme-mgr.%d/fpga_manager/fpga%d' % (
            fme_rel, card, card)
        manager = os.path.join(self.sys, manager_rel)
        _write(os.path.join(manager, 'name'), 'DFL FME FPGA Manager\n')
        _write(os.path.join(manager, 'state'), 'operating\n')
        _write(os.path.join(manager, 'status'), '')
        _link(os.path.join(self.sys, 'class/fpga_manager',
                           'fpga%d' % card), '../../' + manager_rel)
        _write(os.path.join(self.dev, 'dfl-fme.%d' % card), '')

    def _write_pr_region(self, card, port, fme_rel, base_index):
        global_port = card * self.regions + port
        pr_index = base_index + 1 + port
        pr_rel = '%s/dfl-fme-region.%d/fpga_region/region%d' % (
            fme_rel, global_port, pr_index)
        region_type = self.region_types[global_port %
                                        len(self.region_types)]
        _write(os.path.join(self.sys, pr_rel, 'compat_id'),
               region_type + '\n')
        _link(os.path.join(self.sys, 'class/fpga_region',
                           'region%d' % pr_index), '../../' + pr_rel)

    def _write_port(self, card, port, holder_rel):
        global_port = card * self.regions + port
        port_dir = os.path.join(self.sys, holder_rel,
                                'dfl-port.%d' % global_port)
        _write(os.path.join(port_dir, 'id'), '%d\n' % port)
        _write(os.path.join(port_dir, 'afu_id'),
               self.initial_function_id + '\n')
        _write(os.path.join(self.dev, 'dfl-port.%d' % global_port), '')


# A healthy PCIe link of an Intel PAC (Gen3 x8), as pci-sysfs.c prints it.
PCI_HEALTH_FILES = {
    'current_link_speed': '8.0 GT/s PCIe\n',
    'max_link_speed': '8.0 GT/s PCIe\n',
    'current_link_width': '8\n',
    'max_link_width': '8\n',
}
# aer_dev_* as drivers/pci/pcie/aer.c prints them: named bits, the total.
AER_CORRECTABLE = ('RxErr', 'BadTLP', 'BadDLLP', 'Rollover', 'Timeout',
                   'NonFatalErr', 'CorrIntErr', 'HeaderOF')
AER_UNCORRECTABLE = ('Undefined', 'DLP', 'SDES', 'TLP', 'FCP', 'CmpltTO',
                     'CmpltAbrt', 'UnxCmplt', 'RxOF', 'MalfTLP', 'ECRC',
                     'UnsupReq', 'ACSViol', 'UncorrIntErr', 'BlockedTLP',
                     'AtomicOpBlocked', 'TLPBlockedErr', 'PoisonTLPBlocked')


def aer_text(names, total_name, total=0):
    """An aer_dev_* file's text with every count 0 but the total."""
    return ''.join('%s 0\n' % name for name in names) + \
        '%s %d\n' % (total_name, total)


def aer_files():
    """{aer_dev_* name: its text with every count 0}."""
    return {name: aer_text(names, total) for name, names, total in (
        ('aer_dev_correctable', AER_CORRECTABLE, 'TOTAL_ERR_COR'),
        ('aer_dev_fatal', AER_UNCORRECTABLE, 'TOTAL_ERR_FATAL'),
        ('aer_dev_nonfatal', AER_UNCORRECTABLE, 'TOTAL_ERR_NONFATAL'))}


def write_pci_health(function_dir):
    """A PCI function's link and AER files, unless it has them."""
    _write_group(function_dir, dict(PCI_HEALTH_FILES, **aer_files()))


def bind_driver(sys_root, function, driver):
    """Point the function's ``driver`` link at bus/pci/drivers/<driver>,
    with that driver's link back, as binding does (replacing a link to
    another driver and its link back)."""
    address = os.path.basename(function)
    link = os.path.join(function, 'driver')
    drivers = os.path.join(sys_root, 'bus', 'pci', 'drivers')
    if os.path.lexists(link):
        old = os.path.join(drivers, os.path.basename(os.readlink(link)),
                           address)
        if os.path.lexists(old):
            os.unlink(old)
        os.unlink(link)
    here = os.path.join(drivers, driver)
    os.makedirs(here, exist_ok=True)
    _link(link, os.path.relpath(here, function))
    _link(os.path.join(here, address), os.path.relpath(function, here))


# The FME's health files (sysfs-platform-dfl-fme): error registers clear,
# 40 °C (throttling at 90, full at 100), 24 W (throttling at 65).
FME_ERROR_FILES = ('catfatal_errors', 'nonfatal_errors', 'pcie0_errors',
                   'pcie1_errors', 'fme_errors', 'first_error', 'next_error',
                   'inject_errors')
THERMAL_FILES = {'name': 'dfl_fme_thermal', 'temp1_input': '40000',
                 'temp1_max': '90000', 'temp1_crit': '100000',
                 'temp1_emergency': '105000', 'temp1_max_alarm': '0',
                 'temp1_crit_alarm': '0', 'temp1_max_policy': '0'}
POWER_FILES = {'name': 'dfl_fme_power', 'power1_input': '24000000',
               'power1_max': '65000000', 'power1_crit': '70000000',
               'power1_max_alarm': '0', 'power1_crit_alarm': '0'}


def write_fme_health(fme_dir, card):
    """An FME's error registers and hwmon devices, unless it has them."""
    _write_group(os.path.join(fme_dir, 'errors'),
                 dict.fromkeys(FME_ERROR_FILES, '0x0\n'))
    for index, files in ((2 * card, THERMAL_FILES),
                         (2 * card + 1, POWER_FILES)):
        hwmon = os.path.join(fme_dir, 'hwmon', 'hwmon%d' % index)
        _write_group(hwmon, {name: value + '\n'
                             for name, value in files.items()})


def _address(card, devfn):
    """PCI address of function ``devfn`` on the card's bus: the PF is
    devfn 0, VF N is devfn N + 1 (offset 1, stride 1, as on a PAC)."""
    return '0000:%02x:%02x.%d' % (FIRST_BUS + card, devfn >> 3, devfn & 7)


def image_function_id(image_path, region_type):
    """The function an image loads; refuses one made for another region."""
    try:
        header = bitstream_formats.parse(image_path)
        with open(image_path, 'rb') as f:
            digest = hashlib.sha256()
            for chunk in iter(lambda: f.read(1 << 20), b''):
                digest.update(chunk)
    except OSError as e:
        raise exception.ProgrammingError(
            reason='cannot read image %s: %s' % (image_path, e.strerror))
    except exception.Invalid as e:
        raise exception.ProgrammingError(reason=e.format_message())
    if header.region_type and header.region_type != region_type:
        raise exception.ProgrammingError(
            reason='image interface id %s does not match region type %s'
            % (header.region_type, region_type))
    return header.function_id or digest.hexdigest()[:32]


class FakeDriver(base.Driver, base.DiscoveryInterface,
                 base.ProgrammingInterface, base.CleaningInterface,
                 base.ContainerDevicesInterface, base.HostTopologyInterface,
                 base.HealthInterface):
    """Simulated DFL cards; programs for real in the simulated tree."""

    def __init__(self, conf):
        super().__init__(conf)
        group = conf.fake_driver
        self.tree = SimulatedTree(group.state_dir, group.num_cards,
                                  group.regions_per_card, group.region_types,
                                  group.initial_function_id, group.sriov,
                                  group.numa_nodes)
        self.local_memory_mb = group.local_memory_mb
        self.whole_card = group.whole_card
        self.program_delay = group.program_delay
        # How the simulated write takes program_delay seconds; a test
        # replaces it to hold a long write open without sleeping.
        self.program_wait = time.sleep
        self.fail_program = group.fail_program
        self.fail_regions = set(group.fail_program_regions)
        self.clean_delay = group.clean_delay
        self.fail_clean = group.fail_clean
        self.fail_clean_regions = set(group.fail_clean_regions)
        self.scrub_function_id = group.scrub_function_id
        self.correctable_step = conf.health.correctable_errors_per_scan
        self._cards = []

    def _ensure_tree(self):
        try:
            self.tree.ensure()
        except OSError as e:
            raise exception.DriverError(
                driver=self.name or 'fake',
                reason='cannot build the simulated tree in %s: %s'
                % (self.tree.root, e))

    def discover(self):
        self._ensure_tree()
        places = topology.Reader(self.tree.sys)
        self._cards = dfl.scan_cards(self.tree.sys)
        return [dfl.card_to_record(card, self.local_memory_mb,
                                   {'simulated': True}, places,
                                   whole_card=self.whole_card)
                for card in self._cards]

    def read_health(self, devices, missing):
        return dfl.read_signals(self._cards, devices, missing, self.tree.sys,
                                self.correctable_step)

    def numa_nodes(self):
        self._ensure_tree()
        return topology.Reader(self.tree.sys).numa_nodes()

    def loaded_function(self, identity, region_name):
        self._ensure_tree()
        _card, port = dfl.find_port(self.tree.sys, identity, region_name)
        return dfl.read_afu_id(port.port_dir)

    def device_nodes(self, identity, deployable_name, attach_info=None):
        self._ensure_tree()
        return dfl.port_device_nodes(self.tree.sys, self.tree.dev, identity,
                                     deployable_name)

    def program(self, identity, region_name, image_path):
        self._ensure_tree()
        try:
            _card, port = dfl.find_port(self.tree.sys, identity, region_name)
        except exception.DriverError as e:
            raise exception.ProgrammingError(reason=e.format_message())
        function_id = image_function_id(image_path, port.region_type)
        self.program_wait(self.program_delay)
        if self._fails(identity, region_name):
            raise exception.ProgrammingError(
                reason='simulated failure programming %s %s (failure '
                       'injection)' % (identity, region_name))
        atomic_write(os.path.join(port.port_dir, 'afu_id'),
                     function_id + '\n')
        LOG.info('Simulated programming of %s %s: AFU %s', identity,
                 region_name, function_id)

    def clean(self, identity, deployable_name):
        if deployable_name == dfl.WHOLE_CARD_NAME:
            # Its regions are wiped each on its own: the card's release
            # sends them to cleaning with it (db/cleaning.release).
            return
        self._ensure_tree()
        try:
            _card, port = dfl.find_port(self.tree.sys, identity,
                                        deployable_name)
        except exception.DriverError as e:
            raise exception.CleaningError(reason=e.format_message())
        time.sleep(self.clean_delay)
        if self.fail_clean or '%s/%s' % (
                identity, deployable_name) in self.fail_clean_regions:
            raise exception.CleaningError(
                reason='simulated failure cleaning %s %s (failure '
                       'injection)' % (identity, deployable_name))
        atomic_write(self._memory_path(port), '')
        if self.scrub_function_id:
            atomic_write(os.path.join(port.port_dir, 'afu_id'),
                         self.scrub_function_id + '\n')
        LOG.info('Simulated cleaning of %s %s', identity, deployable_name)

    def local_memory_path(self, identity, region_name):
        """The file standing for a region's on-card memory."""
        self._ensure_tree()
        _card, port = dfl.find_port(self.tree.sys, identity, region_name)
        return self._memory_path(port)

    def _memory_path(self, port):
        path = os.path.join(self.tree.root, 'local_memory',
                            os.path.basename(port.port_dir))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def _fails(self, identity, region_name):
        return self.fail_program or \
            '%s/%s' % (identity, region_name) in self.fail_regions
