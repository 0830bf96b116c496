"""What /v2/resource_provider_trees/{hostname} answers (2.4)."""
from cyborg_lite.api.schemas import common

# Placement's inventory fields, as the tree holds them.
_INVENTORY = {
    'type': 'object',
    'properties': {'total': common.INTEGER, 'reserved': common.INTEGER,
                   'min_unit': common.INTEGER, 'max_unit': common.INTEGER,
                   'step_size': common.INTEGER,
                   'allocation_ratio': {'type': 'number'}},
    'required': ['total', 'reserved', 'min_unit', 'max_unit', 'step_size',
                 'allocation_ratio'],
    'additionalProperties': False,
}
_PROVIDER = {
    'type': 'object',
    'properties': {'name': common.STRING, 'uuid': common.STRING,
                   'parent_uuid': common.NULLABLE_STRING,
                   'inventories': {'type': 'object',
                                   'additionalProperties': _INVENTORY},
                   'traits': {'type': 'array', 'items': common.STRING}},
    'required': ['name', 'uuid', 'parent_uuid', 'inventories', 'traits'],
    'additionalProperties': False,
}
# What came of asking Placement for the compute node's uuid.
PLACEMENT_ANSWERS = ['found', 'not yet created', 'unreachable',
                     'not configured']

TREE = {
    'type': 'object',
    'properties': {
        'hostname': common.STRING,
        'root': {'type': 'object',
                 'properties': {'name': common.STRING,
                                'uuid': common.NULLABLE_STRING,
                                'placement': {'type': 'string', 'enum':
                                              PLACEMENT_ANSWERS}},
                 'required': ['name', 'uuid', 'placement'],
                 'additionalProperties': False},
        'resource_providers': {'type': 'array', 'items': _PROVIDER},
    },
    'required': ['hostname', 'root', 'resource_providers'],
    'additionalProperties': False,
}
