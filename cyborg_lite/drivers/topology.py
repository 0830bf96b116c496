"""Reads where PCI functions sit and the host's NUMA nodes from a sysfs
tree (the words are common/topology.py's).

``Reader(sysfs_root)`` reads each CPU's socket at most once per scan, so
a driver makes one per ``discover``::

    reader = topology.Reader('/sys')
    record.topology = reader.pci('0000:5e:00.0')   # TopologyRecord
    nodes = reader.numa_nodes()                    # the host's, checked

A value the kernel would never write raises HostDataError, as every
sysfs reader does (drivers/sysfs.py); an absent file is an unknown value.
"""
import os
import re

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import topology
from cyborg_lite.drivers import base
from cyborg_lite.drivers import sysfs


class Reader:
    def __init__(self, sysfs_root):
        self.root = sysfs_root
        self._sockets = {}

    def _cpulist(self, path):
        text = sysfs.read_text(path)
        if text is None:
            return None, []
        try:
            return text, topology.parse_cpulist(text, path)
        except exception.Invalid as e:
            raise exception.HostDataError(where=path,
                                          reason=e.kwargs.get('reason'))

    def cpu_socket(self, cpu):
        """The CPU's physical_package_id, or None."""
        if cpu not in self._sockets:
            self._sockets[cpu] = sysfs.read_int(
                os.path.join(self.root, 'devices', 'system', 'cpu',
                             'cpu%d' % cpu, 'topology',
                             'physical_package_id'),
                0, topology.MAX_SOCKETS - 1)
        return self._sockets[cpu]

    def socket_of(self, cpus):
        """The one socket every CPU of ``cpus`` is on, or None (none
        given, one unknown, or several sockets: a device without NUMA
        affinity lists every CPU as local)."""
        sockets = {self.cpu_socket(cpu) for cpu in cpus}
        if len(sockets) != 1 or None in sockets:
            return None
        return sockets.pop()

    def pcie_root(self, address):
        """``pciDDDD:BB`` of the function's real path, or None when it is
        not under <root>/devices (a fixture without the tree)."""
        link = os.path.join(self.root, 'bus', 'pci', 'devices', address)
        real = os.path.realpath(link)
        devices = os.path.realpath(os.path.join(self.root, 'devices'))
        if not real.startswith(devices + os.sep) or \
                os.path.basename(real) != address:
            return None
        first = os.path.relpath(real, devices).split(os.sep)[0]
        if not topology.PCIE_ROOT_RE.fullmatch(first):
            raise exception.HostDataError(where=link, reason='PCIe root %r '
                                          'is not pciDDDD:BB' % first)
        return first

    def pci(self, address):
        """The TopologyRecord of the PCI function ``address``."""
        path = os.path.join(self.root, 'bus', 'pci', 'devices', address)
        numa = sysfs.read_int(os.path.join(path, 'numa_node'), -1,
                              topology.MAX_NUMA_NODES - 1)
        cpulist, cpus = self._cpulist(os.path.join(path, 'local_cpulist'))
        return device_records.TopologyRecord(
            numa_node=numa if numa is not None and numa >= 0 else None,
            local_cpulist=cpulist, socket=self.socket_of(cpus),
            pcie_root=self.pcie_root(address), pci_bus_id=address)

    def numa_nodes(self):
        """The host's NUMA nodes (common/topology.NODE_KEYS), [] where
        sysfs has none; HostDataError when they do not add up."""
        node_dir = os.path.join(self.root, 'devices', 'system', 'node')
        numbers = sorted(int(m.group(1)) for name in sysfs.list_dir(node_dir)
                         for m in [re.fullmatch(r'node([0-9]{1,4})', name)]
                         if m)
        nodes = []
        for number in numbers:
            here = os.path.join(node_dir, 'node%d' % number)
            cpulist, cpus = self._cpulist(os.path.join(here, 'cpulist'))
            distances = sysfs.read_text(os.path.join(here, 'distance'))
            if distances is None or \
                    not re.fullmatch(r'[0-9]{1,3}( [0-9]{1,3})*', distances):
                raise exception.HostDataError(
                    where=os.path.join(here, 'distance'),
                    reason='expected distances separated by spaces, got %r'
                    % (distances or '')[:40])
            nodes.append({'node': number, 'cpulist': cpulist or '',
                          'socket': self.socket_of(cpus),
                          'distances': [int(d) for d in distances.split()]})
        try:
            return topology.check_numa_nodes(nodes, node_dir)
        except exception.Invalid as e:
            raise exception.HostDataError(where=node_dir,
                                          reason=e.kwargs.get('reason'))


class SysfsHostTopology(base.HostTopologyInterface):
    """HostTopologyInterface of a driver reading ``self.sysfs_root``."""

    sysfs_root = '/sys'

    def numa_nodes(self):
        return Reader(self.sysfs_root).numa_nodes()
