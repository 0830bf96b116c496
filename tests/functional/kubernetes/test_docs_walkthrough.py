"""The Kubernetes walkthrough works on `make run`: every DeviceClass and
claim of docs/kubernetes.md and deploy/kubernetes/ selects a device of the
ResourceSlices the conductor publishes for the all-in-one's host, as its
fake driver reports it by default.

The selectors are evaluated by a small evaluator of the CEL they use
(``device.driver ==``, an attribute ``==``, a capacity ``compareTo(quantity())``
joined by ``&&``); an expression outside it fails the test, so the docs
cannot drift into selectors nothing checks."""
import glob
import os
import re

import kubernetes
import yaml

from cyborg_lite.cmd import all_in_one
from cyborg_lite.db import devices as devices_db
from cyborg_lite.kubernetes import slices as k8s_slices
from cyborg_lite.kubernetes import view as k8s_view
from tests import waiting
from tests.functional import programming_env as pe

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..')
DRIVER = 'cyborg-lite.openstack.org'

_STRING = r'"((?:[^"\\]|\\.)*)"'
_DRIVER = re.compile(r'device\.driver\s*==\s*' + _STRING)
_ATTRIBUTE = re.compile(r'device\.attributes\[' + _STRING + r'\]\.(\w+)\s*'
                        r'==\s*(' + _STRING + r'|true|false|-?\d+)')
_CAPACITY = re.compile(r'device\.capacity\[' + _STRING + r'\]\.(\w+)\s*'
                       r'\.compareTo\(quantity\(' + _STRING + r'\)\)\s*'
                       r'(>=|>|==|<=|<)\s*0')
_COMPARE = {'>=': lambda c: c >= 0, '>': lambda c: c > 0,
            '==': lambda c: c == 0, '<=': lambda c: c <= 0,
            '<': lambda c: c < 0}


def _qualified(domain, name):
    return name if domain == DRIVER else '%s/%s' % (domain, name)


def _term(term, device):
    term = term.strip()
    match = _DRIVER.fullmatch(term)
    if match:
        return match.group(1) == DRIVER
    match = _ATTRIBUTE.fullmatch(term)
    if match:
        domain, name, literal, text = match.groups()
        value = device['attributes'].get(_qualified(domain, name))
        if value is None:
            return False
        if text is not None:
            return value.get('string') == text
        if literal in ('true', 'false'):
            return value.get('bool') is (literal == 'true')
        return value.get('int') == int(literal)
    match = _CAPACITY.fullmatch(term)
    if match:
        domain, name, quantity, op = match.groups()
        entry = device['capacity'].get(_qualified(domain, name))
        if entry is None:
            return False
        have = kubernetes.utils.parse_quantity(entry['value'])
        want = kubernetes.utils.parse_quantity(quantity)
        return _COMPARE[op]((have > want) - (have < want))
    raise AssertionError('CEL this test cannot evaluate: %r' % term)


def matches(expression, device):
    return all(_term(t, device) for t in expression.split('&&'))


def _documented():
    """Every manifest of the walkthrough: deploy/kubernetes/ and the YAML
    blocks of docs/kubernetes.md, as (where, object)."""
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'deploy', 'kubernetes',
                                              '*.yaml'))):
        with open(path) as f:
            found += [(os.path.basename(path), o)
                      for o in yaml.safe_load_all(f) if o]
    with open(os.path.join(ROOT, 'docs', 'kubernetes.md')) as f:
        for block in re.findall(r'```yaml\n(.*?)```', f.read(), re.S):
            found += [('docs/kubernetes.md', o)
                      for o in yaml.safe_load_all(block) if o]
    return found


def _cel(selectors):
    return [s['cel']['expression'] for s in selectors or ()]


def _wanted(objects):
    """(what, [[CEL expressions a device must all match], ...]) of every
    class and every request of a claim (its class's selectors with its
    own): one list, or one per subrequest of a firstAvailable request (a
    device matching any of them serves it)."""
    classes = {o['metadata']['name']: _cel(o['spec'].get('selectors'))
               for _, o in objects if o['kind'] == 'DeviceClass'}
    wanted = [('%s DeviceClass %s' % (where, o['metadata']['name']),
               [classes[o['metadata']['name']]])
              for where, o in objects if o['kind'] == 'DeviceClass']
    for where, obj in objects:
        if obj['kind'] != 'ResourceClaimTemplate':
            continue
        for request in obj['spec']['spec']['devices']['requests']:
            choices = request.get('firstAvailable') or [request['exactly']]
            if any(c['deviceClassName'] not in classes for c in choices):
                # Another driver's device (the CPUs of dra.cpu beside a
                # region, deploy/kubernetes/numa-aligned-claim.yaml).
                continue
            wanted.append((
                '%s %s request %s' % (where, obj['metadata']['name'],
                                      request['name']),
                [classes[c['deviceClassName']] + _cel(c.get('selectors'))
                 for c in choices]))
    return wanted


def _all_in_one_devices(conf, tmp_path):
    """The devices of the slices published for the all-in-one's host: its
    fake driver with the all-in-one's defaults, reported to a conductor."""
    pe.configure(conf, tmp_path)
    for name, value in all_in_one.DEFAULTS['fake_driver'].items():
        conf.set_override(name, value, group='fake_driver')
    env = pe.Env(conf)
    env.conductor.start()
    try:
        env.start_agent()
        regions = (all_in_one.DEFAULTS['fake_driver']['num_cards'] *
                   all_in_one.DEFAULTS['fake_driver']['regions_per_card'])
        assert waiting.until(lambda: len(env.regions()) == regions)
        inventory = k8s_view.of_host(conf, devices_db.load_inventory(pe.HOST))
    finally:
        env.stop()
    return [d for s in k8s_slices.build_slices(inventory, DRIVER)
            for d in s['spec'].get('devices', [])]


def test_every_documented_selector_finds_a_device_of_make_run(
        conf, sqlite_db, tmp_path):
    devices = _all_in_one_devices(conf, tmp_path)
    assert len(devices) == 4
    wanted = _wanted(_documented())
    # deploy/: 4 classes, a claim, the region of the NUMA-aligned claim
    # and the warm claim; the docs: 2 classes, a claim and the warm one.
    assert len(wanted) == 11
    # Every class but the GPU's selects the all-in-one's FPGA regions.
    for what, alternatives in wanted:
        found = [d['name'] for d in devices
                 if any(all(matches(e, d) for e in expressions)
                        for expressions in alternatives)]
        if 'gpu.' in what:
            assert found == [], what
        else:
            assert found, '%s selects none of %s' % (
                what, [d['attributes'] for d in devices])


def test_the_evaluator_refuses_what_it_cannot_read():
    device = {'attributes': {'type': {'string': 'fpga-region'}},
              'capacity': {'localMemory': {'value': '4Gi'}}}
    assert matches('device.attributes["%s"].type == "fpga-region"' % DRIVER,
                   device)
    assert not matches('device.attributes["%s"].type == "gpu"' % DRIVER,
                       device)
    assert matches('device.capacity["%s"].localMemory.compareTo('
                   'quantity("2Gi")) >= 0' % DRIVER, device)
    assert not matches('device.capacity["%s"].localMemory.compareTo('
                       'quantity("8Gi")) >= 0' % DRIVER, device)
    try:
        matches('device.attributes["%s"].type.startsWith("f")' % DRIVER,
                device)
    except AssertionError:
        return
    raise AssertionError('an unknown expression was evaluated')
