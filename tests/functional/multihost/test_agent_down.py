"""kill -9 an agent for good (issue 18.2): after [conductor]
agent_down_time without a heartbeat its host is marked down by one of the
conductors: every region reserved in Placement, binds to it BindFailed
with the reason, the API (2.5) showing it; nothing deleted, what was bound
stays Bound. Started again, the host is schedulable again."""
import pytest

from tests.functional.multihost import cluster as cl

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

HOST = 'host-2'
V25 = dict(cl.ACCEL, **{'OpenStack-API-Version': 'accelerator 2.5'})


def _reserved(cluster, regions):
    """{region name: (total, reserved)} of each region's FPGA."""
    found = {}
    for region in regions:
        inv = cluster.placement_get('/resource_providers/%s/inventories'
                                    % region.rp_uuid)['inventories']
        found[region.name] = (inv['FPGA']['total'], inv['FPGA']['reserved'])
    return found


def _reasons(cluster):
    resp = cluster.session.get(cluster.api + '/devices', headers=V25,
                               params={'hostname': HOST}, timeout=30)
    assert resp.status_code == 200, resp.text
    return [d['unavailable_reasons'] for d in resp.json()['devices']]


def _bind_one(cluster, arq_cleanup, region, profile):
    (arq,) = cluster.create_arqs(profile)
    arq_cleanup.append(arq['uuid'])
    cluster.bind(arq['uuid'], region)
    return cluster.wait_resolved([arq['uuid']], 30)[arq['uuid']]


def test_kill9_agent_for_good_then_restart(cluster, arq_cleanup):
    regions = [r for r in cluster.region_rps() if r.host == HOST]
    # Each card's regions are reached through its PF: one provider each.
    card0 = [r for r in regions if '_0000:5e:' in r.name]
    card1 = [r for r in regions if r not in card0]
    assert (len(card0), len(card1)) == (1, 1)
    cluster.create_profile('mh-agent-down')
    held = _bind_one(cluster, arq_cleanup, card0[0], 'mh-agent-down')
    assert held['state'] == 'Bound', held
    assert _reasons(cluster) == [[], []]
    agent = cluster.services[HOST]
    try:
        assert cluster.kill9(HOST) == -9
        cluster.wait_for(
            lambda: all(total == reserved for total, reserved in
                        _reserved(cluster, regions).values()),
            cl.AGENT_DOWN_TIME + 30, 'every region of %s reserved' % HOST)
        assert _reasons(cluster) == [['agent_down'], ['agent_down']]
        assert cluster.query("SELECT state FROM agents WHERE hostname = "
                             ":h", h=HOST)[0][0] == 'down'

        refused = _bind_one(cluster, arq_cleanup, card1[0], 'mh-agent-down')
        assert refused['state'] == 'BindFailed', refused
        assert 'agent_down' in refused['error'], refused
        # Nothing deleted, nothing unbound.
        assert cluster.arq(held['uuid'])['state'] == 'Bound'
        assert len([r for r in cluster.region_rps()
                    if r.host == HOST]) == len(regions)
    finally:
        if not agent.alive():
            agent.start()
    # Back with its first heartbeat: offered again (the card still bound
    # has its one accelerator in Nova's allocation, not reserved).
    cluster.wait_for(lambda: _reasons(cluster) == [[], []], 60,
                     '%s back up' % HOST)
    free = {r.name: (1, 0) for r in regions}
    cluster.wait_for(lambda: _reserved(cluster, regions) == free, 30,
                     'the cards of %s offered again' % HOST)
    assert cluster.arq(held['uuid'])['state'] == 'Bound'
    assert _bind_one(cluster, arq_cleanup, card1[0],
                     'mh-agent-down')['state'] == 'Bound'
