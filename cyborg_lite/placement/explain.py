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
"""
import dataclasses

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
     ('handle_shared_in_use', 'in_use'), ('kubernetes_claimed', 'in_use')])
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


def failures(device, dep, group, images=Images()):
    """{step: why} of every step ``dep`` of ``device`` fails for request
    group ``group``; empty when it could be bound for it now."""
    failed = _placement_failures(device, dep, group, images)
    for reason in views.unavailable_reasons(device, dep):
        failed.setdefault(reason_step(reason), reason)
    if not any(not h.in_use and h.held_by is None
               for h in dep.attach_handles):
        failed.setdefault('in_use', 'no free attach handle')
    return failed


def first_failure(device, dep, group, images=Images()):
    """The first step (STEPS order) ``dep`` fails for ``group``, or None."""
    failed = failures(device, dep, group, images)
    return next((step for step in STEPS if step in failed), None)


def _holders(device, dep, holders):
    """Who holds ``dep`` or a sibling behind its function: ``holders``
    {deployable uuid: [holder dict]}."""
    found = []
    for each in (dep,) + device.siblings_sharing(dep):
        found.extend(holders.get(each.uuid, ()))
    return found


def _group_result(index, group, inventories, holders, images):
    passing = {step: [set(), 0] for step in STEPS}
    near, blocked_holders = [], {}
    for inventory in inventories:
        for device in inventory.devices:
            for dep in device.deployables:
                failed = failures(device, dep, group, images)
                first = next((s for s in STEPS if s in failed), None)
                for step in STEPS[:STEPS.index(first) if first
                                  else len(STEPS)]:
                    passing[step][0].add(inventory.hostname)
                    passing[step][1] += 1
                if len(failed) == 1:
                    near.append({'hostname': inventory.hostname,
                                 'device_uuid': device.uuid,
                                 'deployable_uuid': dep.uuid,
                                 'deployable_name': dep.name,
                                 'failed': first, 'why': failed[first]})
                if first == 'in_use':
                    for h in _holders(device, dep, holders):
                        blocked_holders[repr(sorted(h.items()))] = h
    funnel = [{'step': s, 'hosts': len(passing[s][0]),
               'devices': passing[s][1]} for s in STEPS]
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


def explain(groups, inventories, holders=None, images=Images()):
    """The funnel of each request group of ``groups`` over
    ``inventories`` (inventory/views.HostInventory), as JSON-ready dicts:
    per step the hosts and deployables passing it and every step before;
    ``blocking``, the first step none passes, with its kind and, for
    'in_use', the holders of the deployables stopped there."""
    inventories = tuple(inventories)
    return [_group_result(i, g, inventories, holders or {}, images)
            for i, g in enumerate(groups)]
