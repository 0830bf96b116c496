"""Objects we write against the strict published schemas of Kubernetes
1.34 to 1.37 (kubernetes-validate), and the rules those schemas leave out
that a real apiserver applies to what we send, written here from the API's
documentation independently of cyborg_lite's own checks."""
import functools
import re

import jsonschema
from kubernetes_validate import utils as kv_utils
import referencing

VERSIONS = ('1.34', '1.35', '1.36', '1.37')
_LABEL = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?')
_SUBDOMAIN = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?'
                        r'(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
_IDENT = re.compile(r'[A-Za-z_][A-Za-z0-9_]{0,31}')
_LABEL_VALUE = re.compile(r'(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?'
                          r'[A-Za-z0-9])?')


@functools.lru_cache(maxsize=None)
def _validator(version, kind, api_version):
    """kubernetes_validate.validate() reads its schema files on every call;
    the same strict schemas, loaded once."""
    folder = 'kubernetes-json-schema/v%s.0-local-strict' % version
    group = re.sub(r'^([^./]*)(?:\.[^/]*)?/', r'\1-', api_version)
    schema = kv_utils.schema_contents('%s/%s-%s.json' % (
        folder, kind.lower(), group), version)
    definitions = kv_utils.schema_contents(folder + '/_definitions.json',
                                           version)
    registry = referencing.Resource.from_contents(schema) @ \
        referencing.Registry()
    registry = referencing.Resource.from_contents(definitions) @ registry
    return jsonschema.Draft202012Validator(schema, registry=registry)


def schema_errors(obj, versions=VERSIONS):
    """One line per Kubernetes version whose strict schema refuses obj."""
    errors = []
    for version in versions:
        validator = _validator(version, obj['kind'], obj['apiVersion'])
        for error in validator.iter_errors(obj):
            errors.append('%s: %s at %s' % (version, error.message,
                                            error.json_path))
    return errors


def _subdomain(value, max_len=253):
    return (isinstance(value, str) and len(value) <= max_len and
            _SUBDOMAIN.fullmatch(value) is not None)


def _qualified(name):
    domain, _, ident = name.rpartition('/')
    return ((not domain or _subdomain(domain, 63)) and
            _IDENT.fullmatch(ident) is not None)


def _counters_errors(where, counters):
    if not counters or len(counters) > 32:
        return ['%s: 1 to 32 counters' % where]
    return ['%s: counter %r is not a DNS label' % (where, name)
            for name in counters
            if len(name) > 63 or not _LABEL.fullmatch(name)]


def _counter_set_errors(spec, counter_sets_with_devices):
    """sharedCounters: from 1.35 in slices of their own (at most 8 sets
    of at most 32 counters); in 1.34 beside the devices that consume
    them (at most 32 counters in all sets of a slice)."""
    errors = []
    sets = spec.get('sharedCounters') or []
    names = [s['name'] for s in sets]
    if len(set(names)) != len(names):
        errors.append('duplicate counter set names')
    for counter_set in sets:
        if len(counter_set['name']) > 63 or \
                not _LABEL.fullmatch(counter_set['name']):
            errors.append('counter set %r is not a DNS label'
                          % counter_set['name'])
        errors += _counters_errors('counter set ' + counter_set['name'],
                                   counter_set['counters'])
    if counter_sets_with_devices:
        if sum(len(s['counters']) for s in sets) > 32:
            errors.append('over 32 counters in all counter sets')
    else:
        # NOTE: set, even empty ([] decodes to a non-nil Go slice).
        if spec.get('sharedCounters') is not None and \
                spec.get('devices') is not None:
            errors.append('only one of sharedCounters or devices is allowed')
        if len(sets) > 8:
            errors.append('over 8 counter sets')
    return errors


def _consumption_errors(device, spec, counter_sets_with_devices):
    name = device.get('name', '')
    consumed = device.get('consumesCounters') or []
    errors = []
    if len(consumed) > 2:
        errors.append('device %s: over 2 counter consumptions' % name)
    if len({c['counterSet'] for c in consumed}) != len(consumed):
        errors.append('device %s: a counter set twice' % name)
    here = {s['name']: s['counters']
            for s in spec.get('sharedCounters') or []}
    for consumption in consumed:
        errors += _counters_errors('device %s' % name,
                                   consumption['counters'])
        if counter_sets_with_devices and not \
                set(consumption['counters']) <= set(
                    here.get(consumption['counterSet'], ())):
            errors.append('device %s: must reference a counterSet defined '
                          'in the ResourceSlice sharedCounters' % name)
    return errors


def slice_rule_errors(obj, counter_sets_with_devices=False):
    """What apiserver validation of a ResourceSlice would refuse and the
    schema does not: names, lengths, counts. ``counter_sets_with_devices``:
    the rules of 1.34 (with DRAPartitionableDevices on) for counters, not
    those of 1.35 on."""
    errors = []
    spec = obj.get('spec', {})
    if not _subdomain(obj.get('metadata', {}).get('name')):
        errors.append('metadata.name is not a DNS subdomain')
    if not _subdomain(spec.get('driver'), 63):
        errors.append('spec.driver is not a DNS subdomain <= 63')
    devices = spec.get('devices') or []
    limit = 64 if any(d.get('taints') or d.get('consumesCounters')
                      for d in devices) else 128
    if len(devices) > limit:
        errors.append('%d devices, at most %d' % (len(devices), limit))
    errors += _counter_set_errors(spec, counter_sets_with_devices)
    for device in devices:
        errors += _consumption_errors(device, spec,
                                      counter_sets_with_devices)
        name = device.get('name', '')
        if len(name) > 63 or not _LABEL.fullmatch(name):
            errors.append('device name %r is not a DNS label' % name)
        attributes = device.get('attributes') or {}
        capacity = device.get('capacity') or {}
        if len(attributes) + len(capacity) > 32:
            errors.append('device %s: over 32 attributes + capacities'
                          % name)
        for key in list(attributes) + list(capacity):
            if not _qualified(key):
                errors.append('device %s: bad name %r' % (name, key))
        for key, value in attributes.items():
            if len(value) != 1:
                errors.append('device %s: %s needs exactly one value'
                              % (name, key))
            text = value.get('string', value.get('version'))
            if isinstance(text, str) and len(text) > 64:
                errors.append('device %s: %s longer than 64' % (name, key))
        if len(device.get('taints') or []) > 16:
            errors.append('device %s: over 16 taints' % name)
        for taint in device.get('taints') or []:
            # DeviceTaint.effect: NoSchedule, NoExecute; None from 1.35.
            if taint.get('effect') not in ('None', 'NoSchedule',
                                           'NoExecute'):
                errors.append('device %s: taint effect %r' % (
                    name, taint.get('effect')))
            if not _LABEL_VALUE.fullmatch(taint.get('value', '')):
                errors.append('device %s: taint value %r' % (
                    name, taint.get('value')))
        errors += _binding_condition_errors(device)
    return errors


def _condition_type(value):
    """A metav1.Condition type: a qualified name, ``[prefix/]name``."""
    prefix, _, name = value.rpartition('/')
    return ((not prefix or _subdomain(prefix)) and len(name) <= 63 and
            _LABEL_VALUE.fullmatch(name) is not None and name != '')


def _binding_condition_errors(device):
    """KEP-5007: at most 4 of each, valid condition types, and the two
    lists set together."""
    errors = []
    name = device.get('name', '')
    conditions = device.get('bindingConditions') or []
    failures = device.get('bindingFailureConditions') or []
    for field, types in (('bindingConditions', conditions),
                         ('bindingFailureConditions', failures)):
        if len(types) > 4 or not all(map(_condition_type, types)):
            errors.append('device %s: bad %s %r' % (name, field, types))
    if bool(conditions) != bool(failures):
        errors.append('device %s: bindingConditions and '
                      'bindingFailureConditions go together' % name)
    return errors


_QUALIFIED_NAME = re.compile(r'([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]')


def event_rule_errors(event):
    """What the apiserver's events.k8s.io/v1 validation adds to the
    schema (ValidateEventCreate): eventTime, reportingController (a
    qualified name), reportingInstance, action and reason (at most 128
    characters), note at most 1 kB, type Normal or Warning, a subdomain
    name, and regarding in the Event's namespace."""
    errors = []
    if not _subdomain(event['metadata'].get('name')):
        errors.append('metadata.name: not a DNS subdomain')
    if not event.get('eventTime'):
        errors.append('eventTime: Required value')
    controller = event.get('reportingController') or ''
    prefix, _, name = controller.rpartition('/')
    if not name or not _QUALIFIED_NAME.fullmatch(name) or (
            prefix and not _subdomain(prefix)):
        errors.append('reportingController: not a qualified name')
    for field in ('reportingInstance', 'action', 'reason'):
        if not event.get(field) or len(event[field]) > 128:
            errors.append('%s: Required, at most 128 characters' % field)
    if len(event.get('note') or '') > 1024:
        errors.append('note: Too long: at most 1024 bytes')
    if event.get('type') not in ('Normal', 'Warning'):
        errors.append('type: Unsupported value')
    regarding = event.get('regarding') or {}
    if regarding.get('namespace') not in (
            None, event['metadata'].get('namespace')):
        errors.append('regarding.namespace: does not match event.namespace')
    return errors
