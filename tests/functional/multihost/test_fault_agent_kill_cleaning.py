"""kill -9 an agent while it wipes a region between two tenants.

The tenant's data is still in the region's (simulated) local memory when
the agent dies; the region stays reserved in Placement and is not offered
until the restarted agent has cleaned it again from the start
(``agent_started``, or the conductors' reaper first): it is available
again only once the FAKE driver really emptied its memory.
"""
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

HOST = 'host-1'
TENANT_DATA = 'model weights of tenant A\n'


def _memory(cluster, region):
    with open(cluster.local_memory_path(region)) as f:
        return f.read()


def _reserved(cluster, region):
    inv = cluster.placement_get('/resource_providers/%s/inventories'
                                % region.rp_uuid)['inventories']
    return {rc: (i['total'], i['reserved']) for rc, i in inv.items()}


def _restart_agent(cluster, **fake_driver):
    cluster.services[HOST].stop()
    cluster.write_agent_conf(HOST, **fake_driver)
    cluster.services[HOST].start()


def test_kill9_agent_mid_clean_cleans_again_after_restart(cluster):
    region = [r for r in cluster.region_rps() if r.host == HOST][0]
    # A wipe long enough for the kill to land in its middle.
    _restart_agent(cluster, clean_delay=60)
    try:
        cluster.create_profile('mh-clean')
        [arq] = cluster.create_arqs('mh-clean')
        cluster.bind(arq['uuid'], region)
        bound = cluster.wait_resolved([arq['uuid']], 30)[arq['uuid']]
        assert bound['state'] == 'Bound', bound
        with open(cluster.local_memory_path(region), 'w') as f:
            f.write(TENANT_DATA)

        cluster.delete_arqs([arq['uuid']])
        # The agent began the wipe (its first heartbeat is recorded).
        cluster.wait_for(
            lambda: (lambda state, started, _attempts:
                     state == 'cleaning' and started)(
                *cluster.cleaning_state(region)),
            30, 'the agent cleaning the region', 0.1)
        assert cluster.kill9(HOST) == -9

        assert _memory(cluster, region) == TENANT_DATA
        assert cluster.cleaning_state(region)[0] in ('cleaning',
                                                     'pending_cleaning')
        # Reserved in Placement (published before the wipe was sent).
        cluster.wait_for(lambda: all(reserved == total for total, reserved
                                     in _reserved(cluster, region).values()),
                         30, 'Placement reserving the region')
        assert cluster.cleaning_state(region)[0] != 'available'
    finally:
        # Back as it was: the clean starts over with the usual delay.
        cluster.write_agent_conf(HOST)
        cluster.services[HOST].stop()
        cluster.services[HOST].start()

    cluster.wait_for(lambda: cluster.cleaning_state(region)[0] ==
                     'available', 60, 'the region cleaned after restart')
    assert _memory(cluster, region) == ''
    # One try died with the agent; the next one wiped it.
    assert cluster.cleaning_state(region)[2] == 1, cluster.logs(
        'conductor-a', 'conductor-b', HOST)
    cluster.wait_for(lambda: all(reserved == 0 for _t, reserved in
                                 _reserved(cluster, region).values()),
                     30, 'Placement offering the region again')
