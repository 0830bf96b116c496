"""Why a device profile gets no accelerator: the scheduler's funnel.

Pure: given the inventories of the hosts looked at (inventory/views),
who holds what, and the images the profile's groups name, ``explain``
walks each request group through the constraints in the order the
scheduler applies them and counts the hosts and deployables that pass
each step. Placement decides the first six (resources, traits, and the
traits of region type, local memory, function and NUMA node); a
deployable failing one of them could never serve the group
(**permanent**). The rest are ``inventory/views.unavailable_reasons``,
sorted into steps (a reason not named here is "cleaning": every reason
of the wipe's states); failing only those, it could serve the group
later (**transient**).

What a deployable offers alone is ``placement/tree._alone``'s, as the
bind's ``tree.mismatch`` reads it: one home for both.

Its input is plain rows (``Fleet``: db/explain.py reads them in one
snapshot), not host views: a fleet of 8,000 regions is read and
explained in well under the 200 ms an explain may take
(docs/benchmarks.md). What does not depend on the group (a region's
offer, its availability) is worked out once per region (``regions``),
and each distinct offer and ``views.Facts`` once per fleet or group:
a fleet's regions share a few.
"""
import collections
import dataclasses
import functools
import json

from cyborg_lite.common import shared_functions
from cyborg_lite.common import states
from cyborg_lite.inventory import views
from cyborg_lite.placement import tree

STEPS = ('resource_class', 'traits', 'region_type', 'local_memory',
         'function', 'numa', 'health', 'maintenance', 'cleaning',
         'agent_down', 'in_use')
PERMANENT = frozenset(STEPS[:6])
# unavailable_reasons names -> step; every other reason is 'cleaning'.
# What its driver cannot bind yet waits for the operator's upgrade, as a
# maintenance does: 'maintenance', never 'cleaning'.
_REASON_STEP = dict(
    [(r, 'health') for r in states.HEALTH_UNAVAILABLE] +
    [('maintaining', 'maintenance'), ('bind_unsupported', 'maintenance'),
     ('agent_down', 'agent_down'),
     ('handle_shared_in_use', 'in_use'), ('kubernetes_claimed', 'in_use'),
     ('whole_card_in_use', 'in_use')])
NEAR_MISSES_SHOWN = 20
_REGION_PREFIX = 'CUSTOM_FPGA_REGION_'
_FUNCTION_PREFIX = 'CUSTOM_FUNCTION_ID_'
_NUMA_PREFIX = 'CUSTOM_NUMA_NODE_'
_NUMA_AFFINITY = 'accel:numa_affinity'


@dataclasses.dataclass(frozen=True)
class Images:
    """What a group's image asks of a region's type: ``bitstreams``
    {bitstream uuid: region type (None if unknown)}; ``functions``
    {function id (as written in the profile): frozenset of the region
    types an active bitstream loads it into}."""
    bitstreams: dict = dataclasses.field(default_factory=dict)
    functions: dict = dataclasses.field(default_factory=dict)


def reason_step(reason):
    """The funnel step of an ``unavailable_reasons`` name."""
    return _REASON_STEP.get(reason, 'cleaning')


def _trait_step(name):
    if name.startswith(_REGION_PREFIX):
        return 'region_type'
    if name.startswith(_FUNCTION_PREFIX):
        return 'function'
    if name.startswith(_NUMA_PREFIX):
        return 'numa'
    return 'traits'


def _norm(value):
    return (value or '').replace('-', '').lower()


def _image_failure(dep, group, images):
    bitstream = (group.get('accel:bitstream_id') or '').strip().lower()
    if bitstream:
        region_type = images.bitstreams.get(bitstream)
        if region_type is None or _norm(region_type) != _norm(
                dep.region_type):
            return 'bitstream %s is for region type %s' % (
                bitstream, region_type or 'unknown')
    function = (group.get('accel:function_id') or '').strip()
    if function and _norm(dep.function_id) != _norm(function) and \
            _norm(dep.region_type) not in {
                _norm(t) for t in images.functions.get(function, ())}:
        return 'no active bitstream loads function %s into region ' \
               'type %s' % (function, dep.region_type)
    return None


def _placement_failures(device, dep, group, images):
    """{step: why} of the Placement steps ``dep`` fails for ``group``."""
    traits, inventory = tree._alone(device, dep)
    failed = {}
    for key, value in sorted(group.items()):
        kind, _, name = key.partition(':')
        name = name.strip()
        if kind == 'resources':
            rc = tree.resource_class_name(name)
            step = 'local_memory' if rc == tree.LOCAL_MEMORY_RC \
                else 'resource_class'
            if inventory.get(rc, 0) < int(str(value).strip()):
                failed.setdefault(step, 'less than %s %s' % (value, name))
        elif kind == 'trait' and (value == 'required') != (name in traits):
            failed.setdefault(_trait_step(name),
                              'trait %s is %s' % (name, value))
    if group.get(_NUMA_AFFINITY) == 'required' and not any(
            t.startswith(_NUMA_PREFIX) for t in traits):
        failed.setdefault('numa', 'its NUMA node is unknown')
    image = _image_failure(dep, group, images)
    if image:
        failed.setdefault('function', image)
    return failed


# One region of the fleet (db/explain.py reads them so; tests build them).
RegionRow = views.RegionRow
HandleRow = collections.namedtuple('HandleRow',
                                   ['id', 'attach_info', 'in_use'])


class Fleet(collections.namedtuple('Fleet', [
        'regions', 'attributes', 'handles', 'blocked', 'k8s_claims',
        'hostnames'], defaults=[()])):
    """What an explain reads: ``regions`` (RegionRow-like rows, by
    hostname, device, region), ``attributes`` {region id: {key: value}}
    (its ``rc`` and ``trait*`` ones), ``handles`` {region id: [HandleRow-
    like rows]}, ``blocked`` {handle id: holder} of the free handles whose
    function a sibling's handle holds (db/attach_handles), ``k8s_claims``
    {handle id: claim uid}; ``hostnames``, the hosts looked at (those
    with a device; the funnel reads only ``regions``)."""
    __slots__ = ()


# What tree._alone reads of a device and a region: an offer is decided
# once per distinct pair.
_Device = collections.namedtuple('_Device', ['type', 'vendor', 'numa_node'])
_Offer = collections.namedtuple('_Offer', [
    'traits', 'numa_node', 'region_type', 'function_id', 'resource_class',
    'num_accelerators', 'local_memory_mb'])


class Region(collections.namedtuple('Region', [
        'hostname', 'device_uuid', 'uuid', 'name', 'offer', 'unavailable',
        'sibling_uuids'])):
    """A region with what every group asks of it worked out: ``offer``
    ((_Device, _Offer), the key of its Placement steps), ``unavailable``
    ({step: why} of its availability steps, shared: never changed) and
    the uuids of the siblings behind its functions."""
    __slots__ = ()


def _siblings(device_regions, handles):
    """{region name: names of the regions behind one of its functions}
    of one device's regions (views.DeviceView.shared_groups from rows);
    a device of one region shares nothing with itself."""
    if len(device_regions) < 2:
        return {}
    return shared_functions.groups(
        (r.name, [shared_functions.handle_key(json.loads(h.attach_info))
                  for h in handles.get(r.id, ())])
        for r in device_regions)


@functools.lru_cache(maxsize=4096)
def _unavailable_steps(facts):
    """{step: why} of the availability steps of views.Facts ``facts``,
    in the order the views decide them (views.reasons_of). Shared by
    every region of those facts: read, never changed."""
    failed = {}
    for reason in views.reasons_of(facts):
        failed.setdefault(reason_step(reason), reason)
    if facts.handles is not None and not any(
            not in_use and not held for in_use, held, _k8s in facts.handles):
        failed.setdefault('in_use', 'no free attach handle')
    return failed


def _facts(row, handles, siblings, fleet, card_conflicts):
    """views.Facts of region ``row`` from its rows."""
    return views.Facts(
        row.status, row.device_health, row.agent_state == 'down',
        row.health, row.device_state,
        tuple((bool(h.in_use), h.id in fleet.blocked,
               h.id in fleet.k8s_claims) for h in handles),
        tuple(s.device_state for s in siblings),
        fleet.attributes.get(row.id, {}).get('bind') == 'unsupported',
        row.id in card_conflicts)


def _traits(row, fleet):
    return [v for k, v in fleet.attributes.get(row.id, {}).items()
            if k.startswith('trait') and v]


def _card_conflicts(device_regions, fleet):
    """The ids of a device's rows that are a whole card one of whose
    regions is held, or a region whose whole card is held (as
    views._whole_card_conflict decides it from views)."""
    cards = {row.id: shared_functions.is_whole_card(_traits(row, fleet))
             for row in device_regions}
    if not shared_functions.offered_by_card(
            (row.name, _traits(row, fleet)) for row in device_regions):
        return frozenset()
    held = {row.id for row in device_regions
            if any(h.in_use for h in fleet.handles.get(row.id, ()))}
    return frozenset(row.id for row in device_regions if any(
        other in held and cards[other] != cards[row.id]
        for other in cards if other != row.id))


def _offer(row, attrs):
    return (_Device(row.device_type, row.vendor, row.device_numa_node),
            _Offer(tuple(v for k, v in attrs if k.startswith('trait') and v),
                   row.numa_node, row.region_type, row.function_id,
                   dict(attrs).get('rc') or None, row.num_accelerators or 0,
                   row.local_memory_mb or 0))


def regions(fleet):
    """The Region of each row of ``fleet``, in its order."""
    by_device = collections.defaultdict(list)
    for row in fleet.regions:
        by_device[row.device_id].append(row)
    offers, result = {}, []
    for device_regions in by_device.values():
        groups = _siblings(device_regions, fleet.handles)
        card_conflicts = _card_conflicts(device_regions, fleet)
        for row in device_regions:
            group = groups.get(row.name)
            siblings = [r for r in device_regions
                        if r.name in group and r.name != row.name] \
                if group else ()
            # What _offer reads, as one key: equal rows, one offer.
            attrs = tuple(sorted(fleet.attributes.get(row.id, {}).items()))
            key = (row.device_type, row.vendor, row.device_numa_node,
                   row.numa_node, row.region_type, row.function_id,
                   row.num_accelerators, row.local_memory_mb, attrs)
            offer = offers.get(key)
            if offer is None:
                offer = offers[key] = _offer(row, attrs)
            result.append(Region(
                row.hostname, row.device_uuid, row.uuid, row.name, offer,
                _unavailable_steps(_facts(
                    row, fleet.handles.get(row.id, ()), siblings, fleet,
                    card_conflicts)),
                tuple(s.uuid for s in siblings)))
    return result


def failures(region, group, images=Images(), placement=None):
    """{step: why} of every step ``region`` (a Region) fails for request
    group ``group``; empty when it could be bound for it now.
    ``placement``: a dict the caller keeps for one group, so that each
    distinct offer is checked once."""
    if placement is None:
        placement = {}
    failed = placement.get(region.offer)
    if failed is None:
        failed = placement[region.offer] = _placement_failures(
            region.offer[0], region.offer[1], group, images)
    # Placement's steps and availability's are disjoint.
    return {**failed, **region.unavailable}


def first_failure(region, group, images=Images()):
    """The first step (STEPS order) ``region`` fails for ``group``, or
    None."""
    failed = failures(region, group, images)
    return next((step for step in STEPS if step in failed), None)


def _holders(region, holders):
    """Who holds ``region`` or a sibling behind its function: ``holders``
    {deployable uuid: [holder dict]}."""
    found = []
    for uuid in (region.uuid,) + region.sibling_uuids:
        found.extend(holders.get(uuid, ()))
    return found


_INDEX = {step: index for index, step in enumerate(STEPS)}


def _group_result(index, group, fleet_regions, holders, images):
    # Per region, the index of its first failing step (len(STEPS): none);
    # a step is passed by every region stopped after it.
    stopped = [[set(), 0] for _ in range(len(STEPS) + 1)]
    near, blocked_holders, placement = [], {}, {}
    for region in fleet_regions:
        failed = failures(region, group, images, placement)
        first = min(map(_INDEX.__getitem__, failed), default=len(STEPS))
        stopped[first][0].add(region.hostname)
        stopped[first][1] += 1
        if len(failed) == 1:
            step = STEPS[first]
            near.append({'hostname': region.hostname,
                         'device_uuid': region.device_uuid,
                         'deployable_uuid': region.uuid,
                         'deployable_name': region.name,
                         'failed': step, 'why': failed[step]})
        if first == _INDEX['in_use']:
            for h in _holders(region, holders):
                blocked_holders[repr(sorted(h.items()))] = h
    funnel, hosts, devices = [], set(), 0
    for position in range(len(STEPS), 0, -1):
        hosts |= stopped[position][0]
        devices += stopped[position][1]
        funnel.append({'step': STEPS[position - 1], 'hosts': len(hosts),
                       'devices': devices})
    funnel.reverse()
    blocking = next((f['step'] for f in funnel if f['devices'] == 0), None)
    result = {'group': index, 'request': dict(group), 'funnel': funnel,
              'blocking': None,
              'near_misses': near[:NEAR_MISSES_SHOWN],
              'near_misses_total': len(near)}
    if blocking:
        result['blocking'] = {
            'step': blocking,
            'kind': 'permanent' if blocking in PERMANENT else 'transient',
            'holders': list(blocked_holders.values())
            if blocking == 'in_use' else []}
    return result


def explain(groups, fleet, holders=None, images=Images()):
    """The funnel of each request group of ``groups`` over ``fleet`` (a
    Fleet), as JSON-ready dicts: per step the hosts and deployables
    passing it and every step before; ``blocking``, the first step none
    passes, with its kind and, for 'in_use', the holders of the
    deployables stopped there."""
    fleet_regions = regions(fleet)
    return [_group_result(i, g, fleet_regions, holders or {}, images)
            for i, g in enumerate(groups)]
