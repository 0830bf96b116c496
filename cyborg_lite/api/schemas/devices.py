"""Query strings of /v2/devices."""
from cyborg_lite.api.schemas import common
from cyborg_lite.common import enums
from cyborg_lite.db import devices as db_devices

_TEXT = {'type': 'string', 'maxLength': 255}

# Any type may be asked for, as in Cyborg: one that is none of these
# matches no device (the handler does not ask the database, which refuses
# to even compare an enumerated column with another value).
TYPES = enums.DEVICE_TYPES

LIST_QUERY = common.list_query(db_devices.SORT_KEYS, {
    'type': _TEXT,
    'vendor': _TEXT, 'hostname': _TEXT,
    'status': {'type': 'string', 'enum': list(enums.DEVICE_STATUSES)},
})


# What GET shows of a device; ``status`` from 2.3, ``unavailable_reasons``
# from 2.5, topology from 2.6, health from 2.7.
VIEW = common.view({
    'uuid': common.STRING, 'type': common.STRING, 'vendor': common.STRING,
    'model': common.STRING, 'std_board_info': common.NULLABLE_STRING,
    'vendor_board_info': common.NULLABLE_STRING, 'hostname': common.STRING,
    'status': {'type': 'string', 'enum': list(enums.DEVICE_STATUSES)},
    'unavailable_reasons': {'type': 'array', 'items': common.STRING},
    **common.TOPOLOGY, **common.HEALTH,
}, optional=['status', 'unavailable_reasons', *common.TOPOLOGY,
             *common.HEALTH])
LIST = common.collection('devices', VIEW)

HISTORY_QUERY = {
    'type': 'object', 'additionalProperties': False,
    'properties': {'limit': common.list_query((), {})['properties']['limit']},
}
_NULLABLE = common.NULLABLE_STRING
HISTORY_ROW = {
    'type': 'object', 'additionalProperties': False,
    'required': ['event', 'state', 'deployable_uuid', 'object_uuid',
                 'project_id', 'instance_uuid', 'namespace', 'claim_name',
                 'reason', 'created_at'],
    'properties': {
        'event': common.STRING, 'state': _NULLABLE,
        'deployable_uuid': _NULLABLE, 'object_uuid': _NULLABLE,
        'project_id': _NULLABLE, 'instance_uuid': _NULLABLE,
        'namespace': _NULLABLE, 'claim_name': _NULLABLE,
        'reason': _NULLABLE, 'created_at': common.STRING,
        # From 2.11: a programming job's end row's seconds (else null).
        'seconds': {'type': ['number', 'null']},
    },
}
HISTORY = {
    'type': 'object', 'additionalProperties': False,
    'required': ['device_uuid', 'history'],
    'properties': {'device_uuid': common.STRING,
                   'history': {'type': 'array', 'items': HISTORY_ROW}},
}
