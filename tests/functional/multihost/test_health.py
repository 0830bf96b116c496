"""Device health on separate hosts (PostgreSQL, RabbitMQ, two conductors,
three agents as processes): a fault written into one agent's simulated
card makes that card unhealthy after two of its agent's scans (its log
says so), reserved in Placement (its regions share its PF, so the card
is one provider: common/shared_functions.py), refused to a bind naming
the reason and tainted in the slices the conductors publish (the API's
preview of them, checked against the strict schemas); cleared, it is
healthy and offered again, with no process restarted."""
import os
import re

import pytest

from cyborg_lite.api import microversion
from tests.functional.multihost import cluster as cl
from tests.unit.kubernetes import schemas

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

HOST = 'host-1'
CARD = '0000:5e:00.0'
CATFATAL = 'catfatal_errors 0x4'
HEALTH = dict(cl.ACCEL, **{'OpenStack-API-Version':
                           'accelerator ' + microversion.DEVICE_HEALTH})
MOVE = re.compile(r'Health of fake 0000:5e:00\.0: (\w+) -> (\w+) after '
                  r'(\d+) readings')


def _fault(cluster, text):
    path = os.path.join(cluster.basedir, HOST, 'fake_fpga', 'sys', 'class',
                        'fpga_region', 'region0', 'dfl-fme.0', 'errors',
                        'catfatal_errors')
    with open(path, 'w') as f:
        f.write(text)


def _device(cluster):
    return cluster.call('GET', '/devices/' + _card_uuid(cluster), 200,
                        headers=HEALTH).json()


def _card_uuid(cluster):
    [row] = cluster.query('SELECT uuid FROM devices WHERE hostname = :h '
                          'AND identity = :i', h=HOST, i=CARD)
    return row[0]


def _reserved_of_total(cluster, card):
    fpga = cluster.placement_get('/resource_providers/%s/inventories'
                                 % card.rp_uuid)['inventories']['FPGA']
    return fpga['reserved'], fpga['total']


def _slice_taints(cluster):
    slices = cluster.call('GET', '/resource_slices/' + HOST, 200,
                          headers=HEALTH).json()['resource_slices']
    for obj in slices:
        assert schemas.schema_errors(obj) == []
        assert schemas.slice_rule_errors(obj) == []
    return {d['name']: [t['key'].rsplit('/', 1)[1] for t in
                        d.get('taints', [])]
            for obj in slices for d in obj['spec'].get('devices', [])}


def test_a_fault_on_one_host_and_its_clearing(cluster, arq_cleanup):
    [card] = [r for r in cluster.region_rps()
              if r.host == HOST and r.name.endswith('_' + CARD)]
    # One accelerator: the PF every region of the card is reached through.
    assert _reserved_of_total(cluster, card) == (0, 1)
    pids = {name: s.pid for name, s in cluster.services.items()}
    offsets = cluster.log_offsets(HOST)
    cluster.create_profile('mh-health')
    try:
        _fault(cluster, '0x4\n')
        cluster.wait_for(lambda: _device(cluster)['health'] == 'unhealthy',
                         30, 'the card unhealthy in the API')
        device = _device(cluster)
        assert device['health_reason'] == CATFATAL
        assert device['unavailable_reasons'] == ['unhealthy']
        log = cluster.logs_since(offsets)[HOST]
        assert ('healthy', 'unhealthy', '2') in MOVE.findall(log)

        cluster.wait_for(lambda: _reserved_of_total(cluster, card) == (
            1, 1), 15, 'the whole card reserved in Placement')
        taints = _slice_taints(cluster)
        assert all(taints[name] == ['unhealthy'] for name in taints
                   if name.startswith('fpga-0000-5e-00-0-'))
        assert not any(taints[name] for name in taints
                       if not name.startswith('fpga-0000-5e-00-0-'))

        (arq,) = cluster.create_arqs('mh-health')
        arq_cleanup.append(arq['uuid'])
        cluster.bind(arq['uuid'], card)
        failed = cluster.wait_resolved([arq['uuid']], 30)[arq['uuid']]
        assert failed['state'] == 'BindFailed'
        assert CATFATAL in failed['error']
    finally:
        _fault(cluster, '0x0\n')
    cluster.wait_for(lambda: _device(cluster)['health'] == 'healthy', 60,
                     'the card healthy again')
    cluster.wait_for(lambda: _reserved_of_total(cluster, card) == (
        0, 1), 15, 'the card offered again')
    assert not any(_slice_taints(cluster).values())
    assert {name: s.pid for name, s in cluster.services.items()} == pids
