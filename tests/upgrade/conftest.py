"""The upgrade cluster: the previous release on PostgreSQL and RabbitMQ,
moved to this code by the test (cluster.py)."""
import pytest

from tests import fork_server
from tests.upgrade import cluster as cluster_mod


@pytest.fixture(scope='module')
def upgrade_cluster():
    # PostgreSQL and RabbitMQ from the system binaries (tests/servers.py):
    # a skip when one is missing, a failure under CI=true.
    c = cluster_mod.UpgradeCluster(agents=2, conductors=1, cards=3,
                                   program_delay=0.2, popen=fork_server.popen)
    c.start()
    try:
        yield c
    finally:
        statuses = c.stop()
    # Every service, old or new, stopped cleanly on SIGTERM.
    assert all(s == 0 for s in statuses.values()), (statuses, c.final_logs)
