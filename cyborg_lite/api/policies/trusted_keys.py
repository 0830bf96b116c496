"""Trusted key and signature policy policies (signed bitstreams).

Which keys may sign the images that reach a region, and whether only
signed images may reach one, are an operator's decisions: registering,
revoking and deleting keys and setting a project's signature policy are
admin acts. A project's readers see the keys trusted for it (the global
ones and its own: public keys are not secrets) and its policy.
"""
from cyborg_lite.api.policies import base

KEY_GET_ALL = 'cyborg:trusted_key:get_all'
KEY_GET_ONE = 'cyborg:trusted_key:get_one'
KEY_CREATE = 'cyborg:trusted_key:create'
KEY_REVOKE = 'cyborg:trusted_key:revoke'
KEY_DELETE = 'cyborg:trusted_key:delete'
POLICY_GET_ALL = 'cyborg:signature_policy:get_all'
POLICY_GET_ONE = 'cyborg:signature_policy:get_one'
POLICY_UPDATE = 'cyborg:signature_policy:update'
POLICY_DELETE = 'cyborg:signature_policy:delete'

_KEYS = '/v2/trusted_keys'
_POLICIES = '/v2/signature_policies'

_rule = base.rule

RULES = [
    _rule(KEY_GET_ALL, base.PROJECT_READER_OR_ADMIN,
          'List the keys trusted to sign bitstreams: the global ones and '
          'the caller\'s project\'s (all for admins).', _KEYS, 'GET'),
    _rule(KEY_GET_ONE, base.PROJECT_READER_OR_ADMIN,
          'Show one trusted key the caller may see.',
          _KEYS + '/{key_uuid}', 'GET'),
    _rule(KEY_CREATE, base.ADMIN,
          'Trust a public key (or certificate) to sign the bitstreams of '
          'every project or of one.', _KEYS, 'POST'),
    _rule(KEY_REVOKE, base.ADMIN,
          'Revoke a trusted key: no image it signed is programmed from '
          'then on.', _KEYS + '/{key_uuid}/revoke', 'POST'),
    _rule(KEY_DELETE, base.ADMIN,
          'Delete a trusted key that is not revoked (one registered by '
          'mistake).', _KEYS + '/{key_uuid}', 'DELETE'),
    _rule(POLICY_GET_ALL, base.ADMIN,
          'List the projects\' own signature policies and the default.',
          _POLICIES, 'GET'),
    _rule(POLICY_GET_ONE, base.PROJECT_READER_OR_ADMIN,
          'Show the signature policy that applies to a project; the target '
          'is that project.', _POLICIES + '/{project_id}', 'GET'),
    _rule(POLICY_UPDATE, base.ADMIN,
          'Set a project\'s own signature policy (disabled, warn, '
          'enforce).', _POLICIES + '/{project_id}', 'PUT'),
    _rule(POLICY_DELETE, base.ADMIN,
          'Drop a project\'s own signature policy: the configured one '
          'applies again.', _POLICIES + '/{project_id}', 'DELETE'),
]


def list_rules():
    return RULES
