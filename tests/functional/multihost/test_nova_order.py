"""Never offer what cannot be bound, on the multi-host setup: Nova's
sequences in Nova's order (tests/functional/nova_order.py) against 3
agent hosts, 2 conductors, the API under gunicorn, PostgreSQL, RabbitMQ
and the real Placement. Each host has 2 cards whose regions are reached
through their PF: each card is one accelerator."""
import pytest

from tests.functional import nova_order

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

ONE = 'mh-nova-one'
TWO = 'mh-nova-two'


@pytest.fixture(scope='module')
def nova(cluster):
    cluster.create_profile(ONE)
    cluster.call('POST', '/device_profiles', 201, json=[{
        'name': TWO, 'groups': [cluster.call(
            'GET', '/device_profiles/' + ONE, 200).json()[
                'device_profile']['groups'][0]] * 2}])
    hosts = {r.rp_uuid: r.host for r in cluster.region_rps()}
    return nova_order.Nova(cluster.api, cluster.placement.endpoint,
                           hosts.__getitem__)


@pytest.fixture
def settled(cluster, nova):
    yield
    cluster.wait_cleaned()
    assert cluster.wait_for_free_regions(60), cluster.reserved_regions()


def test_a_deleted_instances_card_is_not_offered_until_wiped(
        cluster, nova, settled):
    groups = nova.request_groups(ONE)
    instance, [arq] = nova.boot(ONE)
    card = arq['device_rp_uuid']

    nova.delete(instance)

    assert card not in nova_order.offered_providers(nova.candidates(groups))
    cluster.wait_for(
        lambda: card in nova_order.offered_providers(
            nova.candidates(groups)), 60, 'card offered after its wipe')


def test_two_group_boots_and_deletes_back_to_back(cluster, nova, settled):
    """Boots of a two-region profile (ROUNDS), each deleted at once: no
    claim or bind fails on a candidate Placement offered."""
    groups = nova.request_groups(TWO)
    failures = []
    for _ in range(nova_order.ROUNDS):
        nova_order.wait_offered(nova, groups)
        try:
            instance, arqs = nova.boot(TWO)
        except nova_order.Failed as exc:
            failures.append(str(exc))
            continue
        assert len({a['attach_handle_info']['bus'] for a in arqs}) == 2
        nova.delete(instance)
    assert failures == []
    assert cluster.handle_double_use() == []


def test_shelve_offload_then_unshelve_at_once_boots(cluster, nova, settled):
    instance, arqs = nova.boot(ONE)
    nova.shelve_offload(instance, arqs)
    again, [arq] = nova.boot(ONE, instance=instance)
    assert again == instance and arq['state'] == 'Bound'
    assert arq['device_rp_uuid'] != arqs[0]['device_rp_uuid']
    nova.delete(instance)
