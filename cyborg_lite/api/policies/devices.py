"""Device policies. Reads follow Cyborg 17's defaults (a project manager
or an admin: the inventory shows hosts and hardware, not every member's
business); anything that changes a device is an admin's."""
from oslo_policy import policy

from cyborg_lite.api.policies import base

GET_ALL = 'cyborg:device:get_all'
GET_ONE = 'cyborg:device:get_one'

RULES = [
    policy.DocumentedRuleDefault(
        name=GET_ALL, check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description='List devices.',
        operations=[{'path': '/v2/devices', 'method': 'GET'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=GET_ONE, check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description='Show one device.',
        operations=[{'path': '/v2/devices/{device_uuid}', 'method': 'GET'}],
        scope_types=['project']),
]


def list_rules():
    return RULES
