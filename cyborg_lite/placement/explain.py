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
snapshot), not host views. The funnel works per distinct offer, not
per region (``kinds``): regions that share every fact it reads (their
offer, their ``views.Facts``: resource class, traits, region type,
memory, function, NUMA node, health, maintenance, cleaning, agent,
handles free or held) are one ``Kind``, counted once with its number
of regions and its set of hosts; each group walks the Kinds (a few
dozen in a fleet of thousands of regions). The database counts the
Kinds of one-region devices itself (``KindRow``, db/fleet_kinds.py);
the regions of devices of several regions come one by one. Only the
near misses shown and the holders named go back to single regions:
every region of the first NEAR_MISSES_SHOWN hosts that have one
(``Fleet.rows_of``), walked in the fleet's order. docs/benchmarks.md
has the figures.
"""
import collections
import dataclasses
import functools
import json

from cyborg_lite.common import collector
from cyborg_lite.common import device_records
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
        'hostnames', 'kind_rows', 'rows_of'], defaults=[(), (), None])):
    """What an explain reads: ``regions`` (RegionRow-like rows, by
    hostname, device, region), ``attributes`` {region id: {key: value}}
    (its ``rc`` and ``trait*`` ones), ``handles`` {region id: [HandleRow-
    like rows]}, ``blocked`` {handle id: holder} of the free handles whose
    function a sibling's handle holds (db/attach_handles), ``k8s_claims``
    {handle id: claim uid}; ``hostnames``, the hosts looked at (those
    with a device). ``kind_rows``: more regions, counted by kind
    (KindRow-like rows; db/fleet_kinds); ``rows_of(hostnames, holders)``:
    (a Fleet of every region of those hosts, their holders when asked),
    for the single regions an answer shows; None: they are all in
    ``regions``."""
    __slots__ = ()


# A kind of region as the database counts it (db/fleet_kinds.rows): the
# facts of a region of a one-region device: its ``rc``, ``trait*`` and
# ``bind`` attributes as ``key=value`` (SEPARATOR between), its handles
# told by whether all are in use (1), one is free (0) or there is none
# (None), and whether a Kubernetes claim holds one in use (all a funnel
# step asks of them); how many regions, and their hostnames, one a
# region (SEPARATOR between).
KindRow = collections.namedtuple('KindRow', [
    'agent_state', 'device_type', 'vendor', 'status', 'device_health',
    'device_numa_node', 'num_accelerators', 'region_type', 'function_id',
    'local_memory_mb', 'device_state', 'health', 'numa_node', 'attributes',
    'all_in_use', 'claimed', 'regions', 'hosts'])
SEPARATOR = ','


# What tree._alone reads of a device and a region: an offer is decided
# once per distinct pair. ``deployables``: a device offered by its card
# (a whole card beside its regions) carries its regions' _Offers, whose
# slots the card's inventory adds up; () for any other device.
_Device = collections.namedtuple('_Device', ['type', 'vendor', 'numa_node',
                                             'deployables'])
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


class Kind:
    """Regions that share every fact the funnel reads: their ``offer``
    and their views.Facts (so ``unavailable``), counted once for all of
    them: ``count`` regions on the set of ``hosts``; ``positions``, in
    the fleet's order (ascending), of those read region by region."""
    __slots__ = ('offer', 'unavailable', 'hosts', 'positions', 'count')

    def __init__(self, offer, unavailable, hosts, positions, count=0):
        self.offer, self.unavailable = offer, unavailable
        self.hosts, self.positions, self.count = hosts, positions, count


class Kinds(collections.namedtuple('Kinds', ['kinds', 'rows', 'siblings'])):
    """The Kinds of a fleet (``kinds``, first seen first), its region
    rows (``rows``, what a position names) and {position: uuids of the
    siblings behind its functions} of the regions that have some."""
    __slots__ = ()


@functools.lru_cache(maxsize=8192)
def _handle_key(attach_info):
    """shared_functions.handle_key of a handle's stored text: hosts of one
    make store the same few texts, each parsed once."""
    return shared_functions.handle_key(json.loads(attach_info))


def _siblings(device_regions, handles):
    """{region name: names of the regions behind one of its functions}
    of one device's regions (views.DeviceView.shared_groups from rows);
    a device of one region shares nothing with itself."""
    if len(device_regions) < 2:
        return {}
    members = [(r.name, [_handle_key(h.attach_info)
                         for h in handles.get(r.id, ())])
               for r in device_regions]
    keys = [key for _name, found in members for key in found]
    if len(set(keys)) == len(keys):     # a function each: no siblings
        return {}
    return shared_functions.groups(members)


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


def _traits(attrs):
    return tuple(v for k, v in attrs if k.startswith('trait') and v)


def _card_conflicts(device_regions, attrs, fleet):
    """The ids of a device's rows that are a whole card one of whose
    regions is held, or a region whose whole card is held (as
    views._whole_card_conflict decides it from views), when the device
    is offered by its card (else None)."""
    if not any(value == shared_functions.WHOLE_CARD_TRAIT
               for row in device_regions for _key, value in attrs[row.id]):
        return None
    traits = {row.id: _traits(attrs[row.id]) for row in device_regions}
    if not shared_functions.offered_by_card(
            (row.name, traits[row.id]) for row in device_regions):
        return None
    cards = {row_id: shared_functions.is_whole_card(found)
             for row_id, found in traits.items()}
    held = {row.id for row in device_regions
            if any(h.in_use for h in fleet.handles.get(row.id, ()))}
    return frozenset(row.id for row in device_regions if any(
        other in held and cards[other] != cards[row.id]
        for other in cards if other != row.id))


def _offer(row, attrs):
    return _Offer(tuple(sorted(_traits(attrs))), row.numa_node,
                  row.region_type, row.function_id,
                  dict(attrs).get('rc') or None,
                  row.num_accelerators or 0, row.local_memory_mb or 0)


class _Counter:
    """Builds the Kinds of a fleet. Each region is looked up once by a
    flat key of the columns its offer and Facts are made of; only a key
    not seen yet makes its offer and Facts (and finds their Kind): a
    fleet of thousands of regions has a few dozen keys."""

    def __init__(self, fleet):
        self.fleet = fleet
        self.by_key, self.by_facts, self.siblings = {}, {}, {}

    def _attrs(self, row):
        # As read (not sorted: a key only saves work; attributes written
        # in another order make another key of the same Kind).
        attrs = self.fleet.attributes.get(row.id)
        return tuple(attrs.items()) if attrs else ()

    def _flags(self, row):
        handles = self.fleet.handles.get(row.id, ())
        blocked, claims = self.fleet.blocked, self.fleet.k8s_claims
        if len(handles) == 1:       # most regions: no generator to run
            [h] = handles
            return ((bool(h.in_use), h.id in blocked, h.id in claims),)
        return tuple([(bool(h.in_use), h.id in blocked, h.id in claims)
                      for h in handles])

    def _kind(self, row, attrs, flags, siblings=(), conflict=False,
              deployables=()):
        offer = (_Device(row.device_type, row.vendor, row.device_numa_node,
                         deployables), _offer(row, attrs))
        facts = views.Facts(
            row.status, row.device_health, row.agent_state == 'down',
            row.health, row.device_state, flags,
            tuple(r.device_state for r in siblings),
            ('bind', 'unsupported') in attrs, conflict,
            device_records.MAKES_INSTANCE in attrs)
        return self._kind_of(offer, facts)

    def _kind_of(self, offer, facts):
        kind = self.by_facts.get((offer, facts))
        if kind is None:
            kind = self.by_facts[(offer, facts)] = Kind(
                offer, _unavailable_steps(facts), set(), [])
        return kind

    def counted(self, row):
        """Add the regions of a KindRow: its handles told as one flag,
        which views.reasons_of and _unavailable_steps read as they read
        every handle of such a region (held by no sibling: it has
        none)."""
        attrs = tuple(item.partition('=')[::2] for item in
                      row.attributes.split(SEPARATOR)) \
            if row.attributes else ()
        offer = (_Device(row.device_type, row.vendor, row.device_numa_node,
                         ()), _offer(row, attrs))
        flags = () if row.all_in_use is None else (
            (bool(row.all_in_use), False, bool(row.claimed)),)
        kind = self._kind_of(offer, views.Facts(
            row.status, row.device_health, row.agent_state == 'down',
            row.health, row.device_state, flags, (),
            ('bind', 'unsupported') in attrs, False,
            device_records.MAKES_INSTANCE in attrs))
        hosts = row.hosts.split(SEPARATOR)
        if len(hosts) != row.regions:
            raise ValueError('%d hostnames read for %d regions: the '
                             'database cut them' % (len(hosts), row.regions))
        kind.hosts.update(hosts)
        kind.count += row.regions

    def _keyed(self, row, attrs, flags, siblings=(), conflict=False,
               deployables=()):
        """The Kind of ``row``, found by its flat key when a region of
        the same columns was counted before."""
        # RegionRow's columns but its names and ids: device type, vendor,
        # status, health, NUMA node; the region's every column from
        # num_accelerators on; then what its device adds.
        key = (row.agent_state, row[4:9], row[12:], attrs, flags,
               tuple(r.device_state for r in siblings), conflict,
               deployables)
        kind = self.by_key.get(key)
        if kind is None:
            kind = self.by_key[key] = self._kind(
                row, attrs, flags, siblings, conflict, deployables)
        return kind

    def alone(self, position, row):
        """Count the one region of its device at ``position``."""
        kind = self._keyed(row, self._attrs(row), self._flags(row))
        kind.hosts.add(row.hostname)
        kind.positions.append(position)

    def device(self, position, device_regions):
        """Count one device's regions, the first at ``position``: the
        siblings behind their functions and a whole card decide too."""
        fleet = self.fleet
        attrs = {row.id: self._attrs(row) for row in device_regions}
        groups = _siblings(device_regions, fleet.handles)
        conflicts = _card_conflicts(device_regions, attrs, fleet)
        deployables = () if conflicts is None else tuple(
            _offer(row, attrs[row.id]) for row in device_regions)
        for index, row in enumerate(device_regions):
            group = groups.get(row.name)
            siblings = [r for r in device_regions
                        if r.name in group and r.name != row.name] \
                if group else ()
            if siblings:
                self.siblings[position + index] = tuple(
                    r.uuid for r in siblings)
            kind = self._keyed(row, attrs[row.id], self._flags(row),
                               siblings, conflicts is not None and
                               row.id in conflicts, deployables)
            kind.hosts.add(row.hostname)
            kind.positions.append(position + index)


def kinds(fleet):
    """The Kinds of ``fleet`` (a Fleet): its regions counted once per
    distinct offer and Facts, with their hosts, counts and the positions
    of those read region by region."""
    counter = _Counter(fleet)
    rows = fleet.regions
    devices = [row.device_id for row in rows] + [None]
    position = 0
    while position < len(rows):
        end = position + 1
        while devices[end] == devices[position]:
            end += 1
        if end == position + 1:
            counter.alone(position, rows[position])
        else:
            counter.device(position, rows[position:end])
        position = end
    for kind in counter.by_facts.values():
        kind.count = len(kind.positions)
    for row in fleet.kind_rows:
        counter.counted(row)
    return Kinds(list(counter.by_facts.values()), rows, counter.siblings)


def regions(fleet):
    """The Region of each row of ``fleet``, in its order (what each
    region's Kind says of it, one by one)."""
    found = kinds(fleet)
    result = [None] * len(found.rows)
    for kind in found.kinds:
        for position in kind.positions:
            row = found.rows[position]
            result[position] = Region(
                row.hostname, row.device_uuid, row.uuid, row.name,
                kind.offer, kind.unavailable,
                found.siblings.get(position, ()))
    return result


def failures(region, group, images=Images(), placement=None):
    """{step: why} of every step ``region`` (a Region, or a Kind) fails
    for request group ``group``; empty when it could be bound for it now.
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


def _holders(uuids, holders):
    """Who holds the regions of ``uuids`` (each region and the siblings
    behind its function): ``holders`` {deployable uuid: [holder dict]}."""
    found = []
    for uuid in uuids:
        found.extend(holders.get(uuid, ()))
    return found


_INDEX = {step: index for index, step in enumerate(STEPS)}


def _first_hosts(kinds_):
    """The first NEAR_MISSES_SHOWN hosts of ``kinds_``, by name: each has
    one of their regions at least, so the first NEAR_MISSES_SHOWN of
    their regions in the fleet's order are all on them."""
    return sorted(set().union(*(k.hosts for k in kinds_)))[
        :NEAR_MISSES_SHOWN]


def _of_hosts(fleet, holders, hostnames, named):
    """(Fleet, holders: read only when ``named``) of every region of
    ``hostnames``, one by one."""
    if fleet.rows_of is not None:
        return fleet.rows_of(hostnames, named)
    hostnames = set(hostnames)
    return fleet._replace(regions=[r for r in fleet.regions
                                   if r.hostname in hostnames],
                          kind_rows=()), holders


def _shown(fleet, holders, near, held, group, images):
    """(the first NEAR_MISSES_SHOWN near misses, the distinct holders of
    the first NEAR_MISSES_SHOWN regions stopped at in_use and of their
    siblings), each in the fleet's order: the regions of the first hosts
    of the Kinds ``near`` and ``held``, read one by one."""
    hostnames = set(_first_hosts(near)) | set(_first_hosts(held))
    if not hostnames:
        return [], []
    few, holders = _of_hosts(fleet, holders, hostnames, bool(held))
    misses, stopped, placement = [], [], {}
    for region in regions(few):
        failed = failures(region, group, images, placement)
        if len(failed) == 1 and len(misses) < NEAR_MISSES_SHOWN:
            [(step, why)] = failed.items()
            misses.append({'hostname': region.hostname,
                           'device_uuid': region.device_uuid,
                           'deployable_uuid': region.uuid,
                           'deployable_name': region.name,
                           'failed': step, 'why': why})
        if held and len(stopped) < NEAR_MISSES_SHOWN and failed and min(
                map(_INDEX.__getitem__, failed)) == _INDEX['in_use']:
            stopped.append((region.uuid,) + region.sibling_uuids)
    distinct = {}
    for uuids in stopped:
        for h in _holders(uuids, holders):
            distinct[repr(sorted(h.items()))] = h
    return misses, list(distinct.values())


def _group_result(index, group, fleet, found, holders, images):
    # Per step, the hosts and the regions whose first failure it is
    # (len(STEPS): none); a step is passed by every region stopped after
    # it. Each Kind counts for all its regions.
    stopped = [[set(), 0] for _ in range(len(STEPS) + 1)]
    near, held, placement = [], [], {}
    for kind in found.kinds:
        failed = failures(kind, group, images, placement)
        first = min(map(_INDEX.__getitem__, failed), default=len(STEPS))
        stopped[first][0] |= kind.hosts
        stopped[first][1] += kind.count
        if len(failed) == 1:
            near.append(kind)
        if first == _INDEX['in_use']:
            held.append(kind)
    funnel, hosts, devices = [], set(), 0
    for position in range(len(STEPS), 0, -1):
        hosts |= stopped[position][0]
        devices += stopped[position][1]
        funnel.append({'step': STEPS[position - 1], 'hosts': len(hosts),
                       'devices': devices})
    funnel.reverse()
    blocking = next((f['step'] for f in funnel if f['devices'] == 0), None)
    misses, named = _shown(fleet, holders, near,
                           held if blocking == 'in_use' else [], group,
                           images)
    result = {'group': index, 'request': dict(group), 'funnel': funnel,
              'blocking': None, 'near_misses': misses,
              'near_misses_total': sum(k.count for k in near)}
    if blocking:
        result['blocking'] = {
            'step': blocking,
            'kind': 'permanent' if blocking in PERMANENT else 'transient',
            'holders': named}
    return result


@collector.held_off
def explain(groups, fleet, holders=None, images=Images()):
    """The funnel of each request group of ``groups`` over ``fleet`` (a
    Fleet), as JSON-ready dicts: per step the hosts and deployables
    passing it and every step before; ``blocking``, the first step none
    passes, with its kind and, for 'in_use', the holders of the first
    deployables stopped there. ``holders`` {deployable uuid: [holder]}
    of a fleet without ``rows_of`` (which reads its own)."""
    found = kinds(fleet)
    return [_group_result(i, g, fleet, found, holders or {}, images)
            for i, g in enumerate(groups)]
