"""bind_arqs on one conductor, the API's unbind after it, and delete after
bind."""
import pytest
import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.conductor import bind
from cyborg_lite.db import arq_binds
from cyborg_lite.db import arq_releases
from cyborg_lite.db import arqs as db_arqs
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.unit.conductor import bind_helpers as h


def test_bind_reaches_bound_with_the_regions_handle(db):
    region = h.make_region(handles=2)
    arq_uuid = h.make_arq()
    notifier = h.RecordingNotifier()
    wanted = dict(h.binding(region), project_id='p1')
    result = bind.bind_arqs(None, {arq_uuid: wanted}, notifier=notifier)
    assert result == {arq_uuid: 'Bound'}
    arq = h.get_arq(arq_uuid)
    first = h.handles_of(region)[0]
    assert (arq.hostname, arq.device_rp_uuid, arq.instance_uuid,
            arq.project_id) == ('host1', region['rp_uuid'],
                                wanted['instance_uuid'], 'p1')
    assert arq.attach_handle_id == first.id and first.in_use
    assert arq.deployable_id == region['deployable_id'] and arq.error is None
    assert notifier.events == [{'arq_uuid': arq_uuid, 'status': 'completed',
                                'instance_uuid': wanted['instance_uuid']}]


def test_unbind_frees_the_handle_and_clears_the_binding(db):
    region = h.make_region()
    arq_uuid = h.make_arq()
    bind.bind_arqs(None, {arq_uuid: h.binding(region)},
                   notifier=h.RecordingNotifier())
    arq_releases.unbind_all(db_arqs.ALL, [arq_uuid])
    assert h.get_arq(arq_uuid).state == 'Unbound'
    arq = h.get_arq(arq_uuid)
    assert (arq.state, arq.hostname, arq.device_rp_uuid, arq.instance_uuid,
            arq.attach_handle_id) == ('Unbound', None, None, None, None)
    assert not h.handles_of(region)[0].in_use
    # Unbinding again changes nothing; once the region is wiped, binding
    # again takes the handle back.
    arq_releases.unbind_all(db_arqs.ALL, [arq_uuid])
    assert h.get_arq(arq_uuid).state == 'Unbound'
    h.clean(region)
    again = bind.bind_arqs(None, {arq_uuid: h.binding(region)},
                           notifier=h.RecordingNotifier())
    assert again == {arq_uuid: 'Bound'}
    assert h.handles_of(region)[0].in_use


def test_delete_frees_the_handle(db):
    # Deleting is the API's (db/arqs.py); the next bind must find the
    # handle free.
    region = h.make_region()
    arq_uuid, other = h.make_arqs(2)
    bind.bind_arqs(None, {arq_uuid: h.binding(region)},
                   notifier=h.RecordingNotifier())
    arq_releases.delete_by_uuids(db_arqs.ALL, [arq_uuid])
    assert not h.handles_of(region)[0].in_use
    with session.reader() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(
            models.AcceleratorRequest)) == 1
    h.clean(region)
    assert bind.bind_arqs(None, {other: h.binding(region)},
                          notifier=h.RecordingNotifier()) == {other: 'Bound'}


def _bind_fails(region_binding, reason_part):
    arq_uuid = h.make_arq()
    notifier = h.RecordingNotifier()
    result = bind.bind_arqs(None, {arq_uuid: region_binding},
                            notifier=notifier)
    assert result == {arq_uuid: 'BindFailed'}
    arq = h.get_arq(arq_uuid)
    assert reason_part in arq.error
    assert arq.attach_handle_id is None
    assert notifier.by_arq()[arq_uuid]['status'] == 'failed'
    return arq


def test_wrong_hostname_fails_with_reason(db):
    region = h.make_region(hostname='host1')
    _bind_fails(h.binding(region, hostname='host2'), 'is on host host1')
    assert not h.handles_of(region)[0].in_use


def test_unknown_resource_provider_fails_with_reason(db):
    region = dict(h.make_region(), rp_uuid='11111111-2222-3333-4444-5555')
    _bind_fails(h.binding(region), 'no deployable has resource provider')


def test_no_free_handle_fails_with_reason(db):
    region = h.make_region(handles=1)
    first = h.make_arq()
    bind.bind_arqs(None, {first: h.binding(region)},
                   notifier=h.RecordingNotifier())
    _bind_fails(h.binding(region), 'no free attach handle')
    assert h.get_arq(first).state == 'Bound'


def test_region_being_programmed_by_another_request_fails(db):
    region = h.make_region()
    with session.writer() as s:
        bitstream = models.Bitstream(uuid=h._uuid(), name='b', format='raw')
        s.add(bitstream)
        s.flush()
        s.add(models.ProgrammingJob(
            uuid='job-1', deployable_id=region['deployable_id'],
            bitstream_id=bitstream.id,
            active_deployable_id=region['deployable_id']))
    _bind_fails(h.binding(region), 'being programmed by job job-1')
    assert not h.handles_of(region)[0].in_use


def test_whole_gpu_is_found_through_its_device_rp(db):
    gpu = h.make_region(rc='PGPU', deployable_rp=False)
    arq_uuid = h.make_arq()
    wanted = dict(h.binding(gpu), device_rp_uuid=gpu['device_rp_uuid'])
    assert bind.bind_arqs(None, {arq_uuid: wanted},
                          notifier=h.RecordingNotifier()) == {
        arq_uuid: 'Bound'}
    assert h.get_arq(arq_uuid).deployable_id == gpu['deployable_id']


def test_refused_arqs_are_left_as_they_are(db):
    region = h.make_region(handles=2)
    bound = h.make_arq()
    bind.bind_arqs(None, {bound: h.binding(region)},
                   notifier=h.RecordingNotifier())
    incomplete = h.make_arq()
    notifier = h.RecordingNotifier()
    result = bind.bind_arqs(None, {
        bound: h.binding(region),
        incomplete: {'hostname': 'host1'},
        'no-such-arq': h.binding(region)}, notifier=notifier)
    assert result == {bound: 'Bound', incomplete: 'Initial',
                      'no-such-arq': None}
    assert notifier.events == []
    assert h.get_arq(incomplete).version == 1


def test_several_arqs_in_one_request(db):
    regions = [h.make_region() for _ in range(3)]
    arqs = h.make_arqs(3)
    notifier = h.RecordingNotifier()
    result = bind.bind_arqs(None, {a: h.binding(r)
                                   for a, r in zip(arqs, regions)},
                            notifier=notifier)
    assert set(result.values()) == {'Bound'}
    assert len(notifier.events) == 3
    assert len(h.check_no_handle_double_use()) == 3


def test_a_region_no_longer_on_the_device_read_before_fails_the_bind(db):
    # The bind resolves the region and its device before its transaction;
    # a region deleted since (its device kept) is refused by name, with
    # nothing claimed.
    region = h.make_region()
    other = h.make_region()
    arq_uuid = h.make_arq()
    [started], _ = arq_binds.begin_binds({arq_uuid: h.binding(region)}, 'c1')
    with session.reader() as s:
        device_id, other_device_id = (
            s.scalar(sa.select(models.Deployable.device_id).where(
                models.Deployable.id == r['deployable_id']))
            for r in (region, other))
    with pytest.raises(exception.ArqBindFailed, match='is gone'):
        arq_binds.finish_bind(started, region['deployable_id'],
                            region['deployable_uuid'],
                            device_id=other_device_id)
    with session.writer() as s:
        s.execute(sa.delete(models.Deployable.__table__).where(
            models.Deployable.id == region['deployable_id']))
    with pytest.raises(exception.ArqBindFailed, match='is gone'):
        arq_binds.finish_bind(started, region['deployable_id'],
                            region['deployable_uuid'], device_id=device_id)
    arq = h.get_arq(arq_uuid)
    assert (arq.state, arq.attach_handle_id) == ('BindStarted', None)
    assert not any(handle.in_use for handle in h.handles_of(other))
