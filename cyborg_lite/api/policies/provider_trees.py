"""Resource provider tree policy (/v2/resource_provider_trees, 2.4).

The tree names every card, region, function and trait of a host: an
operator's view of what the conductor pushes to Placement, so admins only.
"""
from cyborg_lite.api.policies import base

GET = 'cyborg:resource_provider_tree:get'

RULES = [
    base.rule(GET, base.ADMIN,
              'Show the resource provider tree the conductor keeps '
              'in Placement for a host (computed from the database).',
              '/v2/resource_provider_trees/{hostname}', 'GET'),
]


def list_rules():
    return RULES
