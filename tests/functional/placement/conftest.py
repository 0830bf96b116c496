"""Placement servers of the placement tests' own, and a PlacementSink
configured for one (the session's ``placement`` is tests/functional/
conftest.py's)."""
import uuid

import pytest
from keystoneauth1 import loading as ks_loading

from cyborg_lite.cmd import placement_server
from cyborg_lite.placement import client as client_mod
from cyborg_lite.placement import sink as sink_mod
from tests import fork_server


@pytest.fixture(scope='session')
def reshaping_placement():
    """A Placement whose policy lets the admin token reshape, as one lets
    a Cyborg user with the service role."""
    server = placement_server.PlacementServer(
        policy=placement_server.ADMIN_RESHAPES,
        popen=fork_server.popen).start()
    yield server
    server.cleanup()


@pytest.fixture
def own_placement():
    """A Placement of this test's own, which the test may stop and start."""
    server = placement_server.PlacementServer(popen=fork_server.popen).start()
    yield server
    server.cleanup()


def configure_placement(conf, endpoint):
    """[placement] for a noauth2 Placement, the way an operator writes it."""
    # NOTE: keystoneauth registers a plugin's options only when it loads
    # the plugin; register them first so they can be set.
    conf.register_opts(ks_loading.get_auth_plugin_conf_options('admin_token'),
                       group='placement')
    conf.set_override('auth_type', 'admin_token', group='placement')
    conf.set_override('token', placement_server.TOKEN, group='placement')
    conf.set_override('endpoint_override', endpoint, group='placement')
    conf.set_override('timeout', 10, group='placement')
    conf.set_override('create_compute_node_rp', True, group='placement')
    conf.set_override('sync_retry_initial_interval', 1.0, group='placement')


class FakeClock:
    """A monotonic clock the test moves, so backoff needs no sleeping."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def make_sync(sqlite_db, conf):
    def make(server, client_cls=client_mod.PlacementClient):
        configure_placement(conf, server.endpoint)
        client = client_cls(client_mod.adapter_from_conf(conf))
        return sink_mod.PlacementSink(client, conf, clock=FakeClock())
    return make


@pytest.fixture
def inspector(conf):
    """An uncounted client for the test's own reads of Placement."""
    def make(server):
        configure_placement(conf, server.endpoint)
        return client_mod.PlacementClient(client_mod.adapter_from_conf(conf))
    return make


@pytest.fixture
def configured(conf):
    """Point [placement] of CONF at a server; returns CONF."""
    def configure(server):
        configure_placement(conf, server.endpoint)
        return conf
    return configure


@pytest.fixture
def hostname():
    return 'host-%s' % uuid.uuid4().hex[:8]
