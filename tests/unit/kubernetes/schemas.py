"""Objects we write against the strict published schemas of Kubernetes
1.34 to 1.37 (kubernetes-validate), and the rules those schemas leave out
that a real apiserver applies to what we send, written here from the API's
documentation independently of cyborg_lite's own checks."""
import re

import kubernetes_validate

VERSIONS = ('1.34', '1.35', '1.36', '1.37')
_LABEL = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?')
_SUBDOMAIN = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?'
                        r'(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
_IDENT = re.compile(r'[A-Za-z_][A-Za-z0-9_]{0,31}')


def schema_errors(obj):
    """One line per Kubernetes version whose strict schema refuses obj."""
    errors = []
    for version in VERSIONS:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            errors.append('%s: %s at %s' % (version, e.message, e.json_path))
    return errors


def _subdomain(value, max_len=253):
    return (isinstance(value, str) and len(value) <= max_len and
            _SUBDOMAIN.fullmatch(value) is not None)


def _qualified(name):
    domain, _, ident = name.rpartition('/')
    return ((not domain or _subdomain(domain, 63)) and
            _IDENT.fullmatch(ident) is not None)


def slice_rule_errors(obj):
    """What apiserver validation of a ResourceSlice would refuse and the
    schema does not: names, lengths, counts."""
    errors = []
    spec = obj.get('spec', {})
    if not _subdomain(obj.get('metadata', {}).get('name')):
        errors.append('metadata.name is not a DNS subdomain')
    if not _subdomain(spec.get('driver'), 63):
        errors.append('spec.driver is not a DNS subdomain <= 63')
    devices = spec.get('devices') or []
    limit = 64 if any(d.get('taints') for d in devices) else 128
    if len(devices) > limit:
        errors.append('%d devices, at most %d' % (len(devices), limit))
    for device in devices:
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
    return errors
