"""Attribute policies: reads as for devices; writes are an admin's
(attributes are device inventory: traits and resource classes)."""
from oslo_policy import policy

from cyborg_lite.api.policies import base

GET_ALL = 'cyborg:attribute:get_all'
GET_ONE = 'cyborg:attribute:get_one'
CREATE = 'cyborg:attribute:create'
DELETE = 'cyborg:attribute:delete'

RULES = [
    policy.DocumentedRuleDefault(
        name=GET_ALL, check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description='List attributes.',
        operations=[{'path': '/v2/attributes', 'method': 'GET'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=GET_ONE, check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description='Show one attribute.',
        operations=[{'path': '/v2/attributes/{attribute_uuid}',
                     'method': 'GET'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=CREATE, check_str=base.ADMIN,
        description='Create an attribute.',
        operations=[{'path': '/v2/attributes', 'method': 'POST'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.ADMIN,
        description='Delete an attribute.',
        operations=[{'path': '/v2/attributes/{attribute_uuid}',
                     'method': 'DELETE'}],
        scope_types=['project']),
]


def list_rules():
    return RULES
