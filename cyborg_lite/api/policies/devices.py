"""Device policies. Reads follow Cyborg 17's defaults (a project manager
or an admin: the inventory shows hosts and hardware, not every member's
business); anything that changes a device is an admin's."""
from cyborg_lite.api.policies import base

GET_ALL = 'cyborg:device:get_all'
GET_ONE = 'cyborg:device:get_one'
DISABLE = 'cyborg:device:disable'
ENABLE = 'cyborg:device:enable'
HISTORY = 'cyborg_lite:device:history'

RULES = [
    base.rule(GET_ALL, base.PROJECT_MANAGER_OR_ADMIN,
              'List devices.',
              '/v2/devices', 'GET'),
    base.rule(GET_ONE, base.PROJECT_MANAGER_OR_ADMIN,
              'Show one device.',
              '/v2/devices/{device_uuid}', 'GET'),
    base.rule(DISABLE, base.ADMIN,
              'Disable a device for maintenance: it is no longer offered '
              'to schedulers nor bound.',
              '/v2/devices/{device_uuid}/disable', 'POST'),
    base.rule(ENABLE, base.ADMIN,
              'Enable a device again after maintenance.',
              '/v2/devices/{device_uuid}/enable', 'POST'),
    base.rule(HISTORY, base.ADMIN,
              "Show a device's history: every transition, with the "
              'projects, instances and Kubernetes claims that held it.',
              '/v2/devices/{device_uuid}/history', 'GET'),
]


def list_rules():
    return RULES
