"""Resource provider tree policy (/v2/resource_provider_trees, 2.4).

The tree names every card, region, function and trait of a host: an
operator's view of what the conductor pushes to Placement, so admins only.
"""
from oslo_policy import policy

from cyborg_lite.api.policies import base

GET = 'cyborg:resource_provider_tree:get'

RULES = [
    policy.DocumentedRuleDefault(
        name=GET, check_str=base.ADMIN,
        description='Show the resource provider tree the conductor keeps '
                    'in Placement for a host (computed from the database).',
        operations=[{'path': '/v2/resource_provider_trees/{hostname}',
                     'method': 'GET'}],
        scope_types=['project']),
]


def list_rules():
    return RULES
