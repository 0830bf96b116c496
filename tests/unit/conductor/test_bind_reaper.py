"""reap_stale_binds: a bind a conductor took and left ends BindFailed; one
no conductor took (its cast was lost) is cast again, then Bound."""
import datetime

import pytest
import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.conductor import bind
from cyborg_lite.db import arq_binds
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.unit.conductor import bind_helpers as h


def _age(arq_uuid, seconds, **values):
    """Move the ARQ's bind times ``seconds`` into the past."""
    at = models.utcnow() - datetime.timedelta(seconds=seconds)
    with session.writer() as s:
        s.execute(sa.update(models.AcceleratorRequest)
                  .where(models.AcceleratorRequest.uuid == arq_uuid)
                  .values(bind_started_at=at, bind_dispatched_at=at,
                          **values))
        s.execute(sa.update(models.AcceleratorRequest)
                  .where(models.AcceleratorRequest.uuid == arq_uuid,
                         models.AcceleratorRequest.bind_taken_at.is_not(
                             None))
                  .values(bind_taken_at=at))


def _bind_started(age_seconds, instance_uuid='inst-1', taken_by='cond-x'):
    """A BindStarted ARQ begun ``age_seconds`` ago, taken by ``taken_by``
    (None: recorded by the API and taken by no conductor)."""
    arq_uuid = h.make_arq(state='BindStarted')
    values = {'instance_uuid': instance_uuid}
    if taken_by:
        values.update(bind_taken_at=models.utcnow(), bind_taken_by=taken_by)
    with session.writer() as s:
        s.execute(sa.update(models.AcceleratorRequest)
                  .where(models.AcceleratorRequest.uuid == arq_uuid)
                  .values(**values))
    _age(arq_uuid, age_seconds)
    return arq_uuid


class RecordingCast:
    """Where the reaper's casts go: kept, and handed to a real conductor
    (bind.bind_arqs) or dropped."""

    def __init__(self, deliver=True, conductor='cond-b'):
        self.casts = []
        self.deliver = deliver
        self.conductor = conductor

    def __call__(self, ctxt, bindings):
        self.casts.append(bindings)
        if self.deliver:
            bind.bind_arqs(ctxt, bindings, notifier=h.RecordingNotifier(),
                           conductor=self.conductor)
        return self.deliver


def test_stale_bind_is_reaped_and_notified(db):
    stale = _bind_started(120)
    fresh = _bind_started(5)
    notifier = h.RecordingNotifier()
    assert bind.reap_stale_binds(60, notifier=notifier) == [stale]
    arq = h.get_arq(stale)
    assert arq.state == 'BindFailed' and '60 seconds' in arq.error
    assert 'conductor cond-x, which took it, probably stopped' in arq.error
    assert h.get_arq(fresh).state == 'BindStarted'
    assert notifier.events == [{'arq_uuid': stale, 'instance_uuid': 'inst-1',
                                'status': 'failed'}]
    # A second run finds nothing left to do.
    assert bind.reap_stale_binds(60, notifier=notifier) == []


def test_default_timeout_comes_from_config(db, conf):
    conf.set_override('bind_timeout', 30, group='arq')
    stale = _bind_started(45)
    assert bind.reap_stale_binds(notifier=h.RecordingNotifier()) == [stale]


def test_bind_being_programmed_is_left_to_its_job(db):
    stale = _bind_started(600)
    region = h.make_region()
    with session.writer() as s:
        arq_id = s.scalar(sa.select(models.AcceleratorRequest.id).where(
            models.AcceleratorRequest.uuid == stale))
        bs = models.Bitstream(uuid='bs-uuid', name='b', format='gbs')
        s.add(bs)
        s.flush()
        s.add(models.ProgrammingJob(
            uuid='job-uuid', deployable_id=region['deployable_id'],
            bitstream_id=bs.id, active_deployable_id=region['deployable_id'],
            state='programming', arq_id=arq_id))
    assert bind.reap_stale_binds(60, notifier=h.RecordingNotifier()) == []
    with session.writer() as s:
        s.execute(sa.update(models.ProgrammingJob).values(
            state='failed', active_deployable_id=None))
    assert bind.reap_stale_binds(60, notifier=h.RecordingNotifier()) == [
        stale]


def test_reaped_bind_cannot_complete_later(db):
    """A slow conductor that finishes after the reaper keeps no handle."""
    region = h.make_region()
    arq_uuid = h.make_arq()

    def slow_program(ctxt, **kwargs):
        bind.reap_stale_binds(0, notifier=h.RecordingNotifier())
    with session.writer() as s:
        s.execute(sa.update(models.DeviceProfile).values(
            profile_json='[{"accel:function_id": "f1"}]'))
    result = bind.bind_arqs(None, {arq_uuid: h.binding(region)},
                            notifier=h.RecordingNotifier(),
                            programmer=slow_program)
    assert result == {arq_uuid: 'BindFailed'}
    assert 'did not finish' in h.get_arq(arq_uuid).error
    assert not h.handles_of(region)[0].in_use


def test_a_bind_is_aged_from_when_a_conductor_took_it(db, monkeypatch):
    """Requested long ago, taken lately (its first cast was lost): the
    conductor that took it has the whole bind timeout from then."""
    db_clock = h.FakeDbClock(monkeypatch)
    region, arq_uuid = h.make_region(), h.make_arq()
    binding = h.binding(region)
    arq_binds.start_binds({arq_uuid: binding})
    _age(arq_uuid, 250)                     # requested 250 s ago
    arq_binds.begin_binds({arq_uuid: binding}, 'cond-a')   # taken now
    db_clock.advance(100)     # requested 350 s ago, taken 100 s ago

    assert bind.reap_stale_binds(300, notifier=h.RecordingNotifier()) == []
    assert h.get_arq(arq_uuid).state == 'BindStarted'

    db_clock.advance(201)                   # taken 301 s ago
    assert bind.reap_stale_binds(300, notifier=h.RecordingNotifier()) == [
        arq_uuid]
    assert 'conductor cond-a, which took it' in h.get_arq(arq_uuid).error


def test_reaping_in_batches(db):
    stale = {_bind_started(100, instance_uuid=None) for _ in range(5)}
    reaped = bind.reap_stale_binds(10, notifier=h.RecordingNotifier(),
                                   batch=2)
    assert set(reaped) == stale
    assert set(h.states(stale).values()) == {'BindFailed'}


def test_bind_recorded_by_the_api_is_finished_by_the_conductor(db):
    region = h.make_region()
    arq_uuid = h.make_arq()
    binding = h.binding(region)
    arq_binds.start_binds({arq_uuid: binding})
    recorded = h.get_arq(arq_uuid)
    assert recorded.state == 'BindStarted'
    assert recorded.device_rp_uuid == binding['device_rp_uuid']
    assert recorded.bind_started_at is not None
    result = bind.bind_arqs(None, {arq_uuid: binding},
                            notifier=h.RecordingNotifier())
    assert result == {arq_uuid: 'Bound'}
    assert h.handles_of(region)[0].in_use


def test_conductor_marks_the_bind_it_takes(db):
    region = h.make_region()
    arq_uuid = h.make_arq()
    binding = h.binding(region)
    arq_binds.start_binds({arq_uuid: binding})
    recorded = h.get_arq(arq_uuid)
    assert (recorded.bind_taken_at, recorded.bind_taken_by) == (None, None)
    assert recorded.bind_dispatched_at == recorded.bind_started_at
    [started], refused = arq_binds.begin_binds({arq_uuid: binding}, 'cond-a')
    assert refused == {}
    taken = h.get_arq(arq_uuid)
    assert taken.bind_taken_by == 'cond-a' and taken.bind_taken_at
    assert started.version == taken.version == recorded.version + 1


def test_second_copy_of_a_cast_is_refused(db):
    """The reaper re-sent a bind whose first cast was only slow: the
    conductor that gets the second copy does nothing."""
    region = h.make_region()
    arq_uuid = h.make_arq()
    binding = h.binding(region)
    arq_binds.start_binds({arq_uuid: binding})
    arq_binds.begin_binds({arq_uuid: binding}, 'cond-a')
    started, refused = arq_binds.begin_binds({arq_uuid: binding}, 'cond-b')
    assert started == []
    state, exc = refused[arq_uuid]
    assert state == 'BindStarted'
    assert 'taken by conductor cond-a' in str(exc)
    assert h.get_arq(arq_uuid).bind_taken_by == 'cond-a'


def test_a_cast_unlike_the_recorded_bind_is_refused(db):
    """A cast whose binding is not the one the API recorded (another
    host, provider or instance) takes nothing and binds nothing."""
    region = h.make_region(handles=len(arq_binds.BIND_KEYS))
    elsewhere = h.make_region(hostname='host2')
    other = {'hostname': 'host2', 'device_rp_uuid': elsewhere['rp_uuid'],
             'instance_uuid': 'another-instance'}
    recorded, unlike = {}, {}
    for key in arq_binds.BIND_KEYS:
        arq_uuid = h.make_arq()
        recorded[arq_uuid] = h.binding(region)
        unlike[arq_uuid] = dict(recorded[arq_uuid], **{key: other[key]})
    arq_binds.start_binds(recorded)
    versions = {arq_uuid: h.get_arq(arq_uuid).version
                for arq_uuid in recorded}

    assert bind.bind_arqs(None, unlike, notifier=h.RecordingNotifier(),
                          conductor='cond-b') == dict.fromkeys(
        unlike, 'BindStarted')

    for arq_uuid, binding in recorded.items():
        arq = h.get_arq(arq_uuid)
        assert (arq.version, arq.bind_taken_by) == (versions[arq_uuid], None)
        assert {k: getattr(arq, k) for k in arq_binds.BIND_KEYS} == binding
    assert not any(handle.in_use for handle in
                   h.handles_of(region) + h.handles_of(elsewhere))
    # The recorded bindings are still there to be taken.
    assert bind.bind_arqs(None, recorded,
                          notifier=h.RecordingNotifier()) == dict.fromkeys(
        recorded, 'Bound')


def test_dropped_cast_is_sent_again_and_binds(db):
    """Issue 18.3: the API recorded the bind and its cast was lost (no
    conductor ever saw it): the reaper casts it again and it ends Bound,
    not BindFailed."""
    region = h.make_region()
    arq_uuid = h.make_arq()
    binding = h.binding(region)
    arq_binds.start_binds({arq_uuid: binding})   # what the API records
    # ... and the cast is dropped: nothing else happens.
    _age(arq_uuid, 45)
    cast = RecordingCast()
    assert bind.reap_stale_binds(300, notifier=h.RecordingNotifier(),
                                 cast=cast) == []
    assert cast.casts == [{arq_uuid: binding}]
    arq = h.get_arq(arq_uuid)
    assert arq.state == 'Bound' and arq.bind_taken_by == 'cond-b'
    assert h.handles_of(region)[0].in_use


def test_resent_bind_is_not_sent_again_before_the_interval(db, conf):
    conf.set_override('bind_resend_interval', 30, group='arq')
    region = h.make_region()
    arq_uuid = h.make_arq()
    arq_binds.start_binds({arq_uuid: h.binding(region)})
    cast = RecordingCast(deliver=False)
    assert bind.resend_untaken_binds(cast=cast) == []   # 0 s old
    _age(arq_uuid, 31)
    assert bind.resend_untaken_binds(cast=cast) == [arq_uuid]
    # Lost again; not re-sent until another interval has passed.
    assert bind.resend_untaken_binds(cast=cast) == []
    assert len(cast.casts) == 1
    assert h.get_arq(arq_uuid).state == 'BindStarted'


def test_taken_bind_is_never_sent_again(db):
    region = h.make_region()
    arq_uuid = h.make_arq()
    binding = h.binding(region)
    arq_binds.start_binds({arq_uuid: binding})
    arq_binds.begin_binds({arq_uuid: binding}, 'cond-a')
    _age(arq_uuid, 45)
    cast = RecordingCast()
    assert bind.reap_stale_binds(300, notifier=h.RecordingNotifier(),
                                 cast=cast) == []
    assert cast.casts == []
    assert h.get_arq(arq_uuid).state == 'BindStarted'


def test_bind_no_conductor_takes_fails_after_the_bind_timeout(db):
    region = h.make_region()
    arq_uuid = h.make_arq()
    arq_binds.start_binds({arq_uuid: h.binding(region)})
    _age(arq_uuid, 301)
    cast = RecordingCast(deliver=False)
    assert bind.reap_stale_binds(300, notifier=h.RecordingNotifier(),
                                 cast=cast) == [arq_uuid]
    arq = h.get_arq(arq_uuid)
    assert arq.state == 'BindFailed'
    assert 'no conductor took the bind within 300 seconds' in arq.error
    assert cast.casts == []
    assert not h.handles_of(region)[0].in_use


def test_recording_binds_is_all_or_nothing(db):
    region = h.make_region()
    first, second = h.make_arqs(2)
    arqs_db.transition(second, 'Unbound')
    arqs_db.transition(second, 'BindStarted')
    with pytest.raises(exception.ARQStateConflict):
        arq_binds.start_binds({first: h.binding(region),
                                second: h.binding(region)})
    assert h.get_arq(first).state == 'Initial'


def _skew_service_clock(monkeypatch, seconds):
    """This host's clock (what models.utcnow reads) off by ``seconds``."""
    real = models.utcnow
    monkeypatch.setattr(models, 'utcnow', lambda: real() +
                        datetime.timedelta(seconds=seconds))


def test_api_host_clock_behind_does_not_age_a_bind(db, monkeypatch):
    """Issue 13.11: bind_started_at is the database's time, not the clock
    of the API host that recorded the bind."""
    region = h.make_region()
    arq_uuid = h.make_arq()
    _skew_service_clock(monkeypatch, -3600)
    arq_binds.start_binds({arq_uuid: h.binding(region)})
    monkeypatch.undo()
    assert bind.reap_stale_binds(60, notifier=h.RecordingNotifier()) == []
    assert h.get_arq(arq_uuid).state == 'BindStarted'


def test_conductor_clock_ahead_does_not_reap_a_fresh_bind(db, monkeypatch):
    """Issue 13.11: the reaper compares with the database's clock."""
    region = h.make_region()
    arq_uuid = h.make_arq()
    arq_binds.start_binds({arq_uuid: h.binding(region)})
    _skew_service_clock(monkeypatch, 3600)
    assert bind.reap_stale_binds(60, notifier=h.RecordingNotifier()) == []
    assert h.get_arq(arq_uuid).state == 'BindStarted'
    # Still reaped once the database's own time says it is stale.
    assert bind.reap_stale_binds(0, notifier=h.RecordingNotifier()) == [
        arq_uuid]
