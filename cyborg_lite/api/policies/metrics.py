"""The API's GET /metrics: the series name the projects and instances
holding devices, so an admin's (or [metrics]api_unauthenticated)."""
from cyborg_lite.api.policies import base

GET = 'cyborg_lite:metrics:get'

RULES = [
    base.rule(GET, base.ADMIN,
              'Scrape the Prometheus metrics (every device and its '
              'holder).', '/metrics', 'GET'),
]


def list_rules():
    return RULES
