"""Generic PCI accelerators from <sysfs>/bus/pci/devices.

A function is reported when its class code is an accelerator class
(processing accelerator 0x12, co-processor 0x0b40: any vendor), or a
display class (VGA 0x0300, 3D controller 0x0302) and its vendor or
vendor:device is allow-listed, so the on-board VGA chip of a server is
never offered as an accelerator. VFs (functions with a ``physfn`` link)
are not cards of their own: they are the attach handles of their PF.
"""
import logging
import os

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import health
from cyborg_lite.drivers import base
from cyborg_lite.drivers import pci_health
from cyborg_lite.drivers import sysfs
from cyborg_lite.drivers import topology

LOG = logging.getLogger(__name__)


def class_matches(class_code, patterns):
    """True if the 24-bit class code matches a 0xBB or 0xBBSS pattern."""
    for pattern in patterns:
        value = int(pattern, 16)
        digits = len(pattern) - 2
        if digits <= 2 and class_code >> 16 == value:
            return True
        if digits > 2 and class_code >> 8 == value:
            return True
    return False


def id_listed(vendor, device, entries):
    """True if '0xVVVV' or '0xVVVV:0xDDDD' in entries names this function."""
    wanted = {'0x%04x' % vendor, '0x%04x:0x%04x' % (vendor, device)}
    return any(entry.lower() in wanted for entry in entries)


class PciFunction:
    """The attributes of one PCI function the driver needs."""

    def __init__(self, path):
        self.path = path
        self.address = os.path.basename(path)
        self.class_code = sysfs.read_hex_int(os.path.join(path, 'class'), 24)
        self.vendor = sysfs.read_hex_int(os.path.join(path, 'vendor'), 16)
        self.device = sysfs.read_hex_int(os.path.join(path, 'device'), 16)
        if None in (self.class_code, self.vendor, self.device):
            raise exception.HostDataError(
                where=path, reason='class, vendor or device file missing')
        self.is_vf = os.path.exists(os.path.join(path, 'physfn'))

    def board_info(self):
        info = {'vendor_id': '0x%04x' % self.vendor,
                'device_id': '0x%04x' % self.device,
                'class': '0x%06x' % self.class_code}
        for name in ('subsystem_vendor', 'subsystem_device'):
            value = sysfs.read_hex_int(os.path.join(self.path, name), 16)
            if value is not None:
                info[name] = '0x%04x' % value
        numa = sysfs.read_int(os.path.join(self.path, 'numa_node'), -1, 4095)
        if numa is not None and numa >= 0:
            info['numa_node'] = numa
        driver = os.path.join(self.path, 'driver')
        if os.path.exists(driver):
            info['kernel_driver'] = os.path.basename(os.path.realpath(driver))
        return info


class PciDriver(base.Driver, base.DiscoveryInterface,
                topology.SysfsHostTopology, base.HealthInterface):
    """PCI accelerators by class code and vendor/device allow-list; health
    from each function's AER counters and link (drivers/pci_health.py)."""

    def __init__(self, conf):
        super().__init__(conf)
        group = conf.pci_driver
        self.sysfs_root = group.sysfs_root
        self.correctable_step = conf.health.correctable_errors_per_scan
        self.devices_dir = os.path.join(group.sysfs_root, 'bus', 'pci',
                                        'devices')
        self.accelerator_classes = group.accelerator_classes
        self.display_classes = group.display_classes
        self.allowed_ids = group.allowed_ids
        self.ignored_ids = group.ignored_ids

    def discover(self):
        if not os.path.isdir(self.devices_dir):
            return []
        try:
            addresses = sorted(os.listdir(self.devices_dir))
        except OSError as e:
            raise exception.DriverError(driver=self.name or 'pci',
                                        reason='cannot list %s: %s'
                                        % (self.devices_dir, e))
        records = []
        places = topology.Reader(self.sysfs_root)
        for address in addresses:
            if not sysfs.PCI_ADDRESS_RE.fullmatch(address):
                continue
            try:
                record = self._record(os.path.join(self.devices_dir,
                                                   address), places)
            except exception.HostDataError as e:
                LOG.warning('Skipping PCI function %s: %s', address, e)
                continue
            if record is not None:
                records.append(record)
        return records

    def read_health(self, devices, missing):
        signals = {}
        for record in devices:
            # NOTE: GPUs lower their link speed when idle: width only.
            signals[record.identity] = health.Signals(
                pci_health.function_readings(
                    self.sysfs_root, record.pci_address,
                    check_speed=record.type != 'GPU',
                    correctable_step=self.correctable_step))
        for record in missing:
            gone = pci_health.vanished(self.sysfs_root, record.pci_address)
            if gone is not None:
                signals[record.identity] = health.Signals([gone])
        return signals

    def _wanted(self, function):
        if function.is_vf or id_listed(function.vendor, function.device,
                                       self.ignored_ids):
            return False
        if class_matches(function.class_code, self.accelerator_classes):
            return True
        return class_matches(function.class_code, self.display_classes) \
            and id_listed(function.vendor, function.device,
                          self.allowed_ids)

    def _record(self, path, places):
        function = PciFunction(path)
        if not self._wanted(function):
            return None
        is_gpu = function.class_code >> 16 == 0x03
        return device_records.DeviceRecord(
            type='GPU' if is_gpu else 'PCI',
            vendor='0x%04x' % function.vendor,
            model='PCI %04x:%04x' % (function.vendor, function.device),
            identity=function.address, pci_address=function.address,
            std_board_info=function.board_info(),
            deployables=[_deployable(function, is_gpu)],
            topology=places.pci(function.address))


def _deployable(function, is_gpu):
    """The whole function; its VFs are the handles when SR-IOV is on."""
    vfs = sysfs.virtual_functions(os.path.realpath(function.path))
    addresses = vfs or [function.address]
    resource_class = 'PGPU' if is_gpu else 'CUSTOM_PCI_%04X_%04X' % (
        function.vendor, function.device)
    return device_records.DeployableRecord(
        name='pgpu' if is_gpu else 'pf', resource_class=resource_class,
        num_accelerators=len(addresses),
        traits=['CUSTOM_PCI_VENDOR_%04X' % function.vendor],
        attach_handles=[device_records.AttachHandleRecord(
            attach_type='PCI', attach_info=sysfs.pci_attach_info(a))
            for a in addresses])
