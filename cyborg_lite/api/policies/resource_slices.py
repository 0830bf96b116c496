"""Kubernetes ResourceSlice preview policy (/v2/resource_slices, 2.5).

The slices name every card and region of a host, as the provider tree
does: admins only.
"""
from cyborg_lite.api.policies import base

GET = 'cyborg:resource_slice:get'

RULES = [
    base.rule(GET, base.ADMIN,
              'Show the Kubernetes ResourceSlices the conductor would '
              'publish for a host (computed from the database).',
              '/v2/resource_slices/{hostname}', 'GET'),
]


def list_rules():
    return RULES
