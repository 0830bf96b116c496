"""Attribute policies: reads as for devices; writes are an admin's
(attributes are device inventory: traits and resource classes)."""
from cyborg_lite.api.policies import base

GET_ALL = 'cyborg:attribute:get_all'
GET_ONE = 'cyborg:attribute:get_one'
CREATE = 'cyborg:attribute:create'
DELETE = 'cyborg:attribute:delete'

RULES = [
    base.rule(GET_ALL, base.PROJECT_MANAGER_OR_ADMIN,
              'List attributes.',
              '/v2/attributes', 'GET'),
    base.rule(GET_ONE, base.PROJECT_MANAGER_OR_ADMIN,
              'Show one attribute.',
              '/v2/attributes/{attribute_uuid}', 'GET'),
    base.rule(CREATE, base.ADMIN,
              'Create an attribute.',
              '/v2/attributes', 'POST'),
    base.rule(DELETE, base.ADMIN,
              'Delete an attribute.',
              '/v2/attributes/{attribute_uuid}', 'DELETE'),
]


def list_rules():
    return RULES
