"""The device report: the records an agent sends and a conductor accepts.

These plain records are the contract between the two sides. A driver
builds them from what a host shows; the agent sends them as dicts
(``to_dict``); the conductor rebuilds them with ``from_dict``, which
validates every field, so a malformed report from a peer is refused with
``exception.Invalid`` naming the field. Neither side's code lives here.

Attach handles and sharing
--------------------------
A handle is what a workload attaches: one PCI function (PF or VF) or one
mdev. Two handles are the same thing exactly when their ``attach_type``
and ``attach_info`` are equal (``AttachHandleRecord.key``). A driver
reports the truth:

* a card whose regions are exposed as SR-IOV VFs gives each region its
  own VF, so no two deployables share a handle;
* a card whose regions all sit behind the physical function (no VFs)
  reports that same PF handle in every region. Those sibling deployables
  are *not* independent: once one is bound, attaching another would hand
  the same PCI function to a second workload. ``DeviceRecord.
  shared_groups()`` lists such groups: the conductor keeps them
  mutually exclusive and offers each group as one accelerator.

A PCI handle's ``attach_info`` is Cyborg's (and Nova's) dict of hex
strings ``{"domain": "0000", "bus": "5e", "device": "00", "function":
"1"}``, plus ``"physical_network"`` for the VF of a network-function
accelerator (Nova's ``get_arq_pci_device_profile`` reads that key for a
Neutron port of vnic type ``accelerator-direct``).
"""
import dataclasses
import json
import re

from cyborg_lite.common import enums
from cyborg_lite.common import exception
from cyborg_lite.common import shared_functions
from cyborg_lite.common import states
from cyborg_lite.common import topology

DEVICE_TYPES = enums.DEVICE_TYPES
HEALTH_STATES = states.HEALTH.states
ATTACH_TYPES = enums.ATTACH_TYPES
PCI_ADDRESS_RE = re.compile(r'[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]')
# attach_info of a PCI handle: each part of the address, lowercase hex.
PCI_INFO_RES = {'domain': re.compile(r'[0-9a-f]{4}'),
                'bus': re.compile(r'[0-9a-f]{2}'),
                'device': re.compile(r'[0-9a-f]{2}'),
                'function': re.compile(r'[0-7]')}
# A Neutron physical network name as it appears in ml2 bridge/device
# mappings (Neutron keeps it in a 64-character column); no separators.
PHYSNET_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,63}')
# The attribute of a deployable whose instance is made at bind (its
# driver's InstanceInterface: a vGPU type written into a VF): the bind
# holds the handle, has the agent make it, then is Bound.
MAKES_INSTANCE = ('bind', 'make')
# The attribute of a deployable whose instance Kubernetes' Prepare makes
# (a MIG placement, drivers/nvidia_mig_made.py): the agent's kubelet
# plugin has its driver make it once the claim holds the handle.
PREPARE_MAKES = ('prepare', 'make')
# vgpu_type: the vGPU type a bind writes into this VF (vendor-specific
# VFIO vGPU, drivers/nvidia_vgpu_vfio.py); Nova reads the address only.
# mig_placement: the MIG profile id and start a Prepare makes on this GPU
# (drivers/nvidia_mig_made.py); each placement is a function of its own.
PCI_OPTIONAL_INFO = {'physical_network': PHYSNET_RE,
                     'vgpu_type': re.compile(r'[1-9][0-9]{0,8}'),
                     'mig_placement': re.compile(r'[0-9]{1,4}:[0-9]{1,2}')}
# Upper bound for any memory figure a report may carry (1 PiB in MiB).
MAX_MEMORY_MB = 1 << 30
MAX_ACCELERATORS = 4096


def _fail(field, reason):
    raise exception.Invalid(reason='%s: %s' % (field, reason))


def _require_str(obj, field, path, allow_none=False, max_len=255):
    value = obj.get(field)
    if value is None and allow_none:
        return None
    if not isinstance(value, str) or not value or len(value) > max_len:
        _fail('%s.%s' % (path, field),
              'must be a non-empty string of at most %d characters, got %r'
              % (max_len, value))
    return value


def _require_int(obj, field, path, low, high, default=None):
    value = obj.get(field, default)
    if isinstance(value, bool) or not isinstance(value, int) or \
            not low <= value <= high:
        _fail('%s.%s' % (path, field),
              'must be an integer from %d to %d, got %r' % (low, high, value))
    return value


def _str_dict(obj, field, path):
    value = obj.get(field) or {}
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, (str, int, float, bool))
            for k, v in value.items()):
        _fail('%s.%s' % (path, field), 'must be a flat object of scalars')
    return dict(value)


def _check_pci_info(info, path):
    """A PCI handle names one function, in the exact spelling Nova reads."""
    allowed = set(PCI_INFO_RES) | set(PCI_OPTIONAL_INFO)
    extra = sorted(set(info) - allowed)
    if extra:
        _fail(path, 'unknown keys %s (a PCI handle has %s)'
              % (extra, ', '.join(sorted(allowed))))
    patterns = dict(PCI_INFO_RES)
    patterns.update({k: v for k, v in PCI_OPTIONAL_INFO.items()
                     if k in info})
    for key, pattern in sorted(patterns.items()):
        value = info.get(key)
        if not isinstance(value, str) or not pattern.fullmatch(value):
            _fail('%s.%s' % (path, key), 'must match %s, got %r'
                  % (pattern.pattern, value))


def _health(data, path):
    health = data.get('health', 'healthy')
    if health not in HEALTH_STATES:
        _fail(path + '.health', 'must be one of %s, got %r'
              % (', '.join(HEALTH_STATES), health))
    return health


def _health_reason(data, path):
    return _require_str(data, 'health_reason', path, allow_none=True,
                        max_len=states.MAX_HEALTH_REASON)


def pci_address(attach_info):
    """'0000:5e:00.1' of a PCI handle's attach_info."""
    return '%(domain)s:%(bus)s:%(device)s.%(function)s' % attach_info


@dataclasses.dataclass
class TopologyRecord:
    """Where a PCI function sits (common/topology.py has the words):
    its NUMA node (None: the platform gave none), the CPUs local to it,
    their socket (None unless they are all on one), its PCIe root and
    its own address (the standard pciBusID)."""
    numa_node: int | None = None
    local_cpulist: str | None = None
    socket: int | None = None
    pcie_root: str | None = None
    pci_bus_id: str | None = None

    @classmethod
    def from_dict(cls, data, path='topology'):
        """None for None (a driver, or an older agent, that knows none)."""
        if data is None:
            return None
        if not isinstance(data, dict) or \
                set(data) - set(f.name for f in dataclasses.fields(cls)):
            _fail(path, 'must be an object of %s' % ', '.join(
                f.name for f in dataclasses.fields(cls)))
        cpulist = data.get('local_cpulist')
        if cpulist is not None:
            topology.parse_cpulist(cpulist, path + '.local_cpulist')
        bus_id = data.get('pci_bus_id')
        if bus_id is not None and (not isinstance(bus_id, str) or
                                   not PCI_ADDRESS_RE.fullmatch(bus_id)):
            _fail(path + '.pci_bus_id', 'must look like 0000:5e:00.0, got '
                  '%r' % (bus_id,))
        return cls(
            numa_node=topology.check_numa_node(data.get('numa_node'),
                                               path + '.numa_node'),
            local_cpulist=cpulist,
            socket=topology.check_socket(data.get('socket'),
                                         path + '.socket'),
            pcie_root=topology.check_pcie_root(data.get('pcie_root'),
                                               path + '.pcie_root'),
            pci_bus_id=bus_id)


@dataclasses.dataclass
class AttachHandleRecord:
    """What a workload attaches: a PCI function (VF/PF) or an mdev."""
    attach_type: str
    # PCI: {"domain": "0000", "bus": "5e", "device": "00", "function": "1"}
    #      (+ "physical_network" for a network function's VF)
    # MDEV: Cyborg's, what Nova's libvirt driver reads: the parent's
    #       {"domain", "bus", "device", "function"} + "asked_type"
    #       ("nvidia-35") and "vgpu_mark" ("nvidia-35_0")
    attach_info: dict

    def key(self):
        """Equal keys mean the same function: the identity of a handle."""
        return json.dumps([self.attach_type, self.attach_info],
                          sort_keys=True, separators=(',', ':'))

    @classmethod
    def from_dict(cls, data, path='attach_handle'):
        if not isinstance(data, dict):
            _fail(path, 'must be an object')
        attach_type = data.get('attach_type')
        if attach_type not in ATTACH_TYPES:
            _fail(path + '.attach_type', 'must be one of %s, got %r'
                  % (', '.join(ATTACH_TYPES), attach_type))
        info = _str_dict(data, 'attach_info', path)
        if attach_type == 'PCI':
            _check_pci_info(info, path + '.attach_info')
        return cls(attach_type=attach_type, attach_info=info)


@dataclasses.dataclass
class DeployableRecord:
    """A schedulable part of a device: an FPGA region, a GPU, a vGPU type.

    ``name`` is unique within its device (``region0``, ``pgpu``,
    ``vgpu_nvidia-35``); the conductor makes the global name from it.
    """
    name: str
    resource_class: str
    num_accelerators: int = 1
    region_type: str | None = None
    function_id: str | None = None
    function_name: str | None = None
    local_memory_mb: int = 0
    traits: list = dataclasses.field(default_factory=list)
    attributes: dict = dataclasses.field(default_factory=dict)
    attach_handles: list = dataclasses.field(default_factory=list)
    # Where the region's own PCI function sits, when it is not the
    # device's (an FPGA region behind its SR-IOV VF); None: the device's.
    topology: TopologyRecord | None = None
    # A region's own health (its port's signals), beside its device's.
    health: str = 'healthy'
    health_reason: str | None = None

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data, path='deployable'):
        if not isinstance(data, dict):
            _fail(path, 'must be an object')
        traits = data.get('traits') or []
        if not isinstance(traits, list) or not all(
                isinstance(t, str) and t for t in traits):
            _fail(path + '.traits', 'must be a list of strings')
        handles = data.get('attach_handles') or []
        if not isinstance(handles, list):
            _fail(path + '.attach_handles', 'must be a list')
        return cls(
            name=_require_str(data, 'name', path),
            resource_class=_require_str(data, 'resource_class', path),
            num_accelerators=_require_int(data, 'num_accelerators', path,
                                          0, MAX_ACCELERATORS, default=1),
            region_type=_require_str(data, 'region_type', path,
                                     allow_none=True),
            function_id=_require_str(data, 'function_id', path,
                                     allow_none=True, max_len=64),
            function_name=_require_str(data, 'function_name', path,
                                       allow_none=True),
            local_memory_mb=_require_int(data, 'local_memory_mb', path,
                                         0, MAX_MEMORY_MB, default=0),
            traits=list(traits),
            attributes=_str_dict(data, 'attributes', path),
            attach_handles=[
                AttachHandleRecord.from_dict(h, '%s.attach_handles[%d]'
                                             % (path, i))
                for i, h in enumerate(handles)],
            topology=TopologyRecord.from_dict(data.get('topology'),
                                              path + '.topology'),
            health=_health(data, path),
            health_reason=_health_reason(data, path),
        )


@dataclasses.dataclass
class DeviceRecord:
    """One physical card as a driver sees it.

    ``identity`` is stable across scans and reboots (the PCI address for
    PCI cards), so reordered or renamed sysfs nodes are not new devices.
    """
    type: str
    vendor: str
    model: str
    identity: str
    pci_address: str | None = None
    health: str = 'healthy'
    # Why it is not healthy (common/states.HealthMachine), None if it is.
    health_reason: str | None = None
    std_board_info: dict = dataclasses.field(default_factory=dict)
    vendor_board_info: dict = dataclasses.field(default_factory=dict)
    deployables: list = dataclasses.field(default_factory=list)
    # Where the card's PCI function sits (None: the driver knows nothing).
    topology: TopologyRecord | None = None

    def to_dict(self):
        return dataclasses.asdict(self)

    def shared_groups(self):
        """{deployable name: the names of the deployables reaching a
        common function with it}, for those sharing one (see
        common/shared_functions.py): at most one of a group may be bound
        at a time, and a scheduler is offered the group as one."""
        return shared_functions.groups(
            (dep.name, [shared_functions.handle_key(h.attach_info)
                        for h in dep.attach_handles])
            for dep in self.deployables)

    @classmethod
    def from_dict(cls, data, path='device'):
        if not isinstance(data, dict):
            _fail(path, 'must be an object')
        dev_type = data.get('type')
        if dev_type not in DEVICE_TYPES:
            _fail(path + '.type', 'must be one of %s, got %r'
                  % (', '.join(DEVICE_TYPES), dev_type))
        pci = data.get('pci_address')
        if pci is not None and (not isinstance(pci, str) or
                                not PCI_ADDRESS_RE.fullmatch(pci)):
            _fail(path + '.pci_address',
                  'must look like 0000:5e:00.0, got %r' % (pci,))
        deps = data.get('deployables') or []
        if not isinstance(deps, list):
            _fail(path + '.deployables', 'must be a list')
        record = cls(
            type=dev_type,
            vendor=_require_str(data, 'vendor', path),
            model=_require_str(data, 'model', path),
            identity=_require_str(data, 'identity', path),
            pci_address=pci,
            health=_health(data, path),
            health_reason=_health_reason(data, path),
            std_board_info=_str_dict(data, 'std_board_info', path),
            vendor_board_info=_str_dict(data, 'vendor_board_info', path),
            deployables=[DeployableRecord.from_dict(
                d, '%s.deployables[%d]' % (path, i))
                for i, d in enumerate(deps)],
            topology=TopologyRecord.from_dict(data.get('topology'),
                                              path + '.topology'),
        )
        names = [d.name for d in record.deployables]
        if len(names) != len(set(names)):
            _fail(path + '.deployables', 'duplicate deployable names %s'
                  % sorted({n for n in names if names.count(n) > 1}))
        return record


# --- a deployable's name in the database ------------------------------------
# The report stores a deployable as <host>_<identity>_<name as its driver
# reported it>: unique per database, even for a PGPU, which shares its
# resource provider (placement/naming.py) with the device.

def device_prefix(hostname, identity):
    """What every deployable name of a device starts with."""
    return '%s_%s_' % (hostname, identity)


def deployable_db_name(hostname, identity, deployable_name):
    """The deployable's unique name in the database."""
    return device_prefix(hostname, identity) + deployable_name


def region_name_of(deployable, device):
    """The region's name as its driver reported it (``deployable.name``,
    ``device.hostname`` and ``.identity``): the inverse of
    ``deployable_db_name``. Invalid when it is not named so (it cannot be
    programmed or cleaned: no agent could name it)."""
    prefix = device_prefix(device.hostname, device.identity)
    if not deployable.name.startswith(prefix) or \
            len(deployable.name) == len(prefix):
        raise exception.Invalid(
            reason='deployable %s is not named <host>_<identity>_<region> '
                   'as an agent report names it; it cannot be programmed'
                   % deployable.name)
    return deployable.name[len(prefix):]
