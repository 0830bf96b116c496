"""Bodies and query strings of /v2/bitstreams.

``region_type`` and ``function_id`` may be left out at creation: the
upload fills them from the image header (GBS, xclbin). Given, they are
compared with the header, in the canonical form of
common.bitstream_formats.normalise_id (uuids as 32 lowercase hex).
"""
from cyborg_lite.api.schemas import common
from cyborg_lite.common import bitstream_formats
from cyborg_lite.db import bitstreams as db_bitstreams
from cyborg_lite.db import models

# At least one visible character: an id of spaces names nothing. (Not
# \S: the engines' \s differ on \x1c-\x1f, \x85 and \ufeff; none is visible.)
_ID = {'type': 'string', 'minLength': 1, 'maxLength': 64,
       'pattern': r'[^\s\x00-\x1f\x7f-\x9f\ufeff]'}
_TEXT = {'type': 'string', 'maxLength': 255}
FORMAT = {'type': 'string', 'enum': list(bitstream_formats.FORMATS)}
VISIBILITY = {'type': 'string', 'enum': list(models.VISIBILITIES)}
SHA256 = {'type': 'string', 'pattern': '^[0-9a-fA-F]{64}$'}

CREATE = {
    'type': 'object',
    'properties': {
        'name': common.NAME,
        'version': {'type': 'string', 'maxLength': 64},
        'vendor': _TEXT,
        'format': FORMAT,
        'region_type': dict(_ID, maxLength=255),
        'function_id': _ID,
        'function_name': _TEXT,
        'local_memory_mb': {'type': 'integer', 'minimum': 0,
                            'maximum': 2 ** 31 - 1},
        'sha256': SHA256,
        'visibility': VISIBILITY,
    },
    'required': ['name', 'format'],
    'additionalProperties': False,
}

LIST_QUERY = common.list_query(db_bitstreams.SORT_KEYS, {
    'region_type': dict(_ID, maxLength=255),
    'function_id': _ID,
    'vendor': _TEXT,
    'name': _TEXT,
    'format': FORMAT,
    'visibility': VISIBILITY,
    'status': {'type': 'string', 'enum': list(models.BITSTREAM_STATUSES)},
})

# The image itself, in the OpenAPI description of the upload. The bound
# keeps fuzzing fast; the real limit is [bitstreams]max_size_mb.
IMAGE = {'type': 'string', 'format': 'binary', 'maxLength': 4096}


VIEW = common.view({
    'uuid': common.STRING, 'name': common.STRING,
    'version': common.NULLABLE_STRING, 'vendor': common.NULLABLE_STRING,
    'format': FORMAT, 'region_type': common.NULLABLE_STRING,
    'function_id': common.NULLABLE_STRING,
    'function_name': common.NULLABLE_STRING,
    'local_memory_mb': common.INTEGER, 'sha256': common.NULLABLE_STRING,
    'size': common.NULLABLE_INTEGER,
    'status': {'type': 'string', 'enum': list(models.BITSTREAM_STATUSES)},
    'visibility': VISIBILITY, 'project_id': common.NULLABLE_STRING,
})
LIST = common.collection('bitstreams', VIEW)
