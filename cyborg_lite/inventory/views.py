"""What one host offers, as plain frozen views: the input of every sink.
Pure: no I/O (db/ imports it; it imports no db/).

``db/devices.load_inventory(hostname)`` reads the host's devices with
their deployables and attach handles in one transaction and returns the
``HostInventory`` built here (``from_rows``), detached from any
session. A deployable's resource class and traits come from its
attributes, as in Cyborg: key ``rc`` is the resource class, keys
``trait0``..``traitN`` are trait names. Nothing here is specific to one
consumer: the Placement sink builds a provider tree from it
(placement/tree.py), a Kubernetes sink ResourceSlices.

Whether a device or a deployable may be offered and bound now is decided
in one place, ``unavailable_reasons(device, deployable=None)``: a tuple of
reason names from REASONS, empty when it may. Every sink hides what has a
reason (Placement: reserved = total) and the bind path refuses it under
its locks (``region_refusal``, which db/arq_binds.finish_bind and
db/k8s_claims.claim import). Which of
the siblings behind one function a bind takes is decided here too
(``choose_member``, in the order of inventory/warm.py): siblings are an
inventory fact.
"""
import collections
import dataclasses
import functools
import json

from cyborg_lite.common import device_records
from cyborg_lite.common import shared_functions
from cyborg_lite.common import states
from cyborg_lite.inventory import warm


@dataclasses.dataclass(frozen=True)
class AttachHandleView:
    uuid: str
    attach_type: str
    attach_info: dict
    in_use: bool = False
    # Free, but its function is attached through a sibling handle: the
    # ARQ uuid (None if unknown) and deployable name holding it.
    held_by: tuple | None = None
    # In use for this Kubernetes ResourceClaim (its uid), not for an ARQ.
    k8s_claim: str | None = None
    # In use, its holder gone: the instance made on it awaits removal
    # (db/instance_removals.py).
    awaits_removal: bool = False


@dataclasses.dataclass(frozen=True)
class DeployableView:
    uuid: str
    name: str
    num_accelerators: int = 1
    resource_class: str | None = None
    region_type: str | None = None
    function_id: str | None = None
    local_memory_mb: int = 0
    traits: tuple = ()
    rp_uuid: str | None = None
    function_name: str | None = None
    bitstream_id: str | None = None
    attributes: tuple = ()  # (key, value) pairs other than rc and traits
    attach_handles: tuple = ()
    device_state: str = 'available'   # common/states.DEVICE
    # Where it sits (its own PCI function's place, else its device's).
    numa_node: int | None = None
    pcie_root: str | None = None
    pci_bus_id: str | None = None
    socket: int | None = None
    # The region's own health (common/states.HEALTH) and why.
    health: str = 'healthy'
    health_reason: str | None = None


@dataclasses.dataclass(frozen=True)
class DeviceView:
    uuid: str
    type: str
    vendor: str
    identity: str
    pci_address: str | None = None
    health: str = 'healthy'
    health_reason: str | None = None
    status: str = 'enabled'
    rp_uuid: str | None = None
    deployables: tuple = ()
    model: str = ''
    driver_name: str | None = None
    # The host's agent stopped heartbeating (db/agents.py).
    agent_down: bool = False
    numa_node: int | None = None
    pcie_root: str | None = None
    socket: int | None = None

    @property
    def schedulable(self):
        """Whether the device as a whole may be offered."""
        return not unavailable_reasons(self)

    # NOTE: derived from the frozen fields, once per view (the predicate
    # asks for every deployable).
    @functools.cached_property
    def shared_groups(self):
        """{deployable name: frozenset of the names of the deployables
        reaching a common function with it} (common/shared_functions.py);
        a deployable sharing nothing is not in it."""
        return shared_functions.groups(
            (dep.name, [shared_functions.handle_key(h.attach_info)
                        for h in dep.attach_handles])
            for dep in self.deployables)

    @functools.cached_property
    def offered_by_card(self):
        """Whether its whole card and its regions are one choice
        (common/shared_functions.offered_by_card)."""
        return shared_functions.offered_by_card(
            (dep.name, dep.traits) for dep in self.deployables)

    def siblings_sharing(self, deployable):
        """The other deployables behind ``deployable``'s function."""
        group = self.shared_groups.get(deployable.name, ())
        return tuple(d for d in self.deployables
                     if d.name in group and d.name != deployable.name)


@dataclasses.dataclass(frozen=True)
class HostInventory:
    hostname: str
    devices: tuple = ()
    # The host's NUMA nodes (common/topology.NODE_KEYS dicts), () unknown.
    numa_nodes: tuple = ()
    # The rows it was built from (db/devices.HostRows), see ``load``.
    rows: tuple | None = dataclasses.field(default=None, compare=False,
                                           repr=False)


class Facts(collections.namedtuple('Facts', [
        'status', 'device_health', 'agent_down', 'region_health',
        'device_state', 'handles', 'sibling_states', 'bind_unsupported',
        'whole_card_conflict', 'makes_instance'])):
    """What ``unavailable_reasons`` decides from, and nothing else:
    the device's status and health, whether its agent is down, and, when
    a region is asked about (None for the device as a whole), its health,
    its ``device_state``, its handles as (in use, held through a sibling,
    held by a Kubernetes claim) flags, the states of the siblings
    behind its functions, whether its driver says it cannot bind it
    yet (attribute ``bind: unsupported``), whether it is a whole card
    one of whose regions is held or a region whose card is held, and
    whether its bind makes the instance (device_records.MAKES_INSTANCE:
    each handle its own, held alone). Plain and hashable: a fleet's
    regions share a few, and each is decided once (``reasons_of``);
    ``facts`` makes it from views, placement/explain.py from an
    explain's plain rows."""
    __slots__ = ()


# A region as an explain reads it (db/devices.fleet_rows): its device's
# columns and its host agent's state with it.
RegionRow = collections.namedtuple('RegionRow', [
    'hostname', 'agent_state', 'device_id', 'device_uuid', 'device_type',
    'vendor', 'status', 'device_health', 'device_numa_node', 'id', 'uuid',
    'name', 'num_accelerators', 'region_type', 'function_id',
    'local_memory_mb', 'device_state', 'health', 'numa_node'])


def facts(device, deployable=None):
    """The Facts of ``deployable`` of ``device`` (views), or of the
    device as a whole."""
    if deployable is None:
        return Facts(device.status, device.health, device.agent_down,
                     None, None, None, None, None, None, None)
    return Facts(
        device.status, device.health, device.agent_down, deployable.health,
        deployable.device_state,
        tuple((bool(h.in_use), h.held_by is not None,
               h.k8s_claim is not None) for h in deployable.attach_handles),
        tuple(s.device_state for s in device.siblings_sharing(deployable)),
        ('bind', 'unsupported') in deployable.attributes,
        _whole_card_conflict(device, deployable),
        device_records.MAKES_INSTANCE in deployable.attributes)


def _is_region(f):
    return f.device_state is not None


def _shared_function_in_use(f):
    """Every free handle of the deployable names a function a sibling
    holds (a deployable whose handles are all its own and in use is
    simply allocated, which its consumer already knows)."""
    free = [held for in_use, held, _k8s in f.handles if not in_use]
    return bool(free) and all(free)


def _health_is(f, state):
    """The device, or the region asked about, is in health ``state``."""
    return f.device_health == state or f.region_health == state


def health_of(device, deployable=None):
    """(state, reason) of the worse of the device's health and the
    region's own (common/states.HEALTH order: unhealthy, recovering,
    degraded, healthy)."""
    order = ('unhealthy', 'recovering', 'degraded', 'healthy')
    candidates = [(device.health, device.health_reason)]
    if deployable is not None:
        candidates.append((deployable.health, deployable.health_reason))
    return min(candidates, key=lambda c: order.index(c[0]))


def advisories(device, deployable=None):
    """What is worth knowing about a device offered still: ('degraded',)
    when its (or the region's) health is degraded, else ()."""
    state, _reason = health_of(device, deployable)
    return (state,) if state in states.HEALTH_ADVISORY else ()


def _kubernetes_claimed(f):
    """A claim holds the region. (A handle of a deployable whose bind
    makes the instance is one VF among its type's: a claim on it leaves
    the others free, and Placement reserves the one: placement/tree.py.)"""
    return not f.makes_instance and any(
        k8s for _in_use, _held, k8s in f.handles)


def _shared_with_unclean(f):
    """A sibling behind the same function waits for its wipe, is being
    wiped, or failed it: attaching the function would hand its last
    tenant's data to the next."""
    return any(s not in states.DEVICE_SCHEDULABLE for s in f.sibling_states)


def _whole_card_conflict(device, deployable):
    """A whole card one of whose regions is held, or a region whose
    whole card is held (common/shared_functions.py): the card and its
    regions are one choice. (Placement counts this itself, by the card
    provider's slots: placement/tree.py leaves the reason out.)"""
    if not device.offered_by_card:
        return False
    card = shared_functions.is_whole_card(deployable.traits)
    return any(h.in_use for other in device.deployables
               if other.name != deployable.name and
               shared_functions.is_whole_card(other.traits) != card
               for h in other.attach_handles)


# A device_state that keeps a deployable from schedulers, named as a
# reason where the state's own name would be unclear.
_CLEANING_REASON = {'error': 'cleaning_failed'}

# The reason a card and its regions exclude each other by.
WHOLE_CARD_IN_USE = 'whole_card_in_use'
# The reasons, in the order they are reported: (name, what it means,
# test(Facts)). A region-level test sees the device as a whole (no
# region: ``_is_region`` false) too. Add a reason with one line here,
# reading only Facts (a new input is a new Facts field).
_RULES = (
    ('maintaining', 'the device is disabled for maintenance',
     lambda f: f.status == 'maintaining'),
    ('unhealthy', 'its hardware reports a fault',
     lambda f: _health_is(f, 'unhealthy')),
    ('recovering', 'its fault cleared; it is watched before it is '
     'offered again',
     lambda f: _health_is(f, 'recovering')),
    ('agent_down', 'the agent of its host stopped sending heartbeats',
     lambda f: f.agent_down),
    ('handle_shared_in_use', 'its PCI function (or mdev) is attached '
     'through a sibling deployable that shares it',
     lambda f: _is_region(f) and _shared_function_in_use(f)),
    # Nova does not know Kubernetes' allocations: Placement must not offer
    # it (the Kubernetes sink leaves this reason out: it is its own).
    ('kubernetes_claimed', 'it is prepared for a Kubernetes ResourceClaim',
     lambda f: _is_region(f) and _kubernetes_claimed(f)),
    (WHOLE_CARD_IN_USE, 'it is a whole card one of whose regions is '
     'held, or a region of a whole card that is held',
     lambda f: _is_region(f) and f.whole_card_conflict),
    ('shared_function_unclean', 'its PCI function (or mdev) also reaches a '
     'sibling deployable that is not wiped yet after its last tenant',
     lambda f: _is_region(f) and _shared_with_unclean(f)),
    # A driver may report what a device could make before it can bind it
    # (vGPU types of the vendor-specific VFIO framework): its counts are
    # shown, nothing of it is offered.
    ('bind_unsupported', 'its driver reports it but cannot bind it yet',
     lambda f: _is_region(f) and f.bind_unsupported),
) + tuple(
    # The wipe after its last tenant (common/states.DEVICE): waiting,
    # running, or failed until an operator cleans it again.
    (_CLEANING_REASON.get(state, state), why,
     lambda f, state=state: f.device_state == state)
    for state, why in states.DEVICE_UNSCHEDULABLE_WHY.items())
REASONS = {name: meaning for name, meaning, _test in _RULES}


@functools.lru_cache(maxsize=4096)
def reasons_of(f):
    """The REASONS names that Facts ``f`` gives, in order; () when it may
    be offered and bound."""
    return tuple(name for name, _meaning, test in _RULES if test(f))


def unavailable_reasons(device, deployable=None):
    """Why ``deployable`` of ``device`` (or the device as a whole, when
    ``deployable`` is None) may not be offered or bound now: a tuple of
    REASONS names, empty when it may."""
    return reasons_of(facts(device, deployable))


def describe(reasons, device, deployable=None):
    """One sentence for people: what the reasons mean, with why a device
    is unhealthy and who holds a shared function."""
    _state, why = health_of(device, deployable)
    parts = ['%s (%s)' % (REASONS[r], why)
             if r in states.HEALTH_UNAVAILABLE and why else REASONS[r]
             for r in reasons]
    if 'handle_shared_in_use' in reasons:
        holders = sorted({h.held_by for h in deployable.attach_handles
                          if h.held_by is not None}, key=str)
        parts.append('held by %s' % ', '.join(
            '%s on %s' % (_holder(arq), dep) for arq, dep in holders))
    return '; '.join(parts)


def _holder(name):
    if name is None:
        return 'ARQ (none)'
    return name if name.startswith('k8s:') else 'ARQ %s' % name


def _is_trait_key(key):
    return key.startswith('trait')


def _handle_view(handle, blocked, k8s_claims):
    holder = blocked.get(handle.id)
    return AttachHandleView(uuid=handle.uuid, attach_type=handle.attach_type,
                            attach_info=json.loads(handle.attach_info),
                            in_use=bool(handle.in_use),
                            held_by=tuple(holder) if holder else None,
                            k8s_claim=k8s_claims.get(handle.id),
                            awaits_removal=bool(handle.awaits_removal))


def _deployable_view(dep, attrs, handles, blocked, k8s_claims):
    # Sorted by key so trait order (and so the tree) is deterministic.
    traits = tuple(v for k, v in sorted(attrs.items())
                   if _is_trait_key(k) and v)
    return DeployableView(
        uuid=dep.uuid, name=dep.name,
        num_accelerators=dep.num_accelerators or 0,
        resource_class=attrs.get('rc') or None,
        region_type=dep.region_type, function_id=dep.function_id,
        local_memory_mb=dep.local_memory_mb or 0, traits=traits,
        rp_uuid=dep.rp_uuid, function_name=dep.function_name,
        bitstream_id=dep.bitstream_id,
        attributes=tuple((k, v) for k, v in sorted(attrs.items())
                         if k != 'rc' and not _is_trait_key(k)),
        attach_handles=tuple(_handle_view(h, blocked, k8s_claims)
                             for h in handles),
        device_state=dep.device_state, numa_node=dep.numa_node,
        pcie_root=dep.pcie_root, pci_bus_id=dep.pci_bus_id,
        socket=dep.socket, health=dep.health,
        health_reason=dep.health_reason)


def device_view(dev, deployables=(), agent_state=None):
    """The DeviceView of a devices row (an ORM object or a plain row);
    ``agent_state`` as db/agents stores it."""
    return DeviceView(
        uuid=dev.uuid, type=dev.type, vendor=dev.vendor,
        identity=dev.identity, pci_address=dev.pci_address,
        health=dev.health, health_reason=dev.health_reason,
        status=dev.status, rp_uuid=dev.rp_uuid,
        deployables=tuple(deployables), model=dev.model or '',
        driver_name=dev.driver_name, agent_down=agent_state == 'down',
        numa_node=getattr(dev, 'numa_node', None),
        pcie_root=getattr(dev, 'pcie_root', None),
        socket=getattr(dev, 'socket', None))


def _views(rows):
    by_device = {d.id: [] for d in rows.devices}
    for dep in rows.deployables:
        by_device[dep.device_id].append(_deployable_view(
            dep, rows.attributes.get(dep.id, {}),
            rows.handles.get(dep.id, []), rows.blocked_handles,
            rows.k8s_claims))
    return tuple(device_view(d, by_device[d.id], rows.agent_state)
                 for d in rows.devices)


def from_rows(hostname, rows, previous=None):
    """The HostInventory of ``hostname`` built from ``rows``
    (db/devices.HostRows: db/devices.load_inventory reads them).

    ``previous``, an inventory of the same host built before, is returned
    itself when ``rows`` are equal to its rows (every column
    db/devices.host_rows reads, which are all an inventory is made of):
    equal rows make an equal inventory, and a publish's second read
    (placement/sink.py) is spared building it."""
    if previous is not None and previous.rows == rows:
        return previous
    nodes = tuple(json.loads(rows.numa_nodes)) if rows.numa_nodes else ()
    return HostInventory(hostname, _views(rows), nodes, rows)


# Kubernetes' own allocation: not a reason to hide a device from it.
KUBERNETES_CLAIMED = 'kubernetes_claimed'


def kubernetes_lifted(deployable):
    """The reasons that do not keep ``deployable`` from Kubernetes: its
    own allocation, and Nova's ``bind_unsupported`` of what Kubernetes'
    Prepare makes (common/device_records.PREPARE_MAKES: a MIG
    placement, which Placement cannot see the position of)."""
    if device_records.PREPARE_MAKES in deployable.attributes:
        return (KUBERNETES_CLAIMED, 'bind_unsupported')
    return (KUBERNETES_CLAIMED,)


def region_refusal(rows, for_kubernetes=False):
    """Why the region of ``rows`` (db/devices.region_rows: the region,
    then the siblings behind its functions) may not be bound now, as a
    sentence; None when it may. ``for_kubernetes``: for a claim's
    Prepare (less ``kubernetes_lifted``'s reasons)."""
    [device] = _views(rows)
    [deployable] = [d for d in device.deployables
                    if d.uuid == rows.deployables[0].uuid]
    return refusal(device, deployable,
                   kubernetes_lifted(deployable) if for_kubernetes else ())


def refusal(device, deployable, lifted=()):
    """Why ``deployable`` of ``device`` (views) may not be bound now, as
    a sentence; None when it may. ``lifted``: reasons that do not count."""
    reasons = tuple(r for r in unavailable_reasons(device, deployable)
                    if r not in lifted)
    if not reasons:
        return None
    return 'deployable %s (%s) is unavailable [%s]: %s' % (
        deployable.uuid, deployable.name, ', '.join(reasons),
        describe(reasons, device, deployable))


def refusal_in(inventory, deployable_uuid):
    """``refusal`` of the deployable ``deployable_uuid`` of ``inventory``
    (a caller about to act on it: the bind decides again under its
    locks); None when it may be bound, or is not there."""
    for device in inventory.devices:
        for deployable in device.deployables:
            if deployable.uuid == deployable_uuid:
                return refusal(device, deployable)
    return None


def has_free_handle(deployable):
    """Whether an attach handle of ``deployable`` is neither in use nor
    held."""
    return any(not h.in_use and h.held_by is None
               for h in deployable.attach_handles)


def choose_member(device, members, mismatch, loaded=None, asked_at=None):
    """The deployable of ``members`` (siblings behind one function of
    ``device``, offered by one provider) that a bind takes: one that
    serves the request on its own (``mismatch(dep)``: why it could not,
    or None; placement/tree.mismatch for a device profile group), may be
    bound now and has a free attach handle, in the order of
    inventory/warm.preference: one for which ``loaded(dep)`` says no
    programming is needed, then the one whose function was asked for
    least recently (``asked_at(dep)``: when, None for never), then by
    name. Returns (deployable, None) or (None, why none may)."""
    why = {}
    fit = []
    for dep in members:
        reason = mismatch(dep)
        blocked = unavailable_reasons(device, dep)
        if reason is None and blocked:
            # NOTE: as the single region's refusal says it (region_refusal):
            # why it is unhealthy, who holds its function.
            reason = 'unavailable [%s]: %s' % (', '.join(blocked),
                                               describe(blocked, device, dep))
        if reason is None and not has_free_handle(dep):
            reason = 'no free attach handle'
        if reason is None:
            fit.append(dep)
        else:
            why[dep.name] = reason
    if not fit:
        return None, '; '.join('%s: %s' % item for item in sorted(
            why.items()))
    fit.sort(key=lambda d: (warm.preference(
        bool(loaded and loaded(d)), asked_at(d) if asked_at else None),
        d.name))
    return fit[0], None
