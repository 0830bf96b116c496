"""db/programming_jobs on SQLite and PostgreSQL: the state machine."""
import datetime
import threading
import uuid

import pytest

from cyborg_lite.common import exception
from cyborg_lite.common import states
from cyborg_lite.db import attach_handles
from cyborg_lite.db import deployables as deployables_db
from cyborg_lite.db import models
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.db.sql import session
from tests.unit.bitstreams.conftest import add_bound_arq
from tests.unit.bitstreams.conftest import add_region
from tests.unit.bitstreams.conftest import REGION_TYPE

HOUR = datetime.timedelta(hours=1)


def _walk(job, *states):
    previous = job.state
    for state in states:
        job = jobs_db.transition(job.uuid, (previous,), state)
        previous = state
    return job


def test_create_job_defaults(db, region, bitstream):
    job = jobs_db.create_job(region.id, bitstream.id, hostname='host1',
                             requester_user_id='u', project_id='p1')
    assert (job.state, job.attempts, job.max_attempts, job.force) == \
        ('queued', 0, 2, False)
    assert job.active_deployable_id == region.id
    assert [j.uuid for j in jobs_db.list_jobs(
        deployable_id=region.id, states=states.JOB_ACTIVE)] == [job.uuid]


def test_second_active_job_on_region_refused(db, region, bitstream):
    first = jobs_db.create_job(region.id, bitstream.id)
    with pytest.raises(exception.RegionBusy) as info:
        jobs_db.create_job(region.id, bitstream.id)
    assert region.name in str(info.value) and first.uuid in str(info.value)
    assert [j.uuid for j in jobs_db.list_jobs()] == [first.uuid]
    # Once the first ends, the region is free again.
    jobs_db.cancel(first.uuid)
    assert jobs_db.create_job(region.id, bitstream.id).state == 'queued'


def test_bound_region_refused_in_the_same_transaction(db, region,
                                                      bitstream):
    # Checked under the region's lock, not only in the earlier pre-flight,
    # so a bind that lands between the two is still seen.
    arq = add_bound_arq(region.id)
    with pytest.raises(exception.Conflict) as info:
        jobs_db.create_job(region.id, bitstream.id)
    assert arq.uuid in str(info.value)
    assert jobs_db.list_jobs() == []
    assert jobs_db.create_job(region.id, bitstream.id,
                              force=True).state == 'queued'


PF = '{"bus":"5e","device":"00","domain":"0000","function":"0"}'


def _card_without_sriov():
    """(region0, region1) of a card whose regions are both behind its PF
    (one accelerator: common/shared_functions.py), each with a handle."""
    with session.writer() as s:
        device = models.Device(uuid=str(uuid.uuid4()), type='FPGA',
                               vendor='8086', model='pac', hostname='host1',
                               driver_name='dfl', identity='0000:5e:00.0')
        s.add(device)
        s.flush()
        regions = [models.Deployable(
            uuid=str(uuid.uuid4()), device_id=device.id, driver_name='dfl',
            name='host1_0000:5e:00.0_region%d' % i,
            region_type=REGION_TYPE) for i in (0, 1)]
        s.add_all(regions)
        s.flush()
        s.add_all([models.AttachHandle(
            uuid=str(uuid.uuid4()), deployable_id=r.id, attach_type='PCI',
            attach_info=PF, in_use=False) for r in regions])
    return regions


def _hold(region, kind):
    """``region``'s PF held as ``kind`` holds it; the holder's name."""
    with session.writer() as s:
        handle = attach_handles.claim_free(s, region.id)
        if kind == 'k8s':
            s.add(models.KubernetesClaimDevice(
                uuid=str(uuid.uuid4()), claim_uid='c1', namespace='ns',
                claim_name='fpga', device_name='d', deployable_id=region.id,
                attach_handle_id=handle.id))
            return 'Kubernetes ResourceClaim c1'
    arq = add_bound_arq(region.id)
    with session.writer() as s:
        s.get(models.AcceleratorRequest, arq.id).state = kind
        s.get(models.AcceleratorRequest, arq.id).attach_handle_id = \
            handle.id
    return 'accelerator request %s' % arq.uuid


@pytest.mark.parametrize('kind', ['Bound', 'BindStarted', 'k8s'])
def test_a_region_whose_sibling_behind_its_pf_is_held_is_refused(
        db, bitstream, kind):
    """Checked under the region's lock as for the region itself: the
    holder of region0's PF holds region1 as much."""
    region0, region1 = _card_without_sriov()
    holder = _hold(region0, kind)

    with pytest.raises(exception.Conflict) as info:
        jobs_db.create_job(region1.id, bitstream.id)

    assert 'region %s is in use by %s, which holds region %s behind the ' \
        'same PCI function' % (region1.name, holder, region0.name) in \
        str(info.value)
    assert jobs_db.list_jobs() == []
    assert jobs_db.create_job(region1.id, bitstream.id,
                              force=True).state == 'queued'


def test_a_flag_with_no_holder_holds_no_sibling(db, bitstream):
    """A handle in use that no ARQ or claim points at (an older
    release's interrupted unbind) holds nothing, as on the region
    itself."""
    region0, region1 = _card_without_sriov()
    with session.writer() as s:
        attach_handles.claim_free(s, region0.id)

    assert jobs_db.create_job(region1.id, bitstream.id).state == 'queued'
    assert jobs_db.create_job(region0.id, bitstream.id).state == 'queued'


def test_other_regions_are_independent(db, region, bitstream):
    other = add_region(name='host1_0000:5e:00.0_region1')
    jobs_db.create_job(region.id, bitstream.id)
    assert jobs_db.create_job(other.id, bitstream.id).state == 'queued'


def test_create_job_with_missing_references(db, region, bitstream):
    with pytest.raises(exception.Invalid, match='no deployables with id 999'):
        jobs_db.create_job(999, bitstream.id)
    with pytest.raises(exception.Invalid, match='no bitstreams with id 999'):
        jobs_db.create_job(region.id, 999)
    assert jobs_db.list_jobs() == []


def test_concurrent_create_job_exactly_one_wins(db, region, bitstream):
    barrier = threading.Barrier(2)
    results = []

    def worker():
        barrier.wait()
        try:
            results.append(jobs_db.create_job(region.id, bitstream.id))
        except exception.RegionBusy as exc:
            results.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    jobs = [r for r in results if isinstance(r, models.ProgrammingJob)]
    refused = [r for r in results if isinstance(r, exception.RegionBusy)]
    assert len(jobs) == 1 and len(refused) == 1
    assert len(jobs_db.list_jobs(deployable_id=region.id)) == 1


def test_full_walk_to_success(db, region, bitstream):
    job = jobs_db.create_job(region.id, bitstream.id)
    job = _walk(job, 'downloading', 'programming', 'verifying')
    assert job.started_at is not None and job.version == 4
    done = jobs_db.succeed(job.uuid, 'f' * 32, 'nlb')
    assert (done.state, done.active_deployable_id) == ('succeeded', None)
    assert done.finished_at is not None
    dep, _device = deployables_db.load_region(region.uuid)
    assert (dep.bitstream_id, dep.function_id, dep.function_name) == \
        (bitstream.uuid, 'f' * 32, 'nlb')


@pytest.mark.parametrize('path,to_state', [
    ((), 'succeeded'),
    (('downloading',), 'succeeded'),
    (('downloading', 'programming'), 'succeeded'),
    (('downloading', 'programming'), 'cancelled'),
    ((), 'verifying'),
])
def test_moves_outside_the_graph_refused(db, region, bitstream, path,
                                         to_state):
    job = _walk(jobs_db.create_job(region.id, bitstream.id), *path)
    with pytest.raises(exception.Invalid, match='cannot go from'):
        jobs_db.transition(job.uuid, (job.state,), to_state)
    assert jobs_db.get(job.uuid).state == job.state


def test_transition_from_wrong_state_refused(db, region, bitstream):
    job = jobs_db.create_job(region.id, bitstream.id)
    with pytest.raises(exception.JobStateConflict,
                       match='is queued; moving to verifying needs one of: '
                             'programming'):
        jobs_db.transition(job.uuid, ('programming',), 'verifying')
    with pytest.raises(exception.JobStateConflict):
        jobs_db.succeed(job.uuid, 'f' * 32)
    assert jobs_db.get(job.uuid).state == 'queued'


def test_terminal_states_are_final(db, region, bitstream):
    job = jobs_db.create_job(region.id, bitstream.id)
    jobs_db.transition(job.uuid, ('queued',), 'failed', error='boom')
    with pytest.raises(exception.JobStateConflict, match='is failed'):
        jobs_db.transition(job.uuid, ('queued',), 'downloading')
    with pytest.raises(exception.JobStateConflict):
        jobs_db.cancel(job.uuid)
    assert jobs_db.get(job.uuid).error == 'boom'


def test_stale_version_refused(db, region, bitstream):
    job = jobs_db.create_job(region.id, bitstream.id)
    jobs_db.heartbeat(job.uuid)
    with pytest.raises(exception.StaleObject):
        jobs_db.transition(job.uuid, ('queued',), 'downloading',
                           expected_version=job.version)
    assert jobs_db.get(job.uuid).state == 'queued'


def test_unknown_transition_field_refused(db, region, bitstream):
    job = jobs_db.create_job(region.id, bitstream.id)
    with pytest.raises(exception.Invalid, match='state'):
        jobs_db.transition(job.uuid, ('queued',), 'downloading',
                           state='succeeded')


def test_cancel_only_before_programming(db, region, bitstream):
    job = _walk(jobs_db.create_job(region.id, bitstream.id), 'downloading')
    cancelled = jobs_db.cancel(job.uuid)
    assert (cancelled.state, cancelled.active_deployable_id) == \
        ('cancelled', None)


def test_heartbeat(db, region, bitstream):
    job = jobs_db.create_job(region.id, bitstream.id, hostname='host1')
    beat = jobs_db.heartbeat(job.uuid, hostname='host1')
    assert beat.version == job.version + 1 and beat.heartbeat_at is not None
    with pytest.raises(exception.JobStateConflict, match='on host host2'):
        jobs_db.heartbeat(job.uuid, hostname='host2')
    jobs_db.cancel(job.uuid)
    with pytest.raises(exception.JobStateConflict, match='cancelled'):
        jobs_db.heartbeat(job.uuid)


def test_find_stale(db, region, bitstream):
    other = add_region(name='host2_r0', hostname='host2')
    job = jobs_db.create_job(region.id, bitstream.id, hostname='host1')
    done = jobs_db.create_job(other.id, bitstream.id, hostname='host2')
    jobs_db.cancel(done.uuid)
    now = models.utcnow()
    assert jobs_db.find_stale(now, heartbeat_timeout=60) == []
    stale = jobs_db.find_stale(now + HOUR, heartbeat_timeout=60)
    assert [j.uuid for j in stale] == [job.uuid]
    assert jobs_db.find_stale(now + HOUR, 60, hostname='host2') == []
    # A job that keeps beating is still stale once its try is too old.
    assert [j.uuid for j in jobs_db.find_stale(
        now + HOUR, heartbeat_timeout=10 ** 6, job_timeout=60)] == [job.uuid]


def test_reap_retries_then_fails_never_succeeds(db, region, bitstream):
    job = jobs_db.create_job(region.id, bitstream.id, max_attempts=2)
    job = _walk(job, 'downloading', 'programming', 'verifying')
    retried = jobs_db.reap(job.uuid, 'agent died')
    assert (retried.state, retried.attempts) == ('queued', 1)
    assert 'retrying (try 2 of 2)' in retried.error
    assert retried.active_deployable_id == region.id
    job = _walk(retried, 'downloading', 'programming')
    failed = jobs_db.reap(job.uuid, 'agent died again')
    assert (failed.state, failed.attempts) == ('failed', 2)
    assert failed.active_deployable_id is None
    assert 'no tries left (2 of 2 used)' in failed.error


def _tries(job):
    return [(t.number, t.outcome, t.error)
            for t in jobs_db.tries_of([job.id])[job.id]]


def test_each_try_is_kept_and_success_clears_the_error(db, region,
                                                       bitstream):
    """Issue 18.5 / 17.5: a job that succeeded on a retry shows 2 tries
    begun, the abandoned one with its reason, and no error of its own."""
    job = jobs_db.create_job(region.id, bitstream.id, hostname='host1',
                             max_attempts=2)
    assert (job.attempts, _tries(job)) == (0, [])
    job = jobs_db.transition(job.uuid, 'queued', 'downloading',
                             try_number=1)
    assert (job.attempts, _tries(job)) == (1, [(1, 'running', None)])
    job = _walk(job, 'programming')
    requeued = jobs_db.reap(job.uuid, 'agent died')
    assert requeued.error == ('try 1 abandoned: agent died; retrying (try 2 '
                              'of 2)')
    assert _tries(job) == [(1, 'abandoned', 'agent died')]
    job = jobs_db.transition(job.uuid, 'queued', 'downloading',
                             try_number=2)
    job = _walk(job, 'programming', 'verifying')
    done = jobs_db.succeed(job.uuid, 'f' * 32, try_number=2)
    assert (done.state, done.attempts, done.error) == ('succeeded', 2, None)
    assert _tries(done) == [(1, 'abandoned', 'agent died'),
                            (2, 'succeeded', None)]
    [first, second] = jobs_db.tries_of([done.id])[done.id]
    assert first.hostname == second.hostname == 'host1'
    assert first.started_at <= first.ended_at <= second.started_at
    assert second.ended_at is not None


def test_a_stale_tries_reports_and_beats_are_refused(db, region, bitstream):
    """The agent of try 1 was slow, not dead: reaped, the job was queued
    and try 2 began. Try 1 must not go on, nor keep try 2 alive."""
    job = jobs_db.create_job(region.id, bitstream.id, hostname='host1',
                             max_attempts=3)
    jobs_db.transition(job.uuid, 'queued', 'downloading', try_number=1)
    jobs_db.reap(job.uuid, 'silent')
    # Try 1 reports again before try 2 began: refused, not a new start.
    with pytest.raises(exception.JobStateConflict, match='try 1'):
        jobs_db.transition(job.uuid, 'queued', 'downloading', try_number=1)
    jobs_db.transition(job.uuid, 'queued', 'downloading', try_number=2)
    with pytest.raises(exception.JobStateConflict, match='try 1'):
        jobs_db.transition(job.uuid, 'downloading', 'programming',
                           try_number=1)
    with pytest.raises(exception.JobStateConflict, match='try 1'):
        jobs_db.heartbeat(job.uuid, 'host1', try_number=1)
    assert jobs_db.heartbeat(job.uuid, 'host1', try_number=2).state == \
        'downloading'
    current = jobs_db.transition(job.uuid, 'downloading', 'programming',
                                 try_number=2)
    assert (current.state, current.attempts) == ('programming', 2)


def test_a_job_the_agent_cannot_start_fails_in_its_first_try(
        db, region, bitstream):
    job = jobs_db.create_job(region.id, bitstream.id)
    failed = jobs_db.transition(job.uuid, 'queued', 'failed', try_number=1,
                                error='no such driver')
    assert (failed.attempts, _tries(failed)) == (
        1, [(1, 'failed', 'no such driver')])


def test_cancelling_a_downloading_job_ends_its_try(db, region, bitstream):
    job = jobs_db.create_job(region.id, bitstream.id)
    jobs_db.transition(job.uuid, 'queued', 'downloading', try_number=1)
    jobs_db.cancel(job.uuid)
    assert _tries(job) == [(1, 'cancelled', 'cancelled on request')]


def test_reap_single_attempt_fails(db, region, bitstream):
    job = jobs_db.create_job(region.id, bitstream.id, max_attempts=1)
    job = _walk(job, 'downloading')
    assert jobs_db.reap(job.uuid, 'gone').state == 'failed'
    with pytest.raises(exception.JobStateConflict):
        jobs_db.reap(job.uuid, 'gone')


def test_reaping_a_queued_job_counts_no_try_until_job_timeout(
        db, region, bitstream):
    """Its cast was lost or its agent is down: no try began, so it stays
    queued (to be sent again) until job_timeout after it was queued."""
    job = jobs_db.create_job(region.id, bitstream.id, max_attempts=1)
    again = jobs_db.reap(job.uuid, 'silent', job_timeout=600)
    assert (again.state, again.attempts, again.error) == ('queued', 0, None)
    assert again.heartbeat_at is not None
    assert jobs_db.tries_of([job.id]) == {job.id: []}
    late = models.utcnow() + datetime.timedelta(seconds=601)
    failed = jobs_db.reap(job.uuid, 'silent', job_timeout=600, now=late)
    assert (failed.state, failed.attempts) == ('failed', 0)
    assert failed.error == 'no agent on %s took the job within 600 s' % (
        failed.hostname)


def test_reap_loses_to_a_heartbeat(db, region, bitstream):
    job = jobs_db.create_job(region.id, bitstream.id)
    seen = jobs_db.find_stale(models.utcnow() + HOUR, 60)[0]
    jobs_db.heartbeat(job.uuid)
    with pytest.raises(exception.StaleObject):
        jobs_db.reap(job.uuid, 'silent', expected_version=seen.version)
    assert jobs_db.get(job.uuid).state == 'queued'


def test_list_jobs_filters(db, region, bitstream):
    other = add_region(name='host2_r0', hostname='host2')
    a = jobs_db.create_job(region.id, bitstream.id, hostname='host1',
                           project_id='p1')
    b = jobs_db.create_job(other.id, bitstream.id, hostname='host2')
    jobs_db.cancel(b.uuid)

    def uuids(**kw):
        return [j.uuid for j in jobs_db.list_jobs(**kw)]

    assert uuids() == [a.uuid, b.uuid]
    assert uuids(deployable_id=other.id) == [b.uuid]
    assert uuids(bitstream_id=bitstream.id) == [a.uuid, b.uuid]
    assert uuids(states=states.JOB_ACTIVE) == [a.uuid]
    assert uuids(hostname='host2') == [b.uuid]
    assert uuids(project_id='p1') == [a.uuid]


def test_get_missing_job(db):
    with pytest.raises(exception.ProgrammingJobNotFound, match='nope'):
        jobs_db.get('nope')


def test_single_from_state_may_be_a_string(db, region, bitstream):
    job = jobs_db.create_job(region.id, bitstream.id)
    assert jobs_db.transition(job.uuid, 'queued',
                              'downloading').state == 'downloading'
