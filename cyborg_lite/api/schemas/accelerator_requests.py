"""Bodies and query strings of /v2/accelerator_requests."""
from cyborg_lite.api.schemas import common
from cyborg_lite.common import states
from cyborg_lite.db import arqs as db_arqs

CREATE = {
    'type': 'object',
    'properties': {
        # Any string: one that names no profile ('' included) is a 404,
        # as Cyborg answers (cyborg-tempest-plugin checks it).
        'device_profile_name': {'type': 'string', 'maxLength': 4096},
        # python-cyborgclient always sends these two, null when unset.
        'device_profile_group_id': {'type': ['integer', 'null'],
                                    'minimum': 0, 'maximum': 63},
        'image_uuid': {'oneOf': [common.UUID, {'type': 'null'}]},
    },
    'required': ['device_profile_name'],
    'additionalProperties': False,
}

LIST_QUERY = common.list_query(db_arqs.SORT_KEYS, {
    'instance': common.UUID,
    'bind_state': {'type': 'string', 'enum': ['resolved']},
})

_UUIDS = {'type': 'string', 'maxLength': 37 * 100,
          'pattern': '^%s(,%s)*$' % (common.UUID_PATTERN[1:-1],
                                     common.UUID_PATTERN[1:-1])}
DELETE_QUERY = {
    'type': 'object',
    'properties': {'arqs': _UUIDS, 'instance': common.UUID},
    'additionalProperties': False,
    # Exactly one of the two forms.
    'oneOf': [{'required': ['arqs']}, {'required': ['instance']}],
}

BIND_PATHS = ['/hostname', '/device_rp_uuid', '/instance_uuid',
              '/project_id']

_OP = {
    'type': 'object',
    'properties': {
        'op': {'type': 'string', 'enum': ['add', 'remove']},
        'path': {'type': 'string', 'enum': BIND_PATHS},
        'value': {'type': 'string', 'minLength': 1, 'maxLength': 255},
    },
    'required': ['op', 'path'],
    'additionalProperties': False,
    'if': {'properties': {'op': {'const': 'add'}}},
    'then': {'required': ['value']},
}

# {"<arq uuid>": [JSON patch ops], ...}
PATCH = {
    'type': 'object',
    'minProperties': 1,
    'maxProperties': 64,
    'propertyNames': {'pattern': common.UUID_PATTERN},
    'additionalProperties': {'type': 'array', 'minItems': 1, 'maxItems': 4,
                             'items': _OP},
}


# An ARQ; ``project_id`` from 2.1. Unbound, attach_handle_type is '' and
# attach_handle_info {}, as in Cyborg.
VIEW = common.view({
    'uuid': common.STRING,
    'state': {'type': 'string', 'enum': list(states.ARQ.states)},
    'device_profile_name': common.STRING,
    'device_profile_group_id': common.INTEGER,
    'hostname': common.NULLABLE_STRING,
    'device_rp_uuid': common.NULLABLE_STRING,
    'instance_uuid': common.NULLABLE_STRING,
    'attach_handle_type': common.STRING,
    'attach_handle_uuid': common.NULLABLE_STRING,
    'attach_handle_info': {'type': 'object',
                           'additionalProperties': common.STRING},
    'error': common.NULLABLE_STRING,
    'project_id': common.NULLABLE_STRING,
    # From 2.6: whether the region is on a NUMA node of the instance.
    'numa_aligned': {'enum': [True, False, 'unknown']},
    # From 2.13: the region a BindStarted ARQ's bind waits for.
    'bind_waits_for': common.NULLABLE_STRING,
}, optional=['project_id', 'numa_aligned', 'bind_waits_for'])
LIST = common.collection('arqs', VIEW)
