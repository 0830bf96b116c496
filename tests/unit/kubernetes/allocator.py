"""A reference DRA allocator for tests: the structured-parameters rules
of resource.k8s.io/v1 the scheduler applies to a claim, written from the
API documentation (ResourceClaimSpec, DeviceConstraint) and KEP-5491 /
KEP-6072, independently of cyborg_lite's code.

- Each request (``exactly``, ExactCount, ``count`` default 1) takes
  devices of its DeviceClass, given here as a predicate on (driver,
  device) because CEL is not evaluated by this allocator: a request or
  class with ``selectors`` is refused (ValueError), never ignored.
- A device is allocated once per claim unless it says
  ``allowMultipleAllocations``; a device with a NoSchedule or NoExecute
  taint is not allocated (no tolerations here).
- ``matchAttribute`` (a fully qualified name): every device of the
  constraint's requests (all requests when none are listed) has the
  attribute, and the values match: equal scalars, or, where a value is a
  list (KEP-5491), one value common to all of them (a scalar counts as a
  set of one).
- The first solution in request order and slice/device order is taken,
  backtracking as the scheduler's allocator does.
"""
import itertools

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


def _candidates(slices, predicate):
    for obj in slices:
        driver = obj['spec']['driver']
        for device in obj['spec'].get('devices', []):
            if not _tainted(device) and predicate(driver, device):
                yield obj['spec']['pool']['name'], driver, device


def allocate(claim_spec, slices, classes):
    """{request name: [(driver, pool, device name), ...]} or None when no
    allocation satisfies the claim. ``classes``: {DeviceClass name:
    predicate(driver, device)}."""
    requests = claim_spec['devices']['requests']
    constraints = claim_spec['devices'].get('constraints', [])
    for request in requests:
        exactly = request['exactly']
        if exactly.get('selectors'):
            raise ValueError('request %s has CEL selectors, which this '
                             'allocator does not evaluate' % request['name'])
        if exactly.get('allocationMode', 'ExactCount') != 'ExactCount':
            raise ValueError('only ExactCount requests are supported')
    names = [r['name'] for r in requests]
    options = [list(_candidates(slices,
                                classes[r['exactly']['deviceClassName']]))
               for r in requests]
    counts = [r['exactly'].get('count', 1) for r in requests]

    def consistent(chosen):
        for constraint in constraints:
            if 'distinctAttribute' in constraint:
                raise ValueError('distinctAttribute is not supported')
            wanted = constraint.get('requests') or names
            devices = [(driver, device) for name, picks in chosen.items()
                       if name in wanted for _pool, driver, device in picks]
            if devices and not _matches(devices, constraint['matchAttribute']):
                return False
        return True

    def search(index, chosen, used):
        if index == len(requests):
            return chosen
        for picks in itertools.combinations(options[index], counts[index]):
            keys = [(pool, driver, device['name'])
                    for pool, driver, device in picks]
            if any(k in used for k, (_p, _d, dev) in zip(keys, picks)
                   if not dev.get('allowMultipleAllocations')):
                continue
            trial = dict(chosen, **{names[index]: picks})
            if not consistent(trial):
                continue
            found = search(index + 1, trial, used | set(keys))
            if found is not None:
                return found
        return None

    found = search(0, {}, frozenset())
    if found is None:
        return None
    return {name: [(driver, pool, device['name'])
                   for pool, driver, device in picks]
            for name, picks in found.items()}
