"""``service list``: which release every agent, conductor and API runs,
and whether its heartbeat says it is up (GET /v2/services, admin): what an
operator checks mid-upgrade."""
from cyborg_lite.cli import versioned

# GET /v2/services (api/microversion.SERVICES).
SERVICES_API_VERSION = '2.12'


class ListService(versioned.ListCommand):
    """List the services: host, kind, release, state (up/down by the last
    heartbeat's age) and last heartbeat."""

    min_api_version = SERVICES_API_VERSION
    columns = ('host', 'kind', 'release', 'state', 'heartbeat_at')

    def fetch(self, parsed_args):
        return self.api.get('/services')['services']
