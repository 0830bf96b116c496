"""Never offer what cannot be bound: Nova's sequences, in Nova's order,
against the all-in-one and its real Placement (tests/functional/
nova_order.py plays Nova).

The all-in-one's fake driver has 2 cards x 2 regions, every region of a
card reached through its PF: each card is one accelerator. A boot whose
claim or bind fails on a candidate Placement offered is a failed boot in
Nova (its scheduler claims only the first candidate of a host): there
must be none. A host with nothing clean may have no candidate.
"""
import pytest
import requests

from tests import waiting
from tests.functional import nova_order
from tests.functional import test_scheduler_flow as flow
from tests.functional.test_scheduler_flow import REGION_TYPE

pytestmark = pytest.mark.xdist_group('nova_order')

HOST = 'aio-host'
REGION_TRAIT = 'CUSTOM_FPGA_REGION_%s' % REGION_TYPE.upper()
ONE = [{'resources:FPGA': '1', 'trait:%s' % REGION_TRAIT: 'required'}]
TWO = ONE * 2
# Seconds a wipe takes where a test reads what a delete left "at once":
# long enough that it reads before the wipe ends, on a loaded machine too
# (the fake driver's default is 0.2 s).
SLOW_CLEAN_DELAY = 1


def _all_in_one(tmp_path_factory, clean_delay=None):
    state_dir = tmp_path_factory.mktemp('aio')
    args = []
    if clean_delay is not None:
        config = state_dir / 'wipes.conf'
        config.write_text('[fake_driver]\nclean_delay = %s\n' % clean_delay)
        args = ['--config-file', str(config)]
    yield from flow.running(state_dir, *args)


def _nova(aio):
    for name, groups in (('one-region', ONE), ('two-regions', TWO)):
        resp = requests.post(aio.api + '/device_profiles',
                             headers=nova_order.ACCEL,
                             json=[{'name': name, 'groups': groups}])
        assert resp.status_code == 201, resp.text
    return nova_order.Nova(aio.api, aio.placement, lambda rp_uuid: HOST)


@pytest.fixture(scope='module')
def nova(tmp_path_factory):
    for aio in _all_in_one(tmp_path_factory):
        yield _nova(aio)


@pytest.fixture
def slow_wipes_nova(tmp_path_factory):
    for aio in _all_in_one(tmp_path_factory, SLOW_CLEAN_DELAY):
        nova = _nova(aio)
        nova_order.wait_offered(nova, TWO)
        yield nova


@pytest.fixture
def clean(nova):
    """Each test starts with both cards wiped and offered."""
    nova_order.wait_offered(nova, TWO)
    yield


def _regions_of(nova, rp_uuid):
    resp = requests.get(nova.api + '/deployables', headers=nova_order.ACCEL,
                        params={'rp_uuid': rp_uuid}, timeout=30)
    return resp.json()['deployables']


def test_a_deleted_instances_card_is_not_offered_until_wiped(
        slow_wipes_nova):
    nova = slow_wipes_nova
    instance, [arq] = nova.boot('one-region')
    card = arq['device_rp_uuid']

    nova.delete(instance)

    # At once, before any wipe ended: the freed card is not offered.
    offered = nova.candidates(ONE)
    assert card not in nova_order.offered_providers(offered)
    assert any(r['device_state'] != 'available'
               for r in _regions_of(nova, card))
    # Once wiped, it is offered again.
    waiting.read_until(lambda: nova.candidates(ONE),
                       lambda c: card in nova_order.offered_providers(c),
                       30, interval=0.05, what='card offered after its wipe')


def test_a_bound_cards_regions_are_offered_to_nobody_else(nova, clean):
    instance, [arq] = nova.boot('one-region')
    card = arq['device_rp_uuid']

    # From the moment it is Bound, neither region behind its PF is.
    assert card not in nova_order.offered_providers(nova.candidates(ONE))
    other, [second] = nova.boot('one-region')
    assert second['device_rp_uuid'] != card
    assert nova.candidates(ONE) == []
    nova.delete(instance)
    nova.delete(other)


def test_a_two_group_profile_boots_every_time(nova, clean):
    """Boots in Nova's order of a profile with two regions (ROUNDS),
    each deleted before the next: never two regions behind one PF."""
    failures = []
    for _ in range(nova_order.ROUNDS):
        nova_order.wait_offered(nova, TWO)
        try:
            instance, arqs = nova.boot('two-regions')
        except nova_order.Failed as exc:
            failures.append(str(exc))
            continue
        handles = {a['attach_handle_info']['bus'] for a in arqs}
        assert len(handles) == 2, arqs
        nova.delete(instance)
    assert failures == []


def test_boot_then_delete_back_to_back(nova, clean):
    """One- and two-region boots alternating, each deleted at once: no
    boot fails on a candidate it was offered (none offered is allowed)."""
    failures, booted = [], 0
    for i in range(16):
        try:
            instance, _arqs = nova.boot('two-regions' if i % 2
                                        else 'one-region')
        except nova_order.NoValidHost:
            continue
        except nova_order.Failed as exc:
            failures.append(str(exc))
            continue
        booted += 1
        nova.delete(instance)
    assert failures == []
    assert booted >= 1


def test_shelve_offload_then_unshelve_at_once_boots(nova, clean):
    instance, arqs = nova.boot('one-region')
    card = arqs[0]['device_rp_uuid']

    nova.shelve_offload(instance, arqs)
    # Unshelve: scheduled again at once, new ARQs for the same instance.
    again, [arq] = nova.boot('one-region', instance=instance)

    assert again == instance and arq['state'] == 'Bound'
    assert arq['device_rp_uuid'] != card   # the other one was still dirty
    nova.delete(instance)


def test_an_unbound_cards_regions_are_reserved_before_it_answers(nova,
                                                                 clean):
    instance, [arq] = nova.boot('one-region')
    card = arq['device_rp_uuid']
    unbind = {arq['uuid']: [{'path': '/' + k, 'op': 'remove'} for k in
                            ('hostname', 'device_rp_uuid', 'instance_uuid')]}
    resp = requests.patch(nova.api + '/accelerator_requests',
                          headers=nova_order.ACCEL, json=unbind, timeout=30)
    assert resp.status_code == 202, resp.text
    nova._free(instance)

    assert card not in nova_order.offered_providers(nova.candidates(ONE))
    nova.delete(instance)


def test_a_disabled_card_is_reserved_before_it_answers(nova, clean):
    assert len(nova.candidates(ONE)) == 2
    devices = requests.get(nova.api + '/devices', headers=nova_order.ACCEL,
                           timeout=30).json()['devices']
    device = devices[0]['uuid']
    resp = requests.post(nova.api + '/devices/%s/disable' % device,
                         headers=nova_order.ACCEL, timeout=30)
    assert resp.status_code == 200, resp.text
    try:
        assert len(nova.candidates(ONE)) == 1
    finally:
        resp = requests.post(nova.api + '/devices/%s/enable' % device,
                             headers=nova_order.ACCEL, timeout=30)
        assert resp.status_code == 200, resp.text
    nova_order.wait_offered(nova, TWO)
