"""Bodies and query strings of /v2/programs (programming jobs)."""
from cyborg_lite.api.schemas import common
from cyborg_lite.db import models
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
    'state': {'type': 'string', 'enum': list(models.JOB_STATES)},
    'hostname': {'type': 'string', 'maxLength': 255},
})


VIEW = common.view({
    'uuid': common.STRING,
    'state': {'type': 'string', 'enum': list(models.JOB_STATES)},
    'hostname': common.NULLABLE_STRING, 'attempts': common.INTEGER,
    'max_attempts': common.INTEGER, 'error': common.NULLABLE_STRING,
    'force': {'type': 'boolean'}, 'project_id': common.NULLABLE_STRING,
    'started_at': common.NULLABLE_STRING,
    'finished_at': common.NULLABLE_STRING,
    'deployable_uuid': common.STRING, 'bitstream_uuid': common.STRING,
})
LIST = common.collection('programs', VIEW)
