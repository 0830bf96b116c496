"""A reference DRA allocator for tests: the structured-parameters rules
of resource.k8s.io/v1 the scheduler applies to a pod's claims, written
from the API documentation (ResourceClaimSpec, DeviceConstraint), KEP-5491
/ KEP-6072 and KEP-4815, independently of cyborg_lite's code.

- Pools (k8s.io/dynamic-resource-allocation structured GatherPools): the
  slices of one (driver, pool name). A pool is incomplete, and nothing is
  allocated from it, unless all its slices have one generation and their
  number is ``resourceSliceCount``; it is invalid, and nothing is
  allocated from it, when a device name repeats, a counter set name
  repeats, or a device consumes a counter no set of the pool defines
  (an allocation that fails with an invalid pool seen raises
  InvalidPool, as the allocator's "invalid resource pools were
  encountered").
- Each request (``exactly``, ExactCount, ``count`` default 1) takes
  devices of its DeviceClass, given here as a predicate on (driver,
  device) because CEL is not evaluated by this allocator: a request or
  class with ``selectors`` is refused (ValueError), never ignored.
- A device is allocated once (across all the claims allocated together,
  and never when ``allocated`` already holds it) unless it says
  ``allowMultipleAllocations``; a device with a NoSchedule or NoExecute
  taint is not allocated (no tolerations here).
- Partitionable devices (KEP-4815): a device that consumes counters is
  allocated only while every counter it consumes, minus what the devices
  already allocated and those being allocated consume, stays at or above
  zero; with the DRAPartitionableDevices gate off (``partitionable``
  false) a device that consumes counters is never allocated.
- ``matchAttribute`` (a fully qualified name): every device of the
  constraint's requests (all requests when none are listed) has the
  attribute, and the values match: equal scalars, or, where a value is a
  list (KEP-5491), one value common to all of them (a scalar counts as a
  set of one).
- The first solution in claim order, request order and slice/device order
  is taken, backtracking as the scheduler's allocator does.
"""
import collections
import itertools

from kubernetes.utils import parse_quantity

_LIST_KEYS = ('ints', 'bools', 'strings', 'versions')
_SCALAR_KEYS = ('int', 'bool', 'string', 'version')


def _values(value):
    """The attribute value as a set of (type, item)."""
    for key in _LIST_KEYS:
        if key in value:
            return {(key[:-1], item) for item in value[key]}
    for key in _SCALAR_KEYS:
        if key in value:
            return {(key, value[key])}
    raise ValueError('not an attribute value: %r' % (value,))


def _attribute(driver, device, name):
    domain, _, ident = name.rpartition('/')
    if not domain:
        raise ValueError('matchAttribute %r has no domain' % name)
    attributes = device.get('attributes', {})
    if name in attributes:
        return attributes[name]
    # A name without a domain in the slice belongs to its driver.
    if domain == driver and ident in attributes:
        return attributes[ident]
    return None


def _matches(chosen, name):
    common = None
    for driver, device in chosen:
        value = _attribute(driver, device, name)
        if value is None:
            return False
        values = _values(value)
        common = values if common is None else common & values
        if not common:
            return False
    return True


def _tainted(device):
    return any(t.get('effect') in ('NoSchedule', 'NoExecute')
               for t in device.get('taints', []))


class InvalidPool(ValueError):
    """The claims cannot be allocated and an invalid pool was seen."""


Pool = collections.namedtuple('Pool', 'driver name slices counters usable '
                                      'invalid')


def _pool_problem(slices):
    devices = [d['name'] for s in slices for d in s['spec'].get('devices')
               or []]
    if len(set(devices)) != len(devices):
        return 'duplicate device name'
    counters = {}
    for obj in slices:
        for counter_set in obj['spec'].get('sharedCounters') or []:
            if counter_set['name'] in counters:
                return 'duplicate counter set %s' % counter_set['name']
            counters[counter_set['name']] = counter_set['counters']
    for obj in slices:
        for device in obj['spec'].get('devices') or []:
            for consumed in device.get('consumesCounters') or []:
                if not set(consumed['counters']) <= set(
                        counters.get(consumed['counterSet'], ())):
                    return 'device %s consumes undefined counters' % (
                        device['name'])
    return None


def gather_pools(slices):
    by_pool = {}
    for obj in slices:
        spec = obj['spec']
        by_pool.setdefault((spec['driver'], spec['pool']['name']),
                           []).append(obj)
    pools = []
    for (driver, name), members in by_pool.items():
        complete = len({m['spec']['pool']['generation']
                        for m in members}) == 1 and all(
            m['spec']['pool']['resourceSliceCount'] == len(members)
            for m in members)
        problem = _pool_problem(members)
        counters = {s['name']: {n: parse_quantity(c['value'])
                                for n, c in s['counters'].items()}
                    for m in members
                    for s in m['spec'].get('sharedCounters') or []}
        pools.append(Pool(driver, name, members, counters,
                          complete and problem is None, problem))
    return pools


def _counters_left(picks):
    """Whether the counters the devices of ``picks`` consume together fit
    the counter sets of their pools."""
    used, limits = collections.Counter(), {}
    for pool, _driver, device in picks:
        for consumed in device.get('consumesCounters') or []:
            for name, counter in consumed['counters'].items():
                key = (pool.driver, pool.name, consumed['counterSet'], name)
                used[key] += parse_quantity(counter['value'])
                limits[key] = pool.counters[consumed['counterSet']][name]
    return all(amount <= limits[key] for key, amount in used.items())


def _candidates(pools, predicate, partitionable):
    for pool in pools:
        if not pool.usable:
            continue
        for obj in pool.slices:
            for device in obj['spec'].get('devices') or []:
                if device.get('consumesCounters') and not partitionable:
                    continue
                if not _tainted(device) and predicate(pool.driver, device):
                    yield pool, pool.driver, device


def _check_request(request):
    exactly = request['exactly']
    if exactly.get('selectors'):
        raise ValueError('request %s has CEL selectors, which this '
                         'allocator does not evaluate' % request['name'])
    if exactly.get('allocationMode', 'ExactCount') != 'ExactCount':
        raise ValueError('only ExactCount requests are supported')


def _consistent(constraints, names, chosen):
    for constraint in constraints:
        if 'distinctAttribute' in constraint:
            raise ValueError('distinctAttribute is not supported')
        wanted = constraint.get('requests') or names
        devices = [(driver, device) for name, picks in chosen.items()
                   if name in wanted for _pool, driver, device in picks]
        if devices and not _matches(devices, constraint['matchAttribute']):
            return False
    return True


def _key(pick):
    pool, driver, device = pick
    return driver, pool.name, device['name']


def allocate_claims(claim_specs, slices, classes, allocated=(),
                    partitionable=True):
    """Allocate the claims of one pod together: a list with one {request
    name: [(driver, pool, device name), ...]} per claim, or None when no
    allocation satisfies all of them. ``classes``: {DeviceClass name:
    predicate(driver, device)}; ``allocated``: (driver, pool, device)
    keys other claims already hold."""
    pools = gather_pools(slices)
    allocated = set(allocated)
    held = [(pool, pool.driver, device) for pool in pools if pool.usable
            for obj in pool.slices for device in obj['spec'].get('devices')
            or [] if (pool.driver, pool.name, device['name']) in allocated]
    steps = []          # (claim index, request)
    for index, spec in enumerate(claim_specs):
        for request in spec['devices']['requests']:
            _check_request(request)
            steps.append((index, request))
    options = [list(_candidates(pools,
                                classes[r['exactly']['deviceClassName']],
                                partitionable)) for _i, r in steps]

    def search(step, chosen, used):
        if step == len(steps):
            return chosen
        index, request = steps[step]
        spec = claim_specs[index]['devices']
        names = [r['name'] for r in spec['requests']]
        for picks in itertools.combinations(options[step],
                                            request['exactly'].get('count',
                                                                   1)):
            keys = [_key(p) for p in picks]
            if any(k in used for k, (_p, _d, dev) in zip(keys, picks)
                   if not dev.get('allowMultipleAllocations')):
                continue
            mine = dict(chosen.get(index, {}), **{request['name']: picks})
            if not _consistent(spec.get('constraints', []), names, mine):
                continue
            every = held + [p for claim in chosen.values()
                            for ps in claim.values() for p in ps] + \
                list(picks)
            if not _counters_left(every):
                continue
            found = search(step + 1, {**chosen, index: mine},
                           used | set(keys))
            if found is not None:
                return found
        return None

    found = search(0, {}, frozenset(allocated))
    if found is None:
        invalid = [p for p in pools if p.invalid]
        if invalid:
            raise InvalidPool('invalid resource pools were encountered: '
                              + '; '.join('%s/%s: %s' % (p.driver, p.name,
                                                         p.invalid)
                                          for p in invalid))
        return None
    return [{name: [_key(p) for p in picks]
             for name, picks in found.get(index, {}).items()}
            for index in range(len(claim_specs))]


def allocate(claim_spec, slices, classes, allocated=(), partitionable=True):
    """One claim: {request name: [(driver, pool, device name), ...]} or
    None when no allocation satisfies it."""
    found = allocate_claims([claim_spec], slices, classes, allocated,
                            partitionable)
    return None if found is None else found[0]
