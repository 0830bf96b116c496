"""The scheduler flow across 3 agent hosts and 2 conductors (separate
processes over RabbitMQ and PostgreSQL), with this test as the scheduler:
device profile -> allocation candidates on every host -> allocation ->
ARQ -> bind -> Bound on the chosen host -> unbind -> delete.
"""
import uuid

import pytest
import requests

from tests.functional.multihost import cluster as cl

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]


def _candidates(cluster, profile):
    (group,) = profile['groups']
    resources = ','.join('%s:%s' % (k.split(':', 1)[1], v)
                         for k, v in sorted(group.items())
                         if k.startswith('resources:'))
    required = ','.join(k.split(':', 1)[1] for k, v in sorted(group.items())
                        if k.startswith('trait:') and v == 'required')
    return cluster.placement_get('/allocation_candidates',
                                 resources1=resources,
                                 required1=required)['allocation_requests']


def test_devices_of_every_host_are_listed(cluster):
    devices = cluster.call('GET', '/devices', 200).json()['devices']
    by_host = {}
    for device in devices:
        by_host.setdefault(device['hostname'], []).append(device)
    assert sorted(by_host) == cluster.agent_hosts
    assert all(len(d) == cluster.cards for d in by_host.values())


def test_flow_on_each_of_three_hosts(cluster, arq_cleanup):
    profile = cluster.create_profile('mh-flow')
    candidates = _candidates(cluster, profile)
    regions = {r.rp_uuid: r for r in cluster.region_rps()}
    assert len(candidates) == cluster.expected_regions()
    by_host = {}
    for cand in candidates:
        (rp_uuid,) = cand['mappings']['1']
        by_host.setdefault(regions[rp_uuid].host, cand)
    assert sorted(by_host) == cluster.agent_hosts

    bound = {}
    for host, cand in sorted(by_host.items()):
        instance = str(uuid.uuid4())
        resp = requests.put(
            cluster.placement.endpoint + '/allocations/' + instance,
            headers=cl.PLACEMENT, timeout=10,
            json={'allocations': cand['allocations'], 'project_id': 'p1',
                  'user_id': 'u1', 'consumer_generation': None,
                  'consumer_type': 'INSTANCE'})
        assert resp.status_code == 204, resp.text
        (arq,) = cluster.create_arqs('mh-flow')
        arq_cleanup.append(arq['uuid'])
        (rp_uuid,) = cand['mappings']['1']
        cluster.bind(arq['uuid'], regions[rp_uuid], instance)
        bound[arq['uuid']] = (host, rp_uuid, instance)

    done = cluster.wait_resolved(bound, timeout=30)
    for arq_uuid, (host, rp_uuid, instance) in bound.items():
        arq = done[arq_uuid]
        assert arq['state'] == 'Bound', arq
        assert (arq['hostname'], arq['device_rp_uuid'],
                arq['instance_uuid']) == (host, rp_uuid, instance)
        assert arq['attach_handle_type'] == 'PCI'
    assert cluster.handle_double_use() == []

    unbind = {u: [{'path': p, 'op': 'remove'} for p in
                  ('/hostname', '/device_rp_uuid', '/instance_uuid')]
              for u in bound}
    cluster.call('PATCH', '/accelerator_requests', 202, json=unbind)
    cluster.wait_for(lambda: all(cluster.arq(u)['state'] == 'Unbound'
                                 for u in bound), 30, 'all Unbound')
    for _, _, instance in bound.values():
        requests.delete(cluster.placement.endpoint + '/allocations/' +
                        instance, headers=cl.PLACEMENT, timeout=10)
