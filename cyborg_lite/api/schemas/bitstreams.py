"""Bodies and query strings of /v2/bitstreams.

``region_type`` and ``function_id`` may be left out at creation: the
upload fills them from the image header (GBS, xclbin). Given, they are
compared with the header, in the canonical form of
common.bitstream_formats.normalise_id (uuids as 32 lowercase hex).
"""
from cyborg_lite.api.schemas import common
from cyborg_lite.bitstreams import formats as bitstream_formats
from cyborg_lite.bitstreams import signatures
from cyborg_lite.common import enums
from cyborg_lite.db import bitstreams as db_bitstreams

# At least one visible character: an id of spaces names nothing. (Not
# \S: the engines' \s differ on \x1c-\x1f, \x85 and \ufeff; none is visible.)
_ID = {'type': 'string', 'minLength': 1, 'maxLength': 64,
       'pattern': r'[^\s\x00-\x1f\x7f-\x9f\ufeff]'}
_TEXT = {'type': 'string', 'maxLength': 255}
FORMAT = {'type': 'string', 'enum': list(bitstream_formats.FORMATS)}
VISIBILITY = {'type': 'string', 'enum': list(enums.VISIBILITIES)}
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
    'status': {'type': 'string', 'enum': list(enums.BITSTREAM_STATUSES)},
})

# PUT /v2/bitstreams/{uuid}/signature: the base64 of the raw signature
# (bitstreams/signatures.py); ``key_id`` names the key that made it (left
# out: any key trusted for the bitstream's project that verifies it).
SIGNATURE = {
    'type': 'object',
    'properties': {
        'signature': {'type': 'string', 'minLength': 1,
                      # base64 of MAX_SIGNATURE_BYTES
                      'maxLength': 4 * (signatures.MAX_SIGNATURE_BYTES // 3
                                        + 1)},
        'key_id': {'type': 'string', 'pattern': signatures.KEY_ID_PATTERN},
    },
    'required': ['signature'],
    'additionalProperties': False,
}
STATUS = {'type': 'string', 'enum': list(signatures.STATUSES)}

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
    'status': {'type': 'string', 'enum': list(enums.BITSTREAM_STATUSES)},
    'visibility': VISIBILITY, 'project_id': common.NULLABLE_STRING,
    # From the signed bitstreams microversion on.
    'signature_status': STATUS, 'signer': common.NULLABLE_STRING,
    'key_id': common.NULLABLE_STRING, 'signed_at': common.NULLABLE_STRING,
}, optional=('signature_status', 'signer', 'key_id', 'signed_at'))
LIST = common.collection('bitstreams', VIEW)
SIGNATURE_VIEW = {
    'type': 'object',
    'properties': {
        'bitstream_uuid': common.STRING, 'sha256': common.NULLABLE_STRING,
        'signature': common.NULLABLE_STRING,
        'signature_status': STATUS, 'signer': common.NULLABLE_STRING,
        'key_id': common.NULLABLE_STRING,
        'signed_at': common.NULLABLE_STRING,
        'reason': common.NULLABLE_STRING,
    },
    'required': ['bitstream_uuid', 'sha256', 'signature',
                 'signature_status', 'signer', 'key_id', 'signed_at',
                 'reason'],
    'additionalProperties': False,
}
