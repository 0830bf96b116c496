"""Regions that share one PCI function as partitionable devices (KEP-4815).

A card without SR-IOV reports its PF as the attach handle of every region
(common/shared_functions.py): attaching it hands every region to one
workload, so the scheduler must never give two of them out at once. Each
such function gets a counter set with one counter, ``function``, of value
1, and every region behind it consumes 1 of it: once one is allocated the
counter is spent, so the kube-scheduler itself allocates no second one,
neither to another request of the same claim nor to another claim in the
same instant. A region that shares nothing (one VF each) consumes no
counter, unless its card is offered whole beside it
(common/shared_functions.py): then the card's set has one counter per
region, named as the region, of value 1; a region consumes its own, the
whole card every one (as NVIDIA's DRA driver counts a GPU's memory
slices, one counter each). A GPU offered as MIG placements or as vGPU
types has a set of its own (kubernetes/mig_counters.py,
vgpu_counters.py).

A counter set is named like the accelerator Placement is offered
(shared_functions.carrier_rp_name): the device (``fpga-0000-5e-00-0``)
when every deployable of the device is behind the function, else the
group's first deployable's device name. From Kubernetes 1.35 on the
counter sets live in ResourceSlices of their own, in the pool of the
devices (a slice holds either devices or counter sets, at most 8 sets);
``counter_sets`` lists them, k8s_slices cuts them into slices.
"""
import collections

from cyborg_lite.kubernetes import mig_counters
from cyborg_lite.kubernetes import names as k8s_names

COUNTER = 'function'
ONE = '1'
MAX_SETS_PER_SLICE = 8            # ResourceSliceMaxCounterSets
MAX_COUNTERS_PER_SET = 32         # ResourceSliceMaxCountersPerCounterSet
MAX_CONSUMPTIONS_PER_DEVICE = 2   # ...MaxDeviceCounterConsumptionsPerDevice


def _group_name(device, group, members, hashed=False):
    if group == frozenset(d.name for d in device.deployables):
        return k8s_names.dns_label(device.type.lower(), device.identity,
                                   hashed=hashed)
    return min(members)     # device names: unique in the pool already


def set_names(named):
    """{device name: counter set name} of the deployables that share a
    function; ``named``: {device name: (Device, Deployable)} of the pool
    (k8s_slices.devices_by_name). Two devices whose names fold alike get
    the hashed form, as device names do."""
    members = {}
    for name, (device, dep) in named.items():
        if dep.shares_function:
            members.setdefault((device.uuid, dep.shares_function),
                               []).append(name)
    names = {key: _group_name(named[ms[0]][0], key[1], ms)
             for key, ms in members.items()}
    counts = collections.Counter(names.values())
    for key, ms in members.items():
        if counts[names[key]] > 1:
            names[key] = _group_name(named[ms[0]][0], key[1], ms, True)
    return {m: names[key] for key, ms in members.items() for m in ms}


def consuming(entry, set_name):
    """The ``spec.devices`` entry consuming the function of ``set_name``."""
    return dict(entry, consumesCounters=[{
        'counterSet': set_name, 'counters': {COUNTER: {'value': ONE}}}])


def counter_sets(names):
    """The ``sharedCounters`` entries of the sets ``names``, sorted."""
    return [{'name': name, 'counters': {COUNTER: {'value': ONE}}}
            for name in sorted(set(names))]


def _card_set_name(device):
    # Named as the device, as Placement's provider of the card is.
    return k8s_names.dns_label(device.type.lower(), device.identity)


def consuming_card(entry, set_name, counters):
    """The ``spec.devices`` entry consuming ``counters`` of its card's
    set: a region its own, the whole card every region's."""
    return dict(entry, consumesCounters=[{
        'counterSet': set_name,
        'counters': {c: {'value': ONE} for c in counters}}])


def _card_sets(named):
    """{card set name: every region's counter} of the cards offered whole
    beside their regions."""
    sets = {}
    for device, dep in named.values():
        if dep.card_counters:
            sets.setdefault(_card_set_name(device), set()).update(
                dep.card_counters)
    return sets


def partitioned(devices, named):
    """(``devices`` with their consumption, the counter sets they consume)
    for a cluster with partitionable devices: a function's set (regions
    behind one PF), or a card's (a whole card and its regions: one
    counter per region, of value 1)."""
    sets = set_names(named)
    cards = _card_sets(named)
    out = []
    for entry in devices:
        device, dep = named[entry['name']]
        if entry['name'] in sets:
            entry = consuming(entry, sets[entry['name']])
        elif dep.card_counters:
            entry = consuming_card(entry, _card_set_name(device),
                                   dep.card_counters)
        elif dep.gpu_counters:
            entry = mig_counters.consuming(entry, device, dep)
        out.append(entry)
    used = counter_sets(sets[d['name']] for d in devices
                        if d['name'] in sets)
    used += [{'name': name, 'counters': {c: {'value': ONE}
                                         for c in sorted(counters)}}
             for name, counters in sorted(cards.items())]
    used += [{'name': name, 'counters': {c: {'value': q}
                                         for c, q in sorted(counters.items())}}
             for name, counters in sorted(mig_counters.gpu_sets(
                 {d['name']: named[d['name']] for d in out}).items())]
    return out, sorted(used, key=lambda s: s['name'])


def unpartitioned(devices, named):
    """``devices`` for a cluster without partitionable devices: a MIG
    placement, which only its counters keep from overlapping another, is
    not offered at all."""
    return [d for d in devices if not named[d['name']][1].gpu_counters]


def _counter_errors(where, counters):
    if not isinstance(counters, dict) or not \
            0 < len(counters) <= MAX_COUNTERS_PER_SET:
        return ['%s: 1 to %d counters' % (where, MAX_COUNTERS_PER_SET)]
    return ['%s: counter %r is not a DNS label with a quantity value'
            % (where, name) for name, counter in counters.items()
            if not k8s_names.is_dns_label(name) or not (
                isinstance(counter, dict) and
                isinstance(counter.get('value'), str))]


def device_errors(device):
    """What the API refuses in a device's ``consumesCounters``."""
    consumed = device.get('consumesCounters') or []
    where = 'device %s' % device.get('name')
    sets = [c.get('counterSet') for c in consumed]
    errors = []
    if len(consumed) > MAX_CONSUMPTIONS_PER_DEVICE:
        errors.append('%s: consumes from more than %d counter sets'
                      % (where, MAX_CONSUMPTIONS_PER_DEVICE))
    if len(set(sets)) != len(sets):
        errors.append('%s: a counter set twice' % where)
    for consumption in consumed:
        if not k8s_names.is_dns_label(consumption.get('counterSet')):
            errors.append('%s: counter set %r is not a DNS label'
                          % (where, consumption.get('counterSet')))
        errors += _counter_errors(where, consumption.get('counters'))
    return errors


def slice_errors(obj):
    """What the API (1.35 on) refuses in a slice's ``sharedCounters``."""
    spec, name = obj.get('spec', {}), obj.get('metadata', {}).get('name')
    sets = spec.get('sharedCounters') or []
    names = [s.get('name') for s in sets]
    errors = []
    # NOTE: set, even empty: [] is a non-nil list to the apiserver.
    if spec.get('sharedCounters') is not None and \
            spec.get('devices') is not None:
        errors.append('slice %s: both devices and counter sets' % name)
    if len(sets) > MAX_SETS_PER_SLICE:
        errors.append('slice %s: more than %d counter sets'
                      % (name, MAX_SETS_PER_SLICE))
    if len(set(names)) != len(names):
        errors.append('slice %s: duplicate counter set names' % name)
    for counter_set in sets:
        if not k8s_names.is_dns_label(counter_set.get('name')):
            errors.append('slice %s: counter set %r is not a DNS label'
                          % (name, counter_set.get('name')))
        errors += _counter_errors('counter set %s' % counter_set.get('name'),
                                  counter_set.get('counters'))
    return errors


def pool_errors(slices):
    """Counter sets defined twice in the pool, and counters a device
    consumes that no set of the pool defines: the scheduler finds such a
    pool invalid and allocates nothing from it."""
    defined, errors = {}, []
    for obj in slices:
        for counter_set in obj['spec'].get('sharedCounters') or []:
            if counter_set['name'] in defined:
                errors.append('counter set %s defined twice in the pool'
                              % counter_set['name'])
            defined[counter_set['name']] = counter_set['counters']
    for obj in slices:
        for device in obj['spec'].get('devices') or []:
            for consumption in device.get('consumesCounters') or []:
                counters = defined.get(consumption['counterSet'], {})
                if not set(consumption['counters']) <= set(counters):
                    errors.append('device %s consumes counters of %s, which '
                                  'the pool does not define'
                                  % (device['name'],
                                     consumption['counterSet']))
    return errors
