"""When a bind may claim a region (issue 12.1, 12.3, 18.2), on every
backend: one PCI function on at most one ARQ whatever Placement offered,
no binds to a device in maintenance or to a host whose agent is down, and
a publish request whenever a host's offer changes outside a report."""
import pytest
import sqlalchemy as sa

from cyborg_lite.conductor import bind
from cyborg_lite.conductor import manager
from cyborg_lite.conductor import publishing
from cyborg_lite.db import agents as agents_db
from cyborg_lite.db import arq_releases
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import attach_handles
from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.inventory import sink as inventory_sink
from tests.unit.conductor import bind_helpers as h


def _bind(region, instance=None, arq_uuid=None, hostname='host1'):
    arq_uuid = arq_uuid or h.make_arq()
    notifier = h.RecordingNotifier()
    result = bind.bind_arqs(None, {arq_uuid: h.binding(
        region, hostname=hostname, instance_uuid=instance)},
        notifier=notifier)
    return arq_uuid, result[arq_uuid]


def _publish_requests():
    with session.reader() as s:
        return list(s.execute(sa.select(models.PublishRequest.hostname,
                                         models.PublishRequest.reason)
                              .order_by(models.PublishRequest.id)))


def _attach_info(arq_uuid):
    with session.reader() as s:
        return s.scalar(sa.select(models.AttachHandle.attach_info).join(
            models.AcceleratorRequest,
            models.AcceleratorRequest.attach_handle_id ==
            models.AttachHandle.id).where(
            models.AcceleratorRequest.uuid == arq_uuid))


def test_two_instances_on_a_card_without_sriov_one_function_one_arq(db):
    region0, region1 = h.make_card(sriov=False)
    first, state = _bind(region0)
    assert state == 'Bound'
    # Placement offers both as one accelerator: its allocation counts it.
    assert _publish_requests() == []

    second, state = _bind(region1)

    assert state == 'BindFailed'
    error = h.get_arq(second).error
    assert 'handle_shared_in_use' in error and first in error
    assert region1['deployable_uuid'] in error
    assert h.check_no_handle_double_use() == {h.get_arq(first)
                                              .attach_handle_id}


RELEASED = ('host1', 'released: waits for its wipe')


def test_the_sibling_binds_once_the_function_is_freed_and_wiped(db):
    region0, region1 = h.make_card(sriov=False)
    first, _ = _bind(region0)
    arq_releases.unbind_all(arqs_db.ALL, [first])
    assert h.get_arq(first).state == 'Unbound'
    assert _publish_requests() == [RELEASED]

    # The PF reaches region0 too, whose last tenant's data is not wiped;
    # and region1 itself, which that tenant could write through the PF.
    second, state = _bind(region1)
    assert state == 'BindFailed'
    assert 'shared_function_unclean' in h.get_arq(second).error
    assert 'pending_cleaning' in h.get_arq(second).error

    h.clean(region0)
    third, state = _bind(region1)
    assert state == 'BindFailed'
    assert 'shared_function_unclean' not in h.get_arq(third).error
    assert 'pending_cleaning' in h.get_arq(third).error
    h.clean(region1)
    assert _bind(region1)[1] == 'Bound'
    h.check_no_handle_double_use()


def test_deleting_the_holder_frees_the_function_and_asks_a_publish(db):
    # Nova's teardown deletes ARQs without unbinding them first.
    region0, region1 = h.make_card(sriov=False)
    instance = '8f1e3b52-6d1c-4a3e-9a63-0f1f2c3d4e5f'
    _bind(region0, instance=instance)
    assert arq_releases.delete_by_instance(
        arqs_db.ALL, instance).publish_hosts == {'host1'}
    assert _publish_requests() == [RELEASED]
    h.clean(region0)
    h.clean(region1)     # behind the PF its tenant had, wiped too
    assert _bind(region1)[1] == 'Bound'


def test_deleting_an_arq_on_its_own_vf_asks_to_publish_its_wipe(db):
    region0, _region1 = h.make_card(sriov=True)
    first, _ = _bind(region0)
    assert arq_releases.delete_by_uuids(
        arqs_db.ALL, [first]).publish_hosts == {
        'host1'}
    assert _publish_requests() == [RELEASED]


def test_a_two_group_profile_on_one_card_without_sriov(db):
    region0, region1 = h.make_card(sriov=False)
    profile = h.make_profile([{'resources:FPGA': '1'}] * 2)
    arq0 = h.make_arq(profile_id=profile, group_id=0)
    arq1 = h.make_arq(profile_id=profile, group_id=1)
    instance = '0b4c6f8e-3f8e-4a43-a0cf-6b8b8d4b2c11'
    results = bind.bind_arqs(None, {
        arq0: h.binding(region0, instance_uuid=instance),
        arq1: h.binding(region1, instance_uuid=instance)},
        notifier=h.RecordingNotifier())
    # One guest never gets the same device twice.
    assert sorted(results.values()) == ['BindFailed', 'Bound']
    failed = [a for a, state in results.items() if state == 'BindFailed']
    assert 'handle_shared_in_use' in h.get_arq(failed[0]).error


@pytest.mark.parametrize('two_groups', [False, True])
def test_with_sriov_each_region_binds_its_own_vf(db, two_groups):
    region0, region1 = h.make_card(sriov=True)
    if two_groups:
        profile = h.make_profile([{'resources:FPGA': '1'}] * 2)
        arqs = [h.make_arq(profile_id=profile, group_id=g) for g in (0, 1)]
        instances = ['0b4c6f8e-3f8e-4a43-a0cf-6b8b8d4b2c11'] * 2
    else:
        arqs = h.make_arqs(2)
        instances = [None, None]
    results = {}
    for arq_uuid, region, instance in zip(arqs, (region0, region1),
                                          instances):
        results[arq_uuid] = _bind(region, instance, arq_uuid)[1]
    assert list(results.values()) == ['Bound', 'Bound']
    assert _attach_info(arqs[0]) != _attach_info(arqs[1])
    # Nothing shared: nobody else's offer changed.
    assert _publish_requests() == []


def test_the_database_refuses_one_function_on_two_handles(db):
    region0, region1 = h.make_card(sriov=False)
    [handle0], [handle1] = h.handles_of(region0), h.handles_of(region1)
    key = attach_handles.function_key('host1', handle0.attach_info)
    assert key == attach_handles.function_key('host1', handle1.attach_info)
    with session.writer() as s:
        assert attach_handles.claim_free(s, region0['deployable_id'])
    with session.writer() as s:
        # The claim skips a handle whose function is held...
        assert attach_handles.claim_free(s, region1['deployable_id']) is None
    # ...and the UNIQUE constraint holds even for a writer that does not.
    with pytest.raises(sa.exc.IntegrityError):
        with session.writer() as s:
            s.execute(sa.update(models.AttachHandle)
                      .where(models.AttachHandle.id == handle1.id)
                      .values(in_use=True, in_use_function=key))


def test_the_same_function_on_another_host_is_another_function():
    assert attach_handles.function_key('a', '{"bus":"5e"}') != \
        attach_handles.function_key('b', '{"bus":"5e"}')
    # Whatever the JSON spelling.
    assert attach_handles.function_key('a', '{"bus": "5e", "domain": "0"}') \
        == attach_handles.function_key('a', '{"domain":"0","bus":"5e"}')


def test_a_device_in_maintenance_is_not_bound(db):
    region, = h.make_card(regions=1)
    hostname, changed = devices_db.set_status(region['device_uuid'],
                                              'maintaining')
    assert (hostname, changed) == ('host1', True)
    assert devices_db.set_status(region['device_uuid'],
                                 'maintaining') == ('host1', False)
    assert [reason for _, reason in _publish_requests()] == [
        'device %s maintaining' % region['device_uuid']]

    arq_uuid, state = _bind(region)
    assert state == 'BindFailed'
    assert '[maintaining]' in h.get_arq(arq_uuid).error

    devices_db.set_status(region['device_uuid'], 'enabled')
    assert _bind(region)[1] == 'Bound'


def test_a_host_whose_agent_is_down_is_not_bound(db, monkeypatch):
    region, = h.make_card(regions=1)
    assert agents_db.heartbeat('host1') is False
    h.FakeDbClock(monkeypatch).advance(61)
    assert agents_db.mark_silent_down(60) == ['host1']

    arq_uuid, state = _bind(region)
    assert state == 'BindFailed'
    assert '[agent_down]' in h.get_arq(arq_uuid).error

    assert agents_db.heartbeat('host1') is True
    assert _bind(region)[1] == 'Bound'


def test_unknown_states_of_other_rows_do_not_refuse(db):
    # A host that never sent a heartbeat (an older agent) is up.
    region, = h.make_card(regions=1, hostname='old-agent-host')
    assert _bind(region, hostname='old-agent-host')[1] == 'Bound'


class _RecordingSink(inventory_sink.InventorySink):
    def __init__(self):
        self.published = []

    def publish(self, hostname):
        self.published.append(hostname)
        return inventory_sink.PublishResult(hostname, True)

    @classmethod
    def from_conf(cls, conf):
        return cls()

    def retry_pending(self):
        return []

    def pending_hosts(self):
        return {}


class _RecordingPublisher(publishing.Publisher):
    def __init__(self, sink):
        super().__init__([sink])
        self.calls = 0

    def publish_requested(self, wait=0.0):
        self.calls += 1
        return super().publish_requested(wait)


@pytest.mark.parametrize('kubernetes, calls', [(False, 0), (True, 1)])
def test_the_conductor_serves_publish_requests_after_a_bind_that_asked(
        db, conf, kubernetes, calls):
    # Only a claim that changes an offer beyond Placement's count of the
    # allocation (a region's taint on a Kubernetes host) asks for a
    # publish; any other bind spares the conductor reading the requests.
    if kubernetes:
        conf.set_override('hosts', ['host1'], group='kubernetes')
    region = h.make_card(sriov=False)[0]
    sink = _RecordingSink()
    publisher = _RecordingPublisher(sink)
    conductor = manager.ConductorManager('cond-1', publisher=publisher)
    arq_uuid = h.make_arq()
    assert conductor.bind_arqs(None, {arq_uuid: h.binding(region)}) == {
        arq_uuid: 'Bound'}
    assert (publisher.calls, sink.published) == (calls, ['host1'] * calls)
    assert _publish_requests() == []
