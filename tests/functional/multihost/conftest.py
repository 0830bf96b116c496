"""One cluster for the multihost package (see cluster.py), torn down after
its last test.

The tests of this package share it (one pytest-xdist group, so one
worker); a test that kills or stops a part brings it back before it ends.
"""
import pytest

from tests import fork_server
from tests.functional.multihost import cluster as cluster_mod


@pytest.fixture(scope='package')
def cluster():
    c = cluster_mod.Cluster(agents=3, conductors=2, popen=fork_server.popen)
    c.start()
    try:
        yield c
    finally:
        statuses = c.stop()
    # Every service stopped cleanly on SIGTERM (0), not by SIGKILL.
    assert all(s == 0 for s in statuses.values()), (statuses, c.final_logs)


@pytest.fixture
def arq_cleanup(cluster):
    """ARQs a test adds here are deleted after it, freeing their handles;
    the regions they held are wiped, and the next test starts once
    Placement offers every region again (a freed PF makes its sibling
    regions available a moment later)."""
    created = []
    yield created
    if created:
        cluster.delete_arqs([a for a in created])
        cluster.wait_cleaned()
        if not cluster.wait_for_free_regions(30):
            raise AssertionError('regions still reserved: %s\nagents: %s\n'
                                 '%s' % (cluster.reserved_regions(),
                                         cluster.query('SELECT * FROM agents'),
                                         cluster.logs(*cluster.conductor_names)))
