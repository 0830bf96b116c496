"""Deployable policies: reads as for devices (Cyborg 17's defaults); a
clean asked for by hand is an operator's act."""
from cyborg_lite.api.policies import base

GET_ALL = 'cyborg:deployable:get_all'
GET_ONE = 'cyborg:deployable:get_one'
CLEAN = 'cyborg:deployable:clean'

RULES = [
    base.rule(GET_ALL, base.PROJECT_MANAGER_OR_ADMIN,
              'List deployables.',
              '/v2/deployables', 'GET'),
    base.rule(GET_ONE, base.PROJECT_MANAGER_OR_ADMIN,
              'Show one deployable.',
              '/v2/deployables/{deployable_uuid}', 'GET'),
    base.rule(CLEAN, base.ADMIN,
              'Ask for a clean of a deployable: a retry after its cleaning '
              'failed, or a wipe of an idle one.',
              '/v2/deployables/{deployable_uuid}/clean', 'POST'),
]


def list_rules():
    return RULES
