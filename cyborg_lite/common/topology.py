"""NUMA and PCIe topology: the words, their validation, and the one
derived fact every consumer shares (pure, no I/O).

What the kernel shows (Documentation/ABI/stable/sysfs-bus-pci,
sysfs-devices-node, sysfs-devices-system-cpu):

- a PCI function's ``numa_node`` (``-1``: the platform gave none) and
  ``local_cpulist`` (the CPUs local to it, a cpulist such as
  ``0-19,40-59``);
- the PCIe root of a function: the first directory under
  ``/sys/devices`` of its real path, ``pciDDDD:BB``;
- per NUMA node ``nodeN/cpulist`` and ``nodeN/distance`` (the node's row
  of the ACPI SLIT, one distance per node, 10 to itself);
- per CPU ``topology/physical_package_id``: its socket.

A host's NUMA nodes travel and are stored as a list of plain dicts
(``NODE_KEYS``)::

    [{"node": 0, "cpulist": "0-19,40-59", "socket": 0,
      "distances": [10, 21]}, ...]

``numa_node_list`` is KEP-6072's list form of the standard attribute
``resource.kubernetes.io/numaNode`` (k8s.io/dynamic-resource-allocation
deviceattribute, numa_linux.go): the device's node first, then, in
ascending order, the nodes at the smallest distance from it other than
its own, except those whose socket is known and differs. Those nodes are
equally near; they are not ranked by distance.
"""
import re

from cyborg_lite.common import exception

# Linux's MAX_NUMNODES is at most 1 << 10 (CONFIG_NODES_SHIFT <= 10), the
# bound the deviceattribute helpers use too.
MAX_NUMA_NODES = 1024
MAX_CPUS = 1 << 16
MAX_SOCKETS = 1 << 16
# ACPI SLIT entries are one byte; 255 means unreachable.
MAX_DISTANCE = 255
# "0-19,40-59": ranges and single CPUs, ascending, as the kernel prints
# (bitmap_print_to_pagebuf with a list). A page at most.
CPULIST_RE = re.compile(r'[0-9]{1,5}(-[0-9]{1,5})?(,[0-9]{1,5}(-[0-9]{1,5})?)*')
MAX_CPULIST = 4095
# pci<domain>:<bus>; VMD and some hosts have 5- to 8-digit domains.
PCIE_ROOT_RE = re.compile(r'pci[0-9a-f]{4,8}:[0-9a-f]{2}')
NODE_KEYS = ('node', 'cpulist', 'socket', 'distances')


def _fail(where, reason):
    raise exception.Invalid(reason='%s: %s' % (where, reason))


def parse_cpulist(text, where='cpulist'):
    """[cpu, ...] ascending of a kernel cpulist; [] for ''; Invalid for
    anything the kernel would not write (descending ranges, repeats,
    absurd numbers)."""
    if text == '':
        return []
    if not isinstance(text, str) or len(text) > MAX_CPULIST or \
            not CPULIST_RE.fullmatch(text):
        _fail(where, 'not a cpulist such as 0-19,40-59: %r' % (text,))
    cpus = []
    for part in text.split(','):
        first, _, last = part.partition('-')
        low, high = int(first), int(last or first)
        if high < low or high >= MAX_CPUS or (cpus and low <= cpus[-1]):
            _fail(where, 'ranges must ascend without overlap, below %d: '
                  '%r' % (MAX_CPUS, text))
        cpus.extend(range(low, high + 1))
    return cpus


def _check_number(value, where, bound, what):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or \
            not 0 <= value < bound:
        _fail(where, 'must be %s from 0 to %d or null, got %r'
              % (what, bound - 1, value))
    return value


def check_numa_node(value, where):
    """A node number or None; Invalid otherwise (integers only)."""
    return _check_number(value, where, MAX_NUMA_NODES, 'a NUMA node')


def check_socket(value, where):
    return _check_number(value, where, MAX_SOCKETS,
                         'a socket (physical_package_id)')


def check_pcie_root(value, where):
    if value is None:
        return None
    if not isinstance(value, str) or not PCIE_ROOT_RE.fullmatch(value):
        _fail(where, 'must look like pci0000:5d or be null, got %r'
              % (value,))
    return value


def check_numa_nodes(nodes, where='numa_nodes'):
    """A host's NUMA nodes (the list of dicts above), checked whole: each
    node once, ascending, each row of distances as long as the list of
    nodes is (the kernel prints one per online node) with 10 to itself.
    Returns a new list of new dicts."""
    if not isinstance(nodes, list) or len(nodes) > MAX_NUMA_NODES:
        _fail(where, 'must be a list of at most %d nodes' % MAX_NUMA_NODES)
    checked = []
    for index, node in enumerate(nodes):
        here = '%s[%d]' % (where, index)
        if not isinstance(node, dict) or set(node) != set(NODE_KEYS):
            _fail(here, 'must be an object with exactly %s'
                  % ', '.join(NODE_KEYS))
        number = check_numa_node(node['node'], here + '.node')
        if number is None or (checked and number <= checked[-1]['node']):
            _fail(here + '.node', 'nodes must be given once each, '
                  'ascending')
        parse_cpulist(node['cpulist'], here + '.cpulist')
        distances = node['distances']
        if not isinstance(distances, list) or len(distances) != len(nodes) \
                or not all(isinstance(d, int) and not isinstance(d, bool)
                           and 0 < d <= MAX_DISTANCE for d in distances):
            _fail(here + '.distances', 'must be %d distances from 1 to %d'
                  % (len(nodes), MAX_DISTANCE))
        checked.append({'node': number, 'cpulist': node['cpulist'],
                        'socket': check_socket(node['socket'],
                                               here + '.socket'),
                        'distances': list(distances)})
    for node in checked:
        if node['distances'][_position(checked, node['node'])] != 10:
            _fail(where, 'node %d is not at distance 10 from itself'
                  % node['node'])
    return checked


def _position(nodes, number):
    for index, node in enumerate(nodes):
        if node['node'] == number:
            return index
    return None


def numa_node_list(numa_node, nodes):
    """KEP-6072's list form for a device on ``numa_node``, given the
    host's ``nodes`` (checked as above): [numa_node] alone when the host's
    distances are unknown or name no other node."""
    index = _position(nodes, numa_node)
    if index is None:
        return [numa_node]
    row = nodes[index]['distances']
    others = [d for i, d in enumerate(row) if i != index]
    if not others:
        return [numa_node]
    nearest = min(others)
    socket = nodes[index]['socket']
    peers = sorted(
        node['node'] for i, node in enumerate(nodes)
        if i != index and row[i] == nearest and
        (socket is None or node['socket'] is None or
         node['socket'] == socket))
    return [numa_node] + peers
