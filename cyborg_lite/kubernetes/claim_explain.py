"""Why a pending ResourceClaim gets none of our devices: pure.

Kubernetes' scheduler says only "cannot allocate all claims" (it names
no claim, request or selector). For a claim that asks for a DeviceClass
of our driver and is not allocated, ``explain_claim`` walks each request
through what the scheduler applies to our ResourceSlices' devices, in its
order: the DeviceClass's CEL selectors, the request's own, then the
devices' taints the request does not tolerate, then the count it asks
for. The first of these no device passes is named, with how many devices
passed each step before it. What a selector sees of a device is the
``device`` variable of Kubernetes' DRA CEL environment (driver,
attributes and capacity by domain, ``allowMultipleAllocations``),
evaluated with the ``common-expression-language`` library (cel-rust):
a selector that errors on a device (an attribute it lacks) does not
match it, as the scheduler treats it; Kubernetes' own CEL extensions
(``quantity()``, ``semver()``) are not there, so a selector calling them
matches nothing here, and the answer quotes the library's error rather
than guess.

kubernetes/claim_events.py lists the claims and posts the answer as an
Event on the claim; the CLI prints it (``cyborg-lite claim explain``).
"""
import cel

DEFAULT_COUNT = 1


def _value(attribute):
    """The CEL value of a ResourceSlice attribute (DeviceAttribute)."""
    for key in ('string', 'int', 'bool', 'version', 'ints'):
        if key in attribute:
            return attribute[key]
    return None


def _by_domain(driver, entries, value):
    """{domain: {name: value}}: an unqualified name is in the driver's
    domain, as Kubernetes' CEL environment gives it."""
    found = {}
    for name, entry in (entries or {}).items():
        domain, _, short = name.rpartition('/')
        found.setdefault(domain or driver, {})[short] = value(entry)
    return found


def device_variable(driver, device):
    """The CEL ``device`` of a ResourceSlice device of ``driver``;
    capacities as their quantity strings."""
    return {'driver': driver,
            'allowMultipleAllocations': bool(
                device.get('allowMultipleAllocations', False)),
            'attributes': _by_domain(driver, device.get('attributes'),
                                     _value),
            'capacity': _by_domain(driver, device.get('capacity'),
                                   lambda c: c.get('value'))}


def slice_devices(slices):
    """(pool, device, CEL variable) of every device of ``slices``."""
    found = []
    for obj in slices:
        spec = obj.get('spec', {})
        for device in spec.get('devices', ()):
            found.append((spec.get('pool', {}).get('name'), device,
                          device_variable(spec.get('driver'), device)))
    return found


class _Selector:
    def __init__(self, source, index, expression):
        self.source, self.index, self.expression = source, index, expression
        self.error = None
        try:
            self._program = cel.compile(expression)
        except ValueError as e:
            self._program, self.error = None, str(e).splitlines()[0]

    def matches(self, variable):
        if self._program is None:
            return False
        try:
            return self._program.execute({'device': variable}) is True
        except (KeyError, ValueError, TypeError, RuntimeError) as e:
            # NOTE: the scheduler counts an error as no match for that
            # device; the first one is kept to say why.
            if self.error is None:
                self.error = '%s %s' % (type(e).__name__, e)
            return False

    def describe(self):
        return 'selector %d of %s `%s`' % (self.index, self.source,
                                           self.expression)


def _selectors(source, spec):
    return [_Selector(source, i, s['cel']['expression'])
            for i, s in enumerate(spec.get('selectors') or ())
            if s.get('cel', {}).get('expression')]


def _tolerates(tolerations, taint):
    for t in tolerations or ():
        if t.get('effect') and t['effect'] != taint.get('effect'):
            continue
        if not t.get('key'):
            if t.get('operator') == 'Exists':
                return True
            continue
        if t['key'] != taint.get('key'):
            continue
        if t.get('operator') == 'Exists' or \
                t.get('value', '') == taint.get('value', ''):
            return True
    return False


def _blocking_taints(device, tolerations):
    return [t for t in device.get('taints') or ()
            if t.get('effect') in ('NoSchedule', 'NoExecute') and
            not _tolerates(tolerations, t)]


def _taint_text(taint):
    value = taint.get('value')
    return '%s%s:%s' % (taint['key'], '=' + value if value else '',
                        taint['effect'])


def _needed(exactly, total):
    if exactly.get('allocationMode') == 'All':
        return max(total, 1)
    return int(exactly.get('count', DEFAULT_COUNT))


def explain_request(name, exactly, device_classes, devices):
    """The funnel of one request (its ``exactly`` part, or one of its
    ``firstAvailable`` subrequests) over ``devices`` (slice_devices):
    {'request', 'funnel': [(step, devices passing)], 'blocking': text or
    None}."""
    class_name = exactly.get('deviceClassName')
    selectors = _selectors('DeviceClass %s' % class_name,
                           device_classes.get(class_name, {}).get(
                               'spec', {})) + \
        _selectors('request %s' % name, exactly)
    remaining = list(devices)
    funnel = [('devices of our driver', len(remaining))]
    for selector in selectors:
        passing = [d for d in remaining if selector.matches(d[2])]
        funnel.append((selector.describe(), len(passing)))
        if not passing:
            why = ' (first error: %s)' % selector.error \
                if selector.error else ''
            return _answer(name, funnel, '%s matches none of the %d '
                           'devices left%s' % (selector.describe(),
                                               len(remaining), why))
        remaining = passing
    tolerations = exactly.get('tolerations')
    untainted = [d for d in remaining
                 if not _blocking_taints(d[1], tolerations)]
    funnel.append(('taints tolerated', len(untainted)))
    if not untainted:
        first = _blocking_taints(remaining[0][1], tolerations)[0]
        return _answer(name, funnel, 'every device its selectors match '
                       'has a taint it does not tolerate, first %s on %s/%s'
                       % (_taint_text(first), remaining[0][0],
                          remaining[0][1]['name']))
    needed = _needed(exactly, len(untainted))
    funnel.append(('count %d' % needed, len(untainted)))
    if len(untainted) < needed:
        return _answer(name, funnel, 'asks for %d devices; %d match' % (
            needed, len(untainted)))
    return _answer(name, funnel, None)


def _answer(name, funnel, blocking):
    return {'request': name, 'funnel': funnel, 'blocking': blocking}


def ours(device_class, driver):
    """Whether ``device_class`` selects devices of ``driver`` (a
    selector of it compares ``device.driver`` with that name)."""
    return any('"%s"' % driver in s.get('cel', {}).get('expression', '')
               and 'device.driver' in s['cel']['expression']
               for s in device_class.get('spec', {}).get('selectors') or ())


def _requests(claim):
    """(request name, [(name, exactly-like dict)]) of each request: its
    ``exactly``, or its ``firstAvailable`` subrequests in order."""
    for request in claim.get('spec', {}).get('devices', {}).get(
            'requests', ()):
        if request.get('exactly'):
            yield request['name'], [(request['name'], request['exactly'])]
        elif request.get('firstAvailable'):
            yield request['name'], [
                ('%s/%s' % (request['name'], sub['name']), sub)
                for sub in request['firstAvailable']]


def is_pending_for(claim, driver, device_classes):
    """An unallocated claim asking for a DeviceClass of ``driver``."""
    if (claim.get('status') or {}).get('allocation'):
        return False
    return any(ours(device_classes.get(e.get('deviceClassName'), {}), driver)
               for _request, subs in _requests(claim) for _name, e in subs)


def explain_claim(claim, device_classes, devices):
    """Each request's funnel (explain_request; each subrequest's for
    ``firstAvailable``) over ``devices``, and ``blocking``: for the first
    request (in the claim's order) none of whose alternatives our devices
    can serve, '<request>: <why>' of its first alternative; else None."""
    results, blocking = [], None
    for _request, alternatives in _requests(claim):
        answers = [explain_request(name, exactly, device_classes, devices)
                   for name, exactly in alternatives]
        results.extend(answers)
        if blocking is None and all(a['blocking'] for a in answers):
            blocking = '%s: %s' % (answers[0]['request'],
                                   answers[0]['blocking'])
    return {'requests': results, 'blocking': blocking}
