"""Bodies, query strings and views of /v2/trusted_keys and
/v2/signature_policies (signed bitstreams, bitstreams/signatures.py)."""
from cyborg_lite.api.schemas import common
from cyborg_lite.bitstreams import signatures
from cyborg_lite.db import trusted_keys as db_keys

KEY_ID = {'type': 'string', 'pattern': signatures.KEY_ID_PATTERN}
# As Keystone spells project ids (32 hex digits) and as tests and noauth
# deployments name them: no spaces, no slashes.
PROJECT_ID = {'type': 'string', 'pattern': '^[A-Za-z0-9_.-]{1,64}$'}
POLICY = {'type': 'string', 'enum': list(signatures.POLICIES)}
ALGORITHM = {'type': 'string', 'enum': list(signatures.ALGORITHMS)}
_REASON = {'type': 'string', 'maxLength': 1000}

CREATE = {
    'type': 'object',
    'properties': {
        'name': common.NAME,
        # A PEM public key (BEGIN PUBLIC KEY) or certificate (BEGIN
        # CERTIFICATE); bitstreams/signatures.load_key says what is wrong.
        'public_key': {'type': 'string', 'minLength': 1,
                       'maxLength': signatures.MAX_KEY_TEXT},
        # Omitted or null: trusted for every project.
        'project_id': {'oneOf': [PROJECT_ID, {'type': 'null'}]},
    },
    'required': ['name', 'public_key'],
    'additionalProperties': False,
}

REVOKE = {
    'type': 'object',
    'properties': {'reason': _REASON},
    'additionalProperties': False,
}

LIST_QUERY = common.list_query(db_keys.SORT_KEYS, {
    'key_id': KEY_ID,
    'project_id': PROJECT_ID,
    'algorithm': ALGORITHM,
    'name': common.NAME,
})

_TIME = common.NULLABLE_STRING
VIEW = common.view({
    'uuid': common.STRING, 'key_id': common.STRING, 'name': common.STRING,
    'algorithm': ALGORITHM, 'public_key': common.STRING,
    'certificate': common.NULLABLE_STRING,
    'subject': common.NULLABLE_STRING, 'not_before': _TIME,
    'not_after': _TIME, 'project_id': common.NULLABLE_STRING,
    'revoked_at': _TIME, 'revocation_reason': common.NULLABLE_STRING,
})
LIST = common.collection('trusted_keys', VIEW)

POLICY_UPDATE = {
    'type': 'object',
    'properties': {'policy': POLICY},
    'required': ['policy'],
    'additionalProperties': False,
}
# The policy that applies to a project: its own (``source`` project) or
# the configured one (``source`` configuration).
POLICY_VIEW = {
    'type': 'object',
    'properties': {'project_id': common.STRING, 'policy': POLICY,
                   'source': {'type': 'string',
                              'enum': ['project', 'configuration']},
                   'created_at': _TIME, 'updated_at': _TIME},
    'required': ['project_id', 'policy', 'source', 'created_at',
                 'updated_at'],
    'additionalProperties': False,
}
POLICY_LIST = {
    'type': 'object',
    'properties': {'default_policy': POLICY,
                   'signature_policies': {'type': 'array',
                                          'items': POLICY_VIEW}},
    'required': ['default_policy', 'signature_policies'],
    'additionalProperties': False,
}
