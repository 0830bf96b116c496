"""What Placement offers follows what may be bound (issues 12.1, 12.3,
18.2), against the real openstack-placement server.

One host with one simulated card of two regions (the fake driver, its
report applied by the real conductor endpoint, published by the real
Placement sink). This test schedules as Nova does: allocation candidates
in the host's tree, an allocation, ARQs, a bind through the conductor.
With ``[fake_driver] sriov`` each region has its own VF and both regions
bind; without it both regions are reached through the card's PF: the
second bind fails with the reason and the sibling stays reserved in
Placement until the first is unbound.
"""
import uuid

import pytest

from cyborg_lite.conductor import liveness
from cyborg_lite.db import agents as agents_db
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import devices as devices_db
from tests.functional.placement import fake_host
from tests.unit.conductor import bind_helpers as h

MEMORY_MB = fake_host.MEMORY_MB


@pytest.fixture
def make_host(placement, configured, conf, sqlite_db, hostname, tmp_path):
    def make(sriov):
        configured(placement)
        # An unbind casts the region's wipe to its agent: in process.
        conf.set_override('transport_url', 'inproc://')
        fake_host.configure_card(conf, tmp_path / 'fake_fpga', sriov)
        host = fake_host.Host(conf, placement, hostname)
        assert host.report()['changed']
        return host
    return make


FREE = {'FPGA': 0, 'CUSTOM_FPGA_LOCAL_MEMORY_MB': 0}
RESERVED = {'FPGA': 1, 'CUSTOM_FPGA_LOCAL_MEMORY_MB': MEMORY_MB}


def _instance():
    return str(uuid.uuid4())


def test_two_instances_on_one_card_with_sriov(make_host):
    host = make_host(sriov=True)
    a, b = _instance(), _instance()
    [first] = host.candidates()[:1]
    host.allocate(a, first)
    bound_a = host.bind(a, first)[1]

    [second] = host.candidates()
    assert second != first
    host.allocate(b, second)
    bound_b = host.bind(b, second)[1]

    assert (bound_a.state, bound_b.state) == ('Bound', 'Bound')
    assert bound_a.attach_handle_id != bound_b.attach_handle_id
    assert host.reserved() == {'region0': FREE, 'region1': FREE}
    h.check_no_handle_double_use()


CARD = 'region0+region1'


def test_two_instances_on_one_card_without_sriov(make_host):
    host = make_host(sriov=False)
    a, b = _instance(), _instance()
    # Both regions are reached through the PF: one accelerator.
    assert host.candidates() == [{1: CARD}]
    host.allocate(a, {1: CARD})
    assert host.bind(a, {1: CARD})[1].state == 'Bound'

    # Its one accelerator is a's allocation: nothing more is offered.
    assert host.reserved() == {CARD: FREE}
    assert host.candidates() == []

    # A bind onto it anyway (a stale offer) fails cleanly, with the reason.
    failed = host.bind(b, {1: CARD})[1]
    assert failed.state == 'BindFailed'
    assert 'handle_shared_in_use' in failed.error
    assert failed.attach_handle_id is None

    # Unbound, the released region waits for its wipe and the PF, which
    # reaches it, with it; wiped, the card is offered again.
    held = arqs_db.list_arqs(arqs_db.ALL, instance_uuid=a)[0].arq
    host.unbind(held)
    host.placement.delete('/allocations/%s' % a)
    assert host.reserved() == {CARD: RESERVED}
    assert host.candidates() == []
    host.wipe()
    assert host.candidates() == [{1: CARD}]
    host.allocate(b, {1: CARD})
    assert host.bind(b, {1: CARD})[1].state == 'Bound'
    h.check_no_handle_double_use()


def test_a_two_group_profile_on_one_card(make_host):
    host = make_host(sriov=True)
    instance = _instance()
    both = {1: 'region0', 2: 'region1'}
    assert both in host.candidates(groups=2)
    host.allocate(instance, both)

    arqs = host.bind(instance, both, groups=2)

    assert [a.state for a in arqs.values()] == ['Bound', 'Bound']
    assert arqs[1].attach_handle_id != arqs[2].attach_handle_id
    assert host.reserved() == {'region0': FREE, 'region1': FREE}
    h.check_no_handle_double_use()


def test_a_two_group_profile_is_never_offered_one_pf_twice(make_host):
    """One guest must not be given one PCI function twice: no candidate
    puts two groups on the regions behind one PF."""
    host = make_host(sriov=False)
    assert host.candidates(groups=2) == []
    assert host.candidates() == [{1: CARD}]


def test_a_disabled_device_is_reserved_everywhere(make_host):
    host = make_host(sriov=True)
    [device] = devices_db.host_rows(host.hostname).devices
    devices_db.set_status(device.uuid, 'maintaining')
    host.conductor.publish_requested(host.ctxt)
    assert host.reserved() == {'region0': RESERVED, 'region1': RESERVED}
    assert host.candidates() == []
    # A report of the unchanged card keeps the operator's choice.
    host.report()
    assert devices_db.get_device(device.uuid).status == 'maintaining'

    devices_db.set_status(device.uuid, 'enabled')
    host.conductor.publish_requested(host.ctxt)
    assert host.reserved() == {'region0': FREE, 'region1': FREE}


def test_a_host_whose_agent_is_down_is_reserved_until_it_beats(
        make_host, monkeypatch):
    host = make_host(sriov=True)
    host.conductor.agent_heartbeat(host.ctxt, host.hostname)
    h.FakeDbClock(monkeypatch).advance(3600)
    assert liveness.mark_silent_down(host.conductor.publisher, 60) == [
        host.hostname]
    assert host.reserved() == {'region0': RESERVED, 'region1': RESERVED}
    assert host.candidates() == []
    failed = host.bind(_instance(), {1: 'region0'})[1]
    assert failed.state == 'BindFailed' and 'agent_down' in failed.error

    assert host.conductor.agent_heartbeat(
        host.ctxt, host.hostname)['came_back']
    assert agents_db.get(host.hostname).state == 'up'
    assert host.reserved() == {'region0': FREE, 'region1': FREE}


def test_a_region_prepared_for_kubernetes_is_reserved_in_placement(
        make_host, conf, hostname):
    from cyborg_lite.kubernetes import slices as k8s_slices
    from cyborg_lite.kubernetes import view as k8s_view
    conf.set_override('hosts', [hostname], group='kubernetes')
    host = make_host(sriov=True)
    names = {dep.name: name for name, (_dev, dep) in
             k8s_slices.devices_by_name(k8s_view.of_host(
                 conf, devices_db.load_inventory(hostname))).items()}
    claim_uid = str(uuid.uuid4())
    request = {'claim_uid': claim_uid, 'namespace': 'ns', 'claim_name': 'c',
               'pool': hostname, 'device': names['region0'], 'config': None}
    host.conductor.prepare_k8s_device(host.ctxt, hostname, request, 1.0)
    # Nova is not offered it, and a stale offer's bind is refused.
    assert host.reserved() == {'region0': RESERVED, 'region1': FREE}
    assert host.candidates() == [{1: 'region1'}]
    failed = host.bind(_instance(), {1: 'region0'})[1]
    assert failed.state == 'BindFailed'
    assert 'kubernetes_claimed' in failed.error
    host.conductor.release_k8s_device(host.ctxt, hostname, claim_uid,
                                      names['region0'])
    # Released as after an unbind: reserved until its wipe.
    assert host.reserved() == {'region0': RESERVED, 'region1': FREE}

