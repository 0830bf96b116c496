"""GET /v2/services (2.12): the answer's schema."""
from cyborg_lite.api.schemas import common

_NULLABLE = common.NULLABLE_STRING
SERVICE = {
    'type': 'object', 'additionalProperties': False,
    'required': ['kind', 'host', 'release', 'rpc_versions', 'state',
                 'heartbeat_at'],
    'properties': {
        'kind': {'type': 'string', 'enum': ['agent', 'conductor', 'api']},
        'host': common.STRING,
        # null: a service of a release that does not say it.
        'release': _NULLABLE,
        'rpc_versions': {'type': ['object', 'null'],
                         'additionalProperties': {'type': 'string'}},
        'state': {'type': 'string', 'enum': ['up', 'down']},
        'heartbeat_at': common.STRING,
    },
}
LIST = {
    'type': 'object', 'additionalProperties': False,
    'required': ['services'],
    'properties': {'services': {'type': 'array', 'items': SERVICE}},
}
