"""Deployable policies: reads as for devices (Cyborg 17's defaults)."""
from cyborg_lite.api.policies import base

GET_ALL = 'cyborg:deployable:get_all'
GET_ONE = 'cyborg:deployable:get_one'

RULES = [
    base.rule(GET_ALL, base.PROJECT_MANAGER_OR_ADMIN,
              'List deployables.',
              '/v2/deployables', 'GET'),
    base.rule(GET_ONE, base.PROJECT_MANAGER_OR_ADMIN,
              'Show one deployable.',
              '/v2/deployables/{deployable_uuid}', 'GET'),
]


def list_rules():
    return RULES
