"""Bodies and query strings of /v2/device_profiles.

A group is a flat object of Cyborg's request-group keys:

- ``resources:<RC>``: how many, a positive integer (or its string); RC is a
  standard accelerator class or CUSTOM_*.
- ``trait:CUSTOM_*``: ``required`` or ``forbidden`` (only custom traits:
  standard traits describe hosts, not accelerators).
- ``accel:bitstream_id`` (a uuid), ``accel:function_id``,
  ``accel:numa_affinity`` (``required``: the groups carrying it on one
  NUMA node, see placement/query.py), and any other ``accel:*``
  key with a string value (passed through for drivers).

Whitespace around the part after the prefix is stripped, as Cyborg does,
by the handler before this schema is applied.
"""
from cyborg_lite.api.schemas import common
from cyborg_lite.db import device_profiles as db_profiles
from cyborg_lite.placement import query as placement_query

# Cyborg's SUPPORT_RESOURCES.
STANDARD_RESOURCE_CLASSES = ('FPGA', 'GPU', 'VGPU', 'PGPU', 'CUSTOM_QAT',
                             'CUSTOM_NIC', 'CUSTOM_SSD')
RC_PATTERN = '^resources:(%s|CUSTOM_[A-Z0-9_]+)$' % '|'.join(
    STANDARD_RESOURCE_CLASSES)
TRAIT_PATTERN = '^trait:CUSTOM_[A-Z0-9_]+$'
ACCEL_PATTERN = '^accel:[A-Za-z0-9_.:-]+$'
# More accelerators than this in one group is a mistake, and each one
# becomes a database row at ARQ creation.
MAX_PER_GROUP = 128

# A positive amount: an accelerator count (capped per group by the
# controller) or a size such as CUSTOM_FPGA_LOCAL_MEMORY_MB.
MAX_AMOUNT = 2 ** 31 - 1
_COUNT = {'oneOf': [
    {'type': 'integer', 'minimum': 1, 'maximum': MAX_AMOUNT},
    {'type': 'string', 'pattern': '^ *[1-9][0-9]{0,9} *$'},
]}

GROUP = {
    'type': 'object',
    'minProperties': 1,
    'properties': {
        'accel:bitstream_id': common.UUID,
        'accel:function_id': {'type': 'string', 'minLength': 1,
                              'maxLength': 64},
        placement_query.NUMA_AFFINITY_KEY: {
            'type': 'string',
            'enum': list(placement_query.NUMA_AFFINITY_VALUES)},
    },
    'patternProperties': {
        RC_PATTERN: _COUNT,
        TRAIT_PATTERN: {'type': 'string', 'enum': ['required', 'forbidden']},
        ACCEL_PATTERN: {'type': 'string', 'maxLength': 255},
    },
    'additionalProperties': False,
    # Loading a named bitstream and asking for a function are two ways to
    # say what to load; with both, which one wins would be arbitrary.
    'not': {'required': ['accel:bitstream_id', 'accel:function_id']},
}

PROFILE = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'pattern': '^[a-zA-Z0-9-_]+$',
                 'minLength': 1, 'maxLength': 255},
        'groups': {'type': 'array', 'minItems': 1, 'maxItems': 64,
                   'items': GROUP},
        'uuid': common.UUID,
        'description': {'type': ['string', 'null'], 'maxLength': 65535},
    },
    'required': ['name', 'groups'],
    'additionalProperties': False,
}

# Cyborg takes a list holding exactly one profile.
CREATE = {'type': 'array', 'minItems': 1, 'maxItems': 1, 'items': PROFILE}

_NAMES = {'type': 'string', 'pattern': '^[a-zA-Z0-9-_]+(,[a-zA-Z0-9-_]+)*$',
          'maxLength': 4096}

LIST_QUERY = common.list_query(db_profiles.SORT_KEYS, {'name': _NAMES})
EXPLAIN_QUERY = {'type': 'object',
                 'properties': {'hostname': {'type': 'string',
                                             'minLength': 1,
                                             'maxLength': 255}},
                 'additionalProperties': False}
DELETE_QUERY = {'type': 'object', 'properties': {'value': _NAMES},
                'additionalProperties': False}


VIEW = common.view({
    'uuid': common.STRING, 'name': common.STRING,
    'description': common.NULLABLE_STRING,
    # Stored normalised: every value a string.
    'groups': {'type': 'array', 'items': {
        'type': 'object', 'additionalProperties': common.STRING}},
    'project_id': common.NULLABLE_STRING,
})
LIST = common.collection('device_profiles', VIEW)
# GET one, and only it, is wrapped in a key, as in Cyborg.
SHOW = {'type': 'object', 'properties': {'device_profile': VIEW},
        'required': ['device_profile'], 'additionalProperties': False}


# What /v2/device_profiles/{name}/explain answers (2.10): the steps are
# placement/explain.STEPS.
_OBJECT_OF_STRINGS = {'type': 'object', 'additionalProperties': True}
_EXPLAINED_GROUP = {
    'type': 'object',
    'properties': {
        'group': common.INTEGER,
        'request': {'type': 'object', 'additionalProperties': common.STRING},
        'funnel': {'type': 'array', 'items': {
            'type': 'object',
            'properties': {'step': common.STRING, 'hosts': common.INTEGER,
                           'devices': common.INTEGER},
            'required': ['step', 'hosts', 'devices'],
            'additionalProperties': False}},
        'blocking': {'oneOf': [{'type': 'null'}, {
            'type': 'object',
            'properties': {'step': common.STRING,
                           'kind': {'enum': ['permanent', 'transient']},
                           'holders': {'type': 'array',
                                       'items': _OBJECT_OF_STRINGS}},
            'required': ['step', 'kind', 'holders'],
            'additionalProperties': False}]},
        'near_misses': {'type': 'array', 'items': {
            'type': 'object',
            'properties': {key: common.STRING for key in (
                'hostname', 'device_uuid', 'deployable_uuid',
                'deployable_name', 'failed', 'why')},
            'required': ['hostname', 'deployable_uuid', 'failed', 'why'],
            'additionalProperties': False}},
        'near_misses_total': common.INTEGER,
    },
    'required': ['group', 'request', 'funnel', 'blocking', 'near_misses',
                 'near_misses_total'],
    'additionalProperties': False,
}
EXPLAIN = {
    'type': 'object',
    'properties': {
        'device_profile': common.STRING,
        'hostname': common.NULLABLE_STRING,
        'hosts': common.INTEGER,
        'result': {'enum': ['candidates', 'no_candidates']},
        'groups': {'type': 'array', 'items': _EXPLAINED_GROUP},
    },
    'required': ['device_profile', 'hostname', 'hosts', 'result', 'groups'],
    'additionalProperties': False,
}
