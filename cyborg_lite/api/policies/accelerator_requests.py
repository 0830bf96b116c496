"""Accelerator request (ARQ) policies: the owning project (or Nova with a
service role, or an admin) acts on an ARQ; the target is the ARQ itself.

Cyborg 17 also demands a service token for bind, unbind and delete by
instance; here that is policy: set ``cyborg:arq:update`` to
``rule:service_api or rule:admin_api`` to allow only Nova to bind.
"""
from oslo_policy import policy

from cyborg_lite.api.policies import base

GET_ALL = 'cyborg:arq:get_all'
GET_ONE = 'cyborg:arq:get_one'
CREATE = 'cyborg:arq:create'
DELETE = 'cyborg:arq:delete'
UPDATE = 'cyborg:arq:update'

_PATH = '/v2/accelerator_requests'
RULES = [
    policy.DocumentedRuleDefault(
        name=GET_ALL, check_str=base.PROJECT_READER_OR_ADMIN,
        description='List the caller\'s project\'s ARQs (all for admins).',
        operations=[{'path': _PATH, 'method': 'GET'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=GET_ONE, check_str=base.PROJECT_READER_OR_ADMIN,
        description='Show one ARQ.',
        operations=[{'path': _PATH + '/{arq_uuid}', 'method': 'GET'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=CREATE, check_str=base.PROJECT_MEMBER_OR_SERVICE_OR_ADMIN,
        description='Create ARQs from a device profile.',
        operations=[{'path': _PATH, 'method': 'POST'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.PROJECT_MEMBER_OR_SERVICE_OR_ADMIN,
        description='Delete ARQs by uuid or by instance.',
        operations=[{'path': _PATH + '?arqs={arq_uuids}', 'method': 'DELETE'},
                    {'path': _PATH + '?instance={instance_uuid}',
                     'method': 'DELETE'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=UPDATE, check_str=base.PROJECT_MEMBER_OR_SERVICE_OR_ADMIN,
        description='Bind or unbind ARQs (JSON patch).',
        operations=[{'path': _PATH, 'method': 'PATCH'}],
        scope_types=['project']),
]


def list_rules():
    return RULES
