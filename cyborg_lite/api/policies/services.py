"""Service policy (/v2/services, 2.12): which release every agent,
conductor and API runs, and on which hosts: an operator's view, so
admins only."""
from cyborg_lite.api.policies import base

GET_ALL = 'cyborg_lite:service:get_all'

RULES = [
    base.rule(GET_ALL, base.ADMIN,
              'List the services (agents, conductors, APIs): host, kind, '
              'release, RPC versions, state and last heartbeat.',
              '/v2/services', 'GET'),
]


def list_rules():
    return RULES
