"""Deployable policies: reads as for devices (Cyborg 17's defaults)."""
from oslo_policy import policy

from cyborg_lite.api.policies import base

GET_ALL = 'cyborg:deployable:get_all'
GET_ONE = 'cyborg:deployable:get_one'

RULES = [
    policy.DocumentedRuleDefault(
        name=GET_ALL, check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description='List deployables.',
        operations=[{'path': '/v2/deployables', 'method': 'GET'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=GET_ONE, check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description='Show one deployable.',
        operations=[{'path': '/v2/deployables/{deployable_uuid}',
                     'method': 'GET'}],
        scope_types=['project']),
]


def list_rules():
    return RULES
