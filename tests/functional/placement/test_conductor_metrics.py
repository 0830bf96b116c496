"""The conductor's own metrics count what it did: a bind, an unbind, the
clean that follows, its publishes to a real Placement, and a publish
Placement refuses.

The conductor and agent run in this process over inproc://
(programming_env); the counts are read as Prometheus reads them, from
the conductor's /metrics port ([metrics]conductor_port, metrics/counted.
serve), before and after each step: the process counted earlier tests
too, so only the differences say anything.
"""
import json
import os
import time

import pytest
import requests
from prometheus_client import parser

from cyborg_lite.cmd import placement_server
from cyborg_lite.metrics import counted as metrics
from tests import fork_server
from tests import servers
from tests.functional import cleaning_env as ce
from tests.functional.placement.conftest import configure_placement
from tests.functional.programming_env import make_env  # noqa: F401

INVENTORY_UPDATE = 'placement:resource_providers:inventories:update'


@pytest.fixture
def refusable_placement():
    """A Placement of the test's own whose policy file the test rewrites
    (Placement reads it again when it changes, as an operator's edit)."""
    server = placement_server.PlacementServer(
        policy={INVENTORY_UPDATE: 'role:admin'},
        popen=fork_server.popen).start()
    yield server
    server.cleanup()


def refuse_inventory_updates(server):
    path = os.path.join(server.basedir, 'policy.json')
    with open(path, 'w') as f:
        json.dump({INVENTORY_UPDATE: '!'}, f)
    # NOTE: oslo.policy reloads on a new mtime; a write in the same
    # second as the first one might not show.
    later = time.time() + 5
    os.utime(path, (later, later))


@pytest.fixture
def scrape():
    """scrape() -> {(sample name, labels as a sorted tuple): value} from
    the conductor's /metrics port."""
    port = servers.free_port()
    server = metrics.serve(port, '127.0.0.1')

    def read():
        text = requests.get('http://127.0.0.1:%d/metrics' % port,
                            timeout=10).text
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in parser.text_string_to_metric_families(text)
                for s in family.samples}
    yield read
    server.shutdown()
    server.server_close()


def delta(before, after, name, **labels):
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


def test_binds_cleans_and_publishes_are_counted(
        conf, refusable_placement, make_env, scrape):  # noqa: F811
    configure_placement(conf, refusable_placement.endpoint)
    # A VF each: the one region released is the one wiped.
    env = make_env(sriov=True)
    before = scrape()

    arq_uuid = ce.bind(env)
    bound = scrape()
    assert delta(before, bound, 'cyborg_lite_bind_duration_seconds_count',
                 outcome='bound') == 1
    assert delta(before, bound, 'cyborg_lite_bind_duration_seconds_count',
                 outcome='failed') == 0

    ce.unbind(env, arq_uuid)
    ce.wait_state(env, 'available')
    cleaned = scrape()
    assert delta(bound, cleaned, 'cyborg_lite_unbind_duration_seconds_count',
                 outcome='unbound') == 1
    assert delta(bound, cleaned,
                 'cyborg_lite_cleaning_duration_seconds_count',
                 outcome='available') == 1
    # The region reserved for its clean, then offered again: Placement
    # took both.
    assert delta(before, cleaned,
                 'cyborg_lite_sink_publish_duration_seconds_count',
                 sink='placement', outcome='converged') >= 2
    assert delta(before, cleaned, 'cyborg_lite_sink_sync_errors_total',
                 sink='placement') == 0
    # Each change reached Placement, and how long after it that was.
    lags = delta(before, cleaned, 'cyborg_lite_publish_lag_seconds_count',
                 sink='placement')
    assert lags >= 2
    assert 0 < delta(before, cleaned, 'cyborg_lite_publish_lag_seconds_sum',
                     sink='placement') < 30 * lags

    # Placement now refuses inventory updates (403): the release's
    # publish (the region reserved for its clean) does not converge, and
    # says so. (Once wiped, the region's inventory is Placement's again:
    # that publish converges.)
    arq_uuid = ce.bind(env)
    refuse_inventory_updates(refusable_placement)
    ce.unbind(env, arq_uuid)
    ce.wait_state(env, 'available')
    refused = scrape()
    assert delta(cleaned, refused, 'cyborg_lite_sink_sync_errors_total',
                 sink='placement') >= 1
    not_converged = sum(delta(
        cleaned, refused, 'cyborg_lite_sink_publish_duration_seconds_count',
        sink='placement', outcome=outcome) for outcome in ('pending',
                                                             'failed'))
    assert not_converged >= 1
