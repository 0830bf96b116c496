"""Network-function accelerators (SmartNICs) as SR-IOV VFs for Neutron ports.

An FPGA SmartNIC (Intel PAC N3000 class: an FPGA in front of XL710 NICs)
or any SR-IOV NIC running a network function is offered the way
OpenStack Cyborg's Intel NIC driver offers it, so that Nova can plug a
Neutron port of vnic type ``accelerator-direct`` into one of its VFs:

* the operator names the physical functions and their physical network
  (``[sriov_nic_driver] physical_device_mappings``) and, optionally, the
  network function each runs (``function_device_mappings``): PCI
  addresses rather than Cyborg's interface names, as the PF's netdev
  name can change with the kernel driver and is gone with DPDK;
* each PF is a ``NIC`` device with one ``vfs`` deployable of resource
  class ``CUSTOM_NIC``, one accelerator per enabled VF, traits
  ``CUSTOM_VF``, ``CUSTOM_<FUNCTION>`` and ``CUSTOM_<PHYSNET>`` (Cyborg's
  spelling, so Cyborg device profiles work unchanged);
* each VF is a PCI attach handle whose info carries
  ``physical_network``: ``nova.accelerator.cyborg.
  get_arq_pci_device_profile`` reads it (with domain/bus/device/function)
  to build the port's binding profile.

A PF with no VFs enabled is reported without deployables: Nova attaches
these ports as VFs only (``accelerator-direct-physical`` is refused).
"""
import logging
import os
import re

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import health
from cyborg_lite.drivers import base
from cyborg_lite.drivers import pci
from cyborg_lite.drivers import pci_health
from cyborg_lite.drivers import sysfs
from cyborg_lite.drivers import topology

LOG = logging.getLogger(__name__)

RESOURCE_CLASS = 'CUSTOM_NIC'
DEPLOYABLE_NAME = 'vfs'
# Function names become traits: the same characters as a physnet name.
FUNCTION_NAME_RE = device_records.PHYSNET_RE
# Names of NIC PFs seen on FPGA SmartNICs and in Cyborg's NIC driver.
KNOWN_NICS = {
    (0x8086, 0x0d58): 'Intel PAC N3000 XL710 25G',
    (0x8086, 0x0cf8): 'Intel PAC N3000 XL710 10G',
    (0x8086, 0x158b): 'Intel Ethernet XXV710 25G',
    (0x8086, 0x1572): 'Intel Ethernet X710 10G',
}


def trait_for(name):
    """Cyborg's trait for a function or physnet name: CUSTOM_ + upper."""
    return 'CUSTOM_' + re.sub(r'[^A-Z0-9]', '_', name.upper())


def parse_mappings(entries, option, name_re):
    """{PF address: name} from '<name>:<addr>|<addr>' entries, or raises.

    :raises exception.ConfigError: a malformed name or address, a name
        given twice, or one PF in two entries.
    """
    by_address, names = {}, set()
    for entry in entries:
        name, _sep, addresses = entry.partition(':')
        if not name_re.fullmatch(name) or name in names:
            raise exception.ConfigError(
                reason='%s: %r is not a valid name or is given twice'
                % (option, name))
        names.add(name)
        for address in addresses.split('|'):
            address = address.lower()
            if not sysfs.PCI_ADDRESS_RE.fullmatch(address):
                raise exception.ConfigError(
                    reason='%s: %r is not a PCI address like 0000:1b:00.0'
                    % (option, address))
            if address in by_address:
                raise exception.ConfigError(
                    reason='%s: %s is mapped to both %s and %s'
                    % (option, address, by_address[address], name))
            by_address[address] = name
    return by_address


class SriovNicDriver(base.Driver, base.DiscoveryInterface,
                     topology.SysfsHostTopology, base.HealthInterface):
    """The configured SmartNIC PFs and their VFs, with physical network;
    health from each PF's AER counters and link."""

    def __init__(self, conf):
        super().__init__(conf)
        group = conf.sriov_nic_driver
        self.sysfs_root = group.sysfs_root
        self.correctable_step = conf.health.correctable_errors_per_scan
        self.devices_dir = os.path.join(group.sysfs_root, 'bus', 'pci',
                                        'devices')
        self.physnets = parse_mappings(group.physical_device_mappings,
                                       'physical_device_mappings',
                                       device_records.PHYSNET_RE)
        self.functions = parse_mappings(group.function_device_mappings,
                                        'function_device_mappings',
                                        FUNCTION_NAME_RE)
        unmapped = sorted(set(self.functions) - set(self.physnets))
        if unmapped:
            raise exception.ConfigError(
                reason='function_device_mappings names %s, which '
                       'physical_device_mappings does not: a VF without a '
                       'physical network cannot back a Neutron port'
                       % ', '.join(unmapped))

    def discover(self):
        records = []
        places = topology.Reader(self.sysfs_root)
        for address in sorted(self.physnets):
            path = os.path.join(self.devices_dir, address)
            if not os.path.isdir(path):
                LOG.warning('SR-IOV NIC %s is configured but not on this '
                            'host', address)
                continue
            try:
                records.append(self._record(path, places))
            except exception.HostDataError as e:
                LOG.warning('Skipping SR-IOV NIC %s: %s', address, e)
        return records

    def read_health(self, devices, missing):
        signals = {}
        for record in devices:
            readings = pci_health.function_readings(
                self.sysfs_root, record.pci_address,
                correctable_step=self.correctable_step)
            if record.health != 'healthy':
                readings.append(health.Condition(
                    'sriov_numvfs', record.health, record.health_reason))
            signals[record.identity] = health.Signals(readings)
        return pci_health.add_vanished(self.sysfs_root, missing, signals)

    def _record(self, path, places):
        function = pci.PciFunction(path)
        if function.is_vf:
            raise exception.HostDataError(
                where=path, reason='a VF, not a physical function: name '
                                   'its PF in physical_device_mappings')
        real = os.path.realpath(path)
        vfs = sysfs.virtual_functions(real)
        numvfs = sysfs.read_int(os.path.join(real, 'sriov_numvfs'))
        totalvfs = sysfs.read_int(os.path.join(real, 'sriov_totalvfs'))
        state, why = 'healthy', None
        if numvfs is not None and numvfs != len(vfs):
            why = 'sriov_numvfs is %d but %d virtfn links are there' % (
                numvfs, len(vfs))
            LOG.warning('SR-IOV NIC %s: %s', function.address, why)
            state = 'degraded'
        if not vfs:
            LOG.warning('SR-IOV NIC %s has no VFs enabled: nothing to '
                        'offer (echo N > sriov_numvfs)', function.address)
        return device_records.DeviceRecord(
            type='NIC', vendor='0x%04x' % function.vendor,
            model=KNOWN_NICS.get((function.vendor, function.device),
                                 'PCI %04x:%04x' % (function.vendor,
                                                    function.device)),
            identity=function.address, pci_address=function.address,
            health=state, health_reason=why,
            std_board_info=function.board_info(),
            vendor_board_info={'sriov_totalvfs': totalvfs or 0,
                               'sriov_numvfs': numvfs or 0},
            deployables=[self._vfs(function.address, vfs)] if vfs else [],
            topology=places.pci(function.address))

    def _vfs(self, pf_address, vfs):
        physnet = self.physnets[pf_address]
        function_name = self.functions.get(pf_address)
        traits = ['CUSTOM_VF']
        if function_name:
            traits.append(trait_for(function_name))
        traits.append(trait_for(physnet))
        return device_records.DeployableRecord(
            name=DEPLOYABLE_NAME, resource_class=RESOURCE_CLASS,
            num_accelerators=len(vfs), function_name=function_name,
            traits=traits, attributes={'physical_network': physnet},
            attach_handles=[_vf_handle(vf, physnet) for vf in vfs])


def _vf_handle(address, physnet):
    return device_records.AttachHandleRecord(
        attach_type='PCI', attach_info=dict(sysfs.pci_attach_info(address),
                                            physical_network=physnet))
