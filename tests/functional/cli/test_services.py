"""``cyborg-lite service list`` against the real API: each service's host,
kind, release and state by its heartbeat."""
from cyborg_lite.api import microversion
from cyborg_lite.cli import services as services_cli
from cyborg_lite.db import services as services_db


def test_the_cli_asks_for_the_apis_services_version():
    assert services_cli.SERVICES_API_VERSION == microversion.SERVICES


def test_service_list_shows_host_kind_release_and_state(cli):
    services_db.beat('conductor', 'cond1', '2026.2.0', {'t': '1.10'})
    services_db.beat('agent', 'node1', None, None)
    rows = cli('service', 'list', '-f', 'json').json
    assert [(r['host'], r['kind'], r['release'], r['state'])
            for r in rows] == [('node1', 'agent', None, 'up'),
                               ('cond1', 'conductor', '2026.2.0', 'up')]
    assert all(r['heartbeat_at'] for r in rows)
