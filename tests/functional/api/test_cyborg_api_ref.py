"""docs/api/openapi.yaml against Cyborg's published API reference
(tests/fixtures/cyborg_api_ref, copied from openstack/cyborg, commit in
its SOURCE.md).

Every response field Cyborg documents for devices, deployables,
attributes, device profiles and accelerator requests is in our spec with
a compatible type, unless docs/api.md lists it as not shown; every field
we add is listed in docs/api.md as added. The two lists in docs/api.md
are the tables under "Fields, compared with Cyborg's API reference".
"""
import json
import os
import re

import yaml

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..')
REF = os.path.join(ROOT, 'tests', 'fixtures', 'cyborg_api_ref')
SPEC = os.path.join(ROOT, 'docs', 'api', 'openapi.yaml')
DOC = os.path.join(ROOT, 'docs', 'api.md')

# Cyborg's operations with documented responses -> (our path, the key
# the item is under in the body, or None for the body itself).
OPERATIONS = {
    ('devices.inc', 'GET /v2/devices'): ('/v2/devices', 'devices'),
    ('devices.inc', 'GET /v2/devices/{device_uuid}'): (
        '/v2/devices/{uuid}', None),
    ('deployables.inc', 'GET /v2/deployables'): (
        '/v2/deployables', 'deployables'),
    ('deployables.inc', 'GET /v2/deployables/{deployable_uuid}'): (
        '/v2/deployables/{uuid}', None),
    ('attributes.inc', 'GET /v2/attributes'): (
        '/v2/attributes', 'attributes'),
    ('attributes.inc', 'GET /v2/attributes/{attribute_uuid}'): (
        '/v2/attributes/{uuid}', None),
    ('device_profile.inc', 'GET /v2/device_profiles'): (
        '/v2/device_profiles', 'device_profiles'),
    ('device_profile.inc',
     'GET /v2/device_profiles/{device_profile_name_or_uuid}'): (
        '/v2/device_profiles/{uuid_or_name}', 'device_profile'),
    ('device_profile.inc', 'POST /v2/device_profiles'): (
        '/v2/device_profiles', None),
}
# arqs.inc documents no response parameters: its samples are the
# reference. sample file -> (method, our path, the key of the items).
ARQ_SAMPLES = {
    'accelerator_requests-create-resp.json': (
        'post', '/v2/accelerator_requests', 'arqs'),
    'accelerator_requests-list-resp.json': (
        'get', '/v2/accelerator_requests', 'arqs'),
    'accelerator_requests-getone-resp.json': (
        'get', '/v2/accelerator_requests/{uuid}', None),
}
RESOURCE = {'devices.inc': 'devices', 'deployables.inc': 'deployables',
            'attributes.inc': 'attributes',
            'device_profile.inc': 'device_profiles'}
# Where the reference contradicts Cyborg's own code, the code is what
# clients meet: (resource, field) -> Cyborg's real type.
REFERENCE_ERRATA = {
    # parameters.yaml says string; the controller declares types.integer
    # (an internal id) and the samples show null.
    ('deployables', 'parent_id'): 'integer',
    ('deployables', 'root_id'): 'integer',
}
# The reference's type names -> JSON Schema types.
TYPES = {'string': 'string', 'integer': 'integer', 'array': 'array',
         'a list of dictionaries': 'array', 'dict': 'object',
         'object': 'object', 'boolean': 'boolean'}
SAMPLE_TYPES = {str: 'string', int: 'integer', dict: 'object',
                list: 'array', bool: 'boolean'}


def _read(*parts):
    with open(os.path.join(*parts)) as f:
        return f.read()


def response_parameters(text):
    """{'METHOD /path': [(field, parameters.yaml key)]} of every
    operation's Response section in an api-ref .inc file."""
    found = {}
    operation = section = None
    for line in text.splitlines():
        method = re.fullmatch(r'\.\. rest_method:: (\S+) (\S+)', line)
        if method:
            operation, section = '%s %s' % method.groups(), None
            continue
        if line in ('Request', 'Response'):
            section = line
            continue
        item = re.fullmatch(r'  - (\w+): (\w+)', line)
        if item and section == 'Response' and operation:
            found.setdefault(operation, []).append(item.groups())
    return found


def reference_fields():
    """{resource: {field: JSON type or None (a null in a sample)}}."""
    params = yaml.safe_load(_read(REF, 'parameters.yaml'))
    fields = {}
    for (inc, operation), _ours in OPERATIONS.items():
        listed = response_parameters(_read(REF, inc))[operation]
        resource = RESOURCE[inc]
        for field, key in listed:
            if field in (resource, 'device_profile'):
                continue            # the key the items are under
            kind = REFERENCE_ERRATA.get((resource, field),
                                        TYPES[params[key]['type']])
            fields.setdefault(resource, {})[field] = kind
    for sample, (_method, _path, key) in ARQ_SAMPLES.items():
        body = json.loads(_read(REF, 'api_samples', sample))
        for arq in body[key] if key else [body]:
            for field, value in arq.items():
                kind = SAMPLE_TYPES.get(type(value))
                known = fields.setdefault('accelerator_requests', {})
                if known.get(field) is None:
                    known[field] = kind
    return fields


def _spec():
    with open(SPEC) as f:
        return yaml.safe_load(f)


def _item(spec, method, path, key):
    ok = [r for status, r in spec['paths'][path][method]['responses'].items()
          if status.startswith('2')][0]
    schema = ok['content']['application/json']['schema']
    if key is None:
        return schema
    inner = schema['properties'][key]
    return inner['items'] if inner['type'] == 'array' else inner


def our_items():
    """[(resource, item schema)] of each operation compared."""
    spec = _spec()
    items = []
    for (inc, operation), (path, key) in OPERATIONS.items():
        method = operation.split()[0].lower()
        items.append((RESOURCE[inc], _item(spec, method, path, key)))
    for method, path, key in ARQ_SAMPLES.values():
        items.append(('accelerator_requests', _item(spec, method, path,
                                                    key)))
    return items


def documented_differences(title):
    """{(resource, field)} from the docs/api.md table under ``title``."""
    text = _read(DOC)
    start = text.index(title)
    rows = set()
    for line in text[start:].splitlines()[2:]:
        row = re.fullmatch(r'\| `(\w+)` \| `(\w+)` \|.*\|', line)
        if row:
            rows.add(row.groups())
        elif rows and not line.startswith('|'):
            break
    return rows


def _types(schema):
    kinds = schema['type']
    return {kinds} if isinstance(kinds, str) else set(kinds)


def test_the_reference_was_read():
    fields = reference_fields()
    assert set(fields) == {'devices', 'deployables', 'attributes',
                           'device_profiles', 'accelerator_requests'}
    assert fields['devices']['std_board_info'] == 'string'
    assert fields['device_profiles']['groups'] == 'array'
    assert fields['accelerator_requests']['attach_handle_info'] == 'object'
    assert fields['accelerator_requests']['hostname'] == 'string'


def test_every_documented_field_is_ours_with_a_compatible_type():
    reference = reference_fields()
    not_shown = documented_differences('Cyborg fields not shown')
    problems = []
    for resource, item in our_items():
        for field, kind in reference[resource].items():
            ours = item['properties'].get(field)
            if ours is None:
                if (resource, field) not in not_shown:
                    problems.append('%s.%s is missing' % (resource, field))
                continue
            non_null = _types(ours) - {'null'}
            if kind is not None and non_null != {kind}:
                problems.append('%s.%s is %s, Cyborg documents %s'
                                % (resource, field, sorted(non_null), kind))
            if kind == 'array' and field == 'groups':
                assert ours['items']['type'] == 'object'
    assert problems == []


def test_every_field_we_add_is_listed_as_a_difference():
    reference = reference_fields()
    ours = {(resource, field) for resource, item in our_items()
            for field in item['properties']}
    added = {(resource, field) for resource, field in ours
             if field not in reference[resource]}
    assert added == documented_differences('Fields cyborg_lite adds')
    not_shown = documented_differences('Cyborg fields not shown')
    assert not_shown == {(resource, field)
                         for resource, fields in reference.items()
                         for field in fields
                         if (resource, field) not in ours}


def test_null_in_cyborgs_samples_is_allowed_by_ours():
    spec_items = dict(our_items())
    arq = spec_items['accelerator_requests']
    for sample in ARQ_SAMPLES:
        body = json.loads(_read(REF, 'api_samples', sample))
        for item in body.get('arqs', [body]):
            for field, value in item.items():
                if value is None:
                    assert 'null' in _types(arq['properties'][field]), field
