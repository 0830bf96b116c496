"""reap_stale_binds: a BindStarted left behind ends BindFailed."""
import datetime

import pytest
import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.conductor import bind
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import models
from cyborg_lite.db import session
from tests.unit.conductor import bind_helpers as h


def _bind_started(age_seconds, instance_uuid='inst-1'):
    arq_uuid = h.make_arq(state='BindStarted')
    started = models.utcnow() - datetime.timedelta(seconds=age_seconds)
    with session.writer() as s:
        s.execute(sa.update(models.AcceleratorRequest)
                  .where(models.AcceleratorRequest.uuid == arq_uuid)
                  .values(bind_started_at=started,
                          instance_uuid=instance_uuid))
    return arq_uuid


def test_stale_bind_is_reaped_and_notified(db):
    stale = _bind_started(120)
    fresh = _bind_started(5)
    notifier = h.RecordingNotifier()
    assert bind.reap_stale_binds(60, notifier=notifier) == [stale]
    arq = h.get_arq(stale)
    assert arq.state == 'BindFailed' and '60 seconds' in arq.error
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
                            program_before_bind=slow_program)
    assert result == {arq_uuid: 'BindFailed'}
    assert 'did not finish' in h.get_arq(arq_uuid).error
    assert not h.handles_of(region)[0].in_use


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
    arqs_db.start_binds({arq_uuid: binding})
    recorded = h.get_arq(arq_uuid)
    assert recorded.state == 'BindStarted'
    assert recorded.device_rp_uuid == binding['device_rp_uuid']
    assert recorded.bind_started_at is not None
    result = bind.bind_arqs(None, {arq_uuid: binding},
                            notifier=h.RecordingNotifier())
    assert result == {arq_uuid: 'Bound'}
    assert h.handles_of(region)[0].in_use


def test_bind_recorded_but_never_cast_is_reaped_not_left_initial(db):
    # A conductor that took the cast and died before doing anything.
    region = h.make_region()
    arq_uuid = h.make_arq()
    arqs_db.start_binds({arq_uuid: h.binding(region)})
    assert bind.reap_stale_binds(0) == [arq_uuid]
    assert h.get_arq(arq_uuid).state == 'BindFailed'
    assert not h.handles_of(region)[0].in_use


def test_recording_binds_is_all_or_nothing(db):
    region = h.make_region()
    first, second = h.make_arqs(2)
    arqs_db.transition(second, 'Unbound')
    arqs_db.transition(second, 'BindStarted')
    with pytest.raises(exception.ARQStateConflict):
        arqs_db.start_binds({first: h.binding(region),
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
    arqs_db.start_binds({arq_uuid: h.binding(region)})
    monkeypatch.undo()
    assert bind.reap_stale_binds(60, notifier=h.RecordingNotifier()) == []
    assert h.get_arq(arq_uuid).state == 'BindStarted'


def test_conductor_clock_ahead_does_not_reap_a_fresh_bind(db, monkeypatch):
    """Issue 13.11: the reaper compares with the database's clock."""
    region = h.make_region()
    arq_uuid = h.make_arq()
    arqs_db.start_binds({arq_uuid: h.binding(region)})
    _skew_service_clock(monkeypatch, 3600)
    assert bind.reap_stale_binds(60, notifier=h.RecordingNotifier()) == []
    assert h.get_arq(arq_uuid).state == 'BindStarted'
    # Still reaped once the database's own time says it is stale.
    assert bind.reap_stale_binds(0, notifier=h.RecordingNotifier()) == [
        arq_uuid]
