"""Two writers on the SAME row, held at the point of conflict (issue 13.12).

On PostgreSQL each test runs two real workflows in two threads, each in
its own transaction, and holds both at their first conditional UPDATE of
the contested table (db/sql/conditional.before_update) until both have read
the row: the race is then decided by the UPDATE's WHERE clause alone.
Exactly one wins and the row's version moves exactly once. Each test
fails when the state/version condition is dropped from
db/sql/conditional.update (both writers then win).

SQLite needs no such test: a writer holds the database's write lock from
its first read to its commit (BEGIN IMMEDIATE, db/sql/session.py), so the
second writer reads what the first committed (see db/sql/conditional.py).
"""
import datetime
import json

import pytest
import sqlalchemy as sa

from cyborg_lite.common import canonical_json
from cyborg_lite.common import exception
from cyborg_lite.db import arq_binds
from cyborg_lite.db import arq_releases
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import attach_handles
from cyborg_lite.db import models
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import session
from tests.unit.bitstreams.conftest import add_bitstream
from tests.unit.bitstreams.conftest import add_region
from tests.unit.conductor import bind_helpers as h
from tests.unit.db.held import Held
from tests.unit.db.held import blocked_behind
from tests.unit.db.held import held_before_a_jobs_insert
from tests.unit.db.held import race

pytestmark = pytest.mark.postgresql


@pytest.fixture
def no_skip_locked(monkeypatch):
    """Reads without SKIP LOCKED (as on a backend that lacks it): the
    conditional UPDATE alone must decide."""
    monkeypatch.setattr(conditional, 'use_skip_locked', False)


def _failed(result):
    return isinstance(result, Exception)


def _started_bind(age_seconds=0):
    """A BindStarted ARQ (begun ``age_seconds`` ago) on a fresh region."""
    region = h.make_region()
    arq_uuid = h.make_arq()
    [started], refused = arq_binds.begin_binds({arq_uuid: h.binding(region)},
                                             'cond-test')
    assert not refused
    if age_seconds:
        began = models.utcnow() - datetime.timedelta(seconds=age_seconds)
        with session.writer() as s:
            s.execute(sa.update(models.AcceleratorRequest.__table__)
                      .where(models.AcceleratorRequest.uuid == arq_uuid)
                      .values(bind_started_at=began, bind_taken_at=began))
    return region, started


def _finish(region, started):
    return lambda: arq_binds.finish_bind(started, region['deployable_id'],
                                       region['deployable_uuid'])


def _reap():
    return arq_binds.reap_stale_binds(60, lambda _by: 'reaped by the test')


def test_bind_completion_vs_unbind(pg_db, monkeypatch):
    region, started = _started_bind()
    bound, unbound = race(monkeypatch, 'accelerator_requests',
                          _finish(region, started),
                          lambda: arq_releases.unbind_all(
                              arqs_db.ALL, [started.uuid]))
    assert not _failed(bound)
    assert isinstance(unbound, exception.ARQStateConflict)
    arq = h.get_arq(started.uuid)
    assert (arq.state, arq.version) == ('Bound', started.version + 1)
    assert h.check_no_handle_double_use() == {arq.attach_handle_id}


def test_bind_completion_vs_reaper(pg_db, monkeypatch, no_skip_locked):
    region, started = _started_bind(age_seconds=600)
    bound, reaped = race(monkeypatch, 'accelerator_requests',
                         _finish(region, started), _reap)
    assert not _failed(bound) and reaped == []
    arq = h.get_arq(started.uuid)
    assert (arq.state, arq.version) == ('Bound', started.version + 1)
    assert h.check_no_handle_double_use() == {arq.attach_handle_id}


def test_unbind_vs_reaper(pg_db, monkeypatch, no_skip_locked):
    _region, started = _started_bind(age_seconds=600)
    unbound, reaped = race(monkeypatch, 'accelerator_requests',
                           lambda: arq_releases.unbind_all(
                               arqs_db.ALL, [started.uuid]), _reap)
    assert _failed(unbound) != (reaped == [])   # exactly one won
    arq = h.get_arq(started.uuid)
    assert arq.version == started.version + 1
    if reaped:
        assert isinstance(unbound, exception.ARQStateConflict)
        assert (arq.state, reaped) == ('BindFailed', [
            (started.uuid, started.instance_uuid)])
    else:
        assert (arq.state, arq.instance_uuid) == ('Unbound', None)


def _claim(deployable_id):
    def claim():
        with session.writer() as s:
            handle = attach_handles.claim_free(s, deployable_id)
            return handle.id if handle is not None else None
    return claim


def test_handle_claim_without_skip_locked(pg_db, monkeypatch,
                                          no_skip_locked):
    region = h.make_region(handles=1)
    [before] = h.handles_of(region)
    first, second = race(monkeypatch, 'attach_handles',
                         _claim(region['deployable_id']),
                         _claim(region['deployable_id']))
    assert sorted([first, second], key=str) == [before.id, None]
    [after] = h.handles_of(region)
    assert after.in_use and after.version == before.version + 1


def test_job_cancel_vs_reap(pg_db, monkeypatch):
    job = jobs_db.create_job(add_region().id, add_bitstream().id,
                             max_attempts=1)
    job = jobs_db.transition(job.uuid, 'queued', 'downloading')
    cancelled, reaped = race(
        monkeypatch, 'programming_jobs',
        lambda: jobs_db.cancel(job.uuid),
        lambda: jobs_db.reap(job.uuid, 'agent silent',
                             expected_version=job.version))
    assert _failed(cancelled) != _failed(reaped)   # exactly one won
    after = jobs_db.get(job.uuid)
    assert after.version == job.version + 1
    if _failed(cancelled):
        assert isinstance(cancelled, exception.JobStateConflict)
        assert after.state == 'failed' and 'agent silent' in after.error
    else:
        assert isinstance(reaped, exception.StaleObject)
        assert after.state == 'cancelled'
    assert after.active_deployable_id is None


def _verifying_job(region, bitstream):
    job = jobs_db.create_job(region.id, bitstream.id)
    for state in ('downloading', 'programming', 'verifying'):
        job = jobs_db.transition(job.uuid, job.state, state)
    return job


def _state(result):
    return getattr(result, 'state', result)


def test_job_success_vs_a_report_writing_its_region(pg_db):
    # Not one winner: both must land. A report of the host rewrites the
    # region's row (version +1) while the job's success is recorded; the
    # success used to read the row's old version, UPDATE no row and fail
    # a job whose region was programmed (StaleDataError, seen in CI).
    region = add_region()
    job = _verifying_job(region, add_bitstream())
    held = Held()

    def report():
        with session.writer() as s:
            dep = s.get(models.Deployable, region.id)
            dep.function_name = 'as the report saw it'
            s.flush()          # the version moves; the row stays locked
            held.hold()

    results = blocked_behind(
        held, report, lambda: jobs_db.succeed(job.uuid, 'f' * 32, 'nlb'))
    assert _state(results['second']) == 'succeeded'
    with session.reader() as s:
        dep = s.get(models.Deployable, region.id)
        assert (dep.function_id, dep.function_name, dep.version) == (
            'f' * 32, 'nlb', region.version + 2)


def test_job_success_vs_a_new_job_of_its_region(pg_db, monkeypatch):
    # A new job holds the region's lock and is about to insert; the
    # running job's success waits for the region before it writes its
    # job, as create_job does. In the other order, the insert (its
    # active_deployable_id taken by the running job) waits on the success
    # and the success on the region: a deadlock, one of them killed.
    from cyborg_lite.db import cleaning
    region, bitstream = add_region(), add_bitstream()
    job = _verifying_job(region, bitstream)
    held, refusal = Held(), cleaning.programming_refusal

    def held_refusal(s, deployable_id, label):
        held.hold()
        return refusal(s, deployable_id, label)
    monkeypatch.setattr(cleaning, 'programming_refusal', held_refusal)

    results = blocked_behind(
        held, lambda: jobs_db.create_job(region.id, bitstream.id),
        lambda: jobs_db.succeed(job.uuid, 'f' * 32, 'nlb'))
    assert isinstance(results['first'], exception.RegionBusy), results
    assert _state(results['second']) == 'succeeded'


# --- availability: one PCI function per ARQ, agents up and down ------------

def _bind_sibling(region):
    """A started bind of ``region`` and its finish, as the conductor's
    bind workflow runs it (finish_bind decides availability itself)."""
    arq_uuid = h.make_arq()
    [started], refused = arq_binds.begin_binds({arq_uuid: h.binding(region)},
                                             'cond-test')
    assert not refused
    return started, lambda: arq_binds.finish_bind(
        started, region['deployable_id'], region['deployable_uuid'])


def test_binds_of_two_regions_sharing_one_function(pg_db, monkeypatch):
    # Two regions of a card without SR-IOV, one PCI function (the PF):
    # both binds pass their region locks and the availability check, and
    # claim their own handle at the same moment. The UNIQUE
    # in_use_function decides; without it both would be Bound.
    region0, region1 = h.make_card(sriov=False)
    (started0, finish0), (started1, finish1) = (_bind_sibling(region0),
                                                _bind_sibling(region1))
    results = race(monkeypatch, 'attach_handles', finish0, finish1)
    assert sorted(map(_failed, results)) == [False, True]
    loser = [r for r in results if _failed(r)][0]
    assert isinstance(loser, exception.ArqBindFailed)
    assert 'handle_shared_in_use' in str(loser)
    bound = [s for s, r in zip((started0, started1), results)
             if not _failed(r)][0]
    assert str(bound.uuid) in str(loser)   # the holder is named
    held = h.check_no_handle_double_use()
    assert len(held) == 1
    with session.reader() as s:
        assert s.scalar(sa.select(sa.func.count()).where(
            models.AttachHandle.in_use_function.is_not(None))) == 1


def _job_on(region, bitstream):
    return lambda: jobs_db.create_job(region['deployable_id'], bitstream.id)


def test_a_bind_first_then_a_job_on_the_region_behind_its_pf(pg_db,
                                                             monkeypatch):
    # A card without SR-IOV: the bind of region0 has claimed the PF (its
    # transaction open) when a job for region1 is created. The job waits
    # for region0's lock (lock_function), then sees the PF held.
    region0, region1 = h.make_card(sriov=False)
    started, finish = _bind_sibling(region0)
    held, claimed = Held(), attach_handles.request_publish_if_offer_changed

    def held_after_the_claim(*args, **kwargs):
        held.hold()
        return claimed(*args, **kwargs)
    monkeypatch.setattr(attach_handles, 'request_publish_if_offer_changed',
                        held_after_the_claim)

    results = blocked_behind(held, finish,
                             _job_on(region1, add_bitstream()))
    assert not _failed(results['first']), results
    assert isinstance(results['second'], exception.Conflict), results
    assert 'in use by accelerator request %s' % started.uuid in str(
        results['second'])
    assert jobs_db.list_jobs() == []


def test_a_job_first_then_a_bind_of_the_region_behind_its_pf(pg_db,
                                                             monkeypatch):
    # The job for region1 holds its locks (region0's too) and is about
    # to insert; the bind of region0 waits for region0, then sees the
    # job and fails: the PF is not handed over mid-write.
    region0, region1 = h.make_card(sriov=False)
    _started, finish = _bind_sibling(region0)
    held = held_before_a_jobs_insert(monkeypatch)

    results = blocked_behind(held, _job_on(region1, add_bitstream()),
                             finish)
    assert _state(results['first']) == 'queued', results
    assert isinstance(results['second'], exception.ArqBindFailed), results
    assert 'which job %s is programming' % results['first'].uuid in str(
        results['second'])
    assert h.check_no_handle_double_use() == set()


def _age_heartbeat(hostname, seconds):
    with session.writer() as s:
        s.execute(sa.update(models.Agent.__table__)
                  .where(models.Agent.hostname == hostname)
                  .values(heartbeat_at=models.utcnow() -
                          datetime.timedelta(seconds=seconds)))


def test_two_conductors_mark_one_silent_agent_down(pg_db, monkeypatch):
    from cyborg_lite.db import agents as agents_db
    agents_db.heartbeat('host1')
    _age_heartbeat('host1', 120)
    first, second = race(monkeypatch, 'agents',
                         lambda: agents_db.mark_silent_down(60),
                         lambda: agents_db.mark_silent_down(60))
    assert sorted([first, second]) == [[], ['host1']]
    assert agents_db.get('host1').state == 'down'
    with session.reader() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(
            models.PublishRequest)) == 1


def test_heartbeat_vs_mark_down(pg_db, monkeypatch):
    from cyborg_lite.db import agents as agents_db
    agents_db.heartbeat('host1')
    _age_heartbeat('host1', 120)
    came_back, moved = race(monkeypatch, 'agents',
                            lambda: agents_db.heartbeat('host1'),
                            lambda: agents_db.mark_silent_down(60))
    # Whichever won, the host ends up, and it was announced down (and
    # published) exactly when the heartbeat found it down.
    assert not _failed(came_back) and not _failed(moved)
    assert came_back == (moved == ['host1'])
    assert agents_db.get('host1').state == 'up'
    with session.reader() as s:
        reasons = list(s.scalars(sa.select(models.PublishRequest.reason)
                                 .order_by(models.PublishRequest.id)))
    assert reasons == (['agent down', 'agent up again'] if came_back
                       else [])


def test_binds_of_two_vgpu_types_for_one_vf(pg_db, monkeypatch):
    # A VF of a vendor-VFIO GPU is a handle of every type it can make,
    # each with its type beside the address (drivers/nvidia_vgpu_vfio.py):
    # two binds of two types claim the one VF at the same moment. The
    # VF's key leaves the type out, so the UNIQUE in_use_function has one
    # of them hold it; the other fails before its agent writes anything.
    regions = h.make_card(sriov=False)
    with session.writer() as s:
        for region, type_id in zip(regions, ('1420', '1426')):
            handle = s.scalars(sa.select(models.AttachHandle).where(
                models.AttachHandle.deployable_id ==
                region['deployable_id'])).one()
            handle.attach_info = canonical_json.dumps(dict(
                json.loads(handle.attach_info), vgpu_type=type_id))
            s.add(models.Attribute(uuid=h._uuid(),
                                   deployable_id=region['deployable_id'],
                                   key='bind', value='make'))
    (started0, finish0), (started1, finish1) = (_bind_sibling(regions[0]),
                                                _bind_sibling(regions[1]))
    results = race(monkeypatch, 'attach_handles', finish0, finish1)
    assert sorted(map(_failed, results)) == [False, True], results
    [held] = [r for r in results if not _failed(r)]
    # Held BindStarted until its agent made the vGPU, which it names.
    assert held.version is not None
    assert held.instance['attach_info']['vgpu_type'] in ('1420', '1426')
    with session.reader() as s:
        assert s.scalar(sa.select(sa.func.count()).where(
            models.AttachHandle.in_use.is_(True))) == 1
