"""Bodies and query strings of /v2/programs (programming jobs)."""
from cyborg_lite.api.schemas import common
from cyborg_lite.common import states
from cyborg_lite.db import programming_jobs as db_programs

CREATE = {
    'type': 'object',
    'properties': {
        'deployable_uuid': common.UUID,
        'bitstream_uuid': common.UUID,
        'force': {'type': 'boolean'},
    },
    'required': ['deployable_uuid', 'bitstream_uuid'],
    'additionalProperties': False,
}

LIST_QUERY = common.list_query(db_programs.SORT_KEYS, {
    'deployable_uuid': common.UUID,
    'bitstream_uuid': common.UUID,
    'state': {'type': 'string', 'enum': list(states.JOB.states)},
    'hostname': {'type': 'string', 'maxLength': 255},
})


# One agent's go at a job (db/programming_jobs tries).
_TRY_FIELDS = {
    'number': common.INTEGER, 'hostname': common.NULLABLE_STRING,
    'outcome': {'type': 'string', 'enum': list(states.JOB_TRY_OUTCOMES)},
    'error': common.NULLABLE_STRING, 'started_at': common.STRING,
    'ended_at': common.NULLABLE_STRING,
}
TRY = {'type': 'object', 'properties': _TRY_FIELDS,
       'required': sorted(_TRY_FIELDS), 'additionalProperties': False}

VIEW = common.view({
    'uuid': common.STRING,
    'state': {'type': 'string', 'enum': list(states.JOB.states)},
    'hostname': common.NULLABLE_STRING, 'attempts': common.INTEGER,
    'max_attempts': common.INTEGER, 'error': common.NULLABLE_STRING,
    'force': {'type': 'boolean'}, 'project_id': common.NULLABLE_STRING,
    'started_at': common.NULLABLE_STRING,
    'finished_at': common.NULLABLE_STRING,
    'deployable_uuid': common.STRING, 'bitstream_uuid': common.STRING,
    'tries': {'type': 'array', 'items': TRY},
})
LIST = common.collection('programs', VIEW)

# /v2/programs/stats (2.11).
STATS_QUERY = {
    'type': 'object',
    'properties': {'project_id': {'type': 'string', 'minLength': 1,
                                  'maxLength': 64}},
    'additionalProperties': False,
}
_STATS_ROW = {
    'type': 'object',
    'properties': {'project_id': common.NULLABLE_STRING,
                   'namespace': common.NULLABLE_STRING,
                   'jobs': common.INTEGER, 'seconds': {'type': 'number'}},
    'required': ['project_id', 'namespace', 'jobs', 'seconds'],
    'additionalProperties': False,
}
STATS = {'type': 'object',
         'properties': {'programming_seconds': {'type': 'array',
                                                'items': _STATS_ROW}},
         'required': ['programming_seconds'], 'additionalProperties': False}
