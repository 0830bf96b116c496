"""Restart RabbitMQ under the running services: they reconnect, and the
next reports (agent -> conductor) and binds (api -> conductor) flow."""
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

NEW_FUNCTION = '0badc0de0badc0de0badc0de0badc0de'


def test_services_reconnect_after_broker_restart(cluster, arq_cleanup):
    region = [r for r in cluster.region_rps() if r.host == 'host-1'][0]
    pids = {n: s.pid for n, s in cluster.services.items()}

    cluster.restart_rabbitmq(down_for=2)

    # Every service rode it out in the same process.
    assert {n: s.pid for n, s in cluster.services.items()
            if s.alive()} == pids
    # A hardware change after the restart is reported, stored and synced.
    cluster.load_function(region, NEW_FUNCTION)
    cluster.wait_for(lambda: cluster.api_function_id(region) == NEW_FUNCTION,
                     60, 'the report of host-1 after the broker restart')
    cluster.wait_for(
        lambda: 'CUSTOM_FUNCTION_ID_%s' % NEW_FUNCTION.upper()
        in cluster.placement_traits(region), 30, 'the Placement trait')
    # The API reaches a conductor again.
    cluster.create_profile('mh-after-rabbit')
    (arq,) = cluster.create_arqs('mh-after-rabbit')
    arq_cleanup.append(arq['uuid'])
    free = [r for r in cluster.region_rps() if r.host == 'host-2'][0]
    cluster.bind(arq['uuid'], free)
    assert cluster.wait_resolved([arq['uuid']], 30)[arq['uuid']][
        'state'] == 'Bound'
