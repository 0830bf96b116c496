"""ProgrammingFlow: the conductor's RPC-facing job workflow, on both
database backends; the agents are a recording stand-in for the cast."""
import datetime

import pytest

from cyborg_lite.common import context
from cyborg_lite.common import exception
from cyborg_lite.db import deployables as deployables_db
from cyborg_lite.db import models
from cyborg_lite.db import programming_jobs as jobs_db
from tests.unit.conductor import programming_flow_helpers as h

NEW = 'ab' * 16


def _admin():
    return context.get_admin_context()


@pytest.fixture
def flow(db):
    return h.make_flow()


def test_program_returns_the_job_and_sends_it_to_the_host(flow):
    flow, agents = flow
    region, bitstream = h.add_region(), h.add_bitstream()
    job = flow.program(_admin(), bitstream.uuid, region.uuid)
    assert set(job) == {
        'uuid', 'state', 'deployable_uuid', 'bitstream_uuid', 'hostname',
        'attempts', 'max_attempts', 'error', 'created_at', 'updated_at',
        'started_at', 'finished_at', 'force'}
    assert (job['state'], job['hostname'], job['deployable_uuid'],
            job['bitstream_uuid'], job['attempts'], job['force']) == (
        'queued', h.HOST, region.uuid, bitstream.uuid, 0, False)
    datetime.datetime.fromisoformat(job['created_at'])
    [(host, message)] = agents.sent
    assert host == h.HOST
    assert (message['uuid'], message['driver'], message['identity'],
            message['region_name']) == (job['uuid'], 'fake', h.CARD,
                                        'region0')


def test_region_not_named_by_a_report_is_refused(flow):
    flow, agents = flow
    region = h.add_region(name='hand-made')
    with pytest.raises(exception.Invalid, match='cannot be programmed'):
        flow.program(_admin(), h.add_bitstream().uuid, region.uuid)
    assert jobs_db.list_jobs() == [] and agents.sent == []


def test_busy_region_refused_and_nothing_sent(flow):
    flow, agents = flow
    region, bitstream = h.add_region(), h.add_bitstream()
    first = flow.program(_admin(), bitstream.uuid, region.uuid)
    with pytest.raises(exception.RegionBusy, match=first['uuid']):
        flow.program(_admin(), bitstream.uuid, region.uuid)
    assert agents.uuids() == [first['uuid']]


def test_success_updates_region_and_runs_after_success(db):
    synced = []
    flow, _agents = h.make_flow(after_success=synced.append)
    region = h.add_region()
    job = flow.program(_admin(), h.add_bitstream().uuid, region.uuid)
    h.walk(flow, job['uuid'])
    assert synced == []
    done = flow.progress(job['uuid'], 'succeeded', function_id=NEW.upper())
    assert (done['state'], done['error']) == ('succeeded', None)
    assert done['finished_at'] is not None
    assert synced == [h.HOST]
    dep, _dev = deployables_db.load_region(region.uuid)
    assert dep.function_id == NEW


def test_failure_keeps_region_and_skips_after_success(db):
    synced = []
    flow, _agents = h.make_flow(after_success=synced.append)
    region = h.add_region()
    job = flow.program(_admin(), h.add_bitstream().uuid, region.uuid)
    h.walk(flow, job['uuid'], ('downloading', 'programming'))
    done = flow.progress(job['uuid'], 'failed', error='fpga write error')
    assert (done['state'], done['error']) == ('failed', 'fpga write error')
    assert synced == []
    assert deployables_db.load_region(region.uuid)[0].function_id == \
        h.OLD_FUNCTION


def test_after_success_failure_does_not_fail_the_job(db):
    def broken_sync(hostname):
        raise RuntimeError('placement down')
    flow, _agents = h.make_flow(after_success=broken_sync)
    job = flow.program(_admin(), h.add_bitstream().uuid,
                       h.add_region().uuid)
    h.walk(flow, job['uuid'])
    assert flow.progress(job['uuid'], 'succeeded',
                         function_id=NEW)['state'] == 'succeeded'


def test_cancel_only_before_bytes_may_reach_the_region(flow):
    flow, _agents = flow
    bitstream = h.add_bitstream()
    queued = flow.program(_admin(), bitstream.uuid, h.add_region().uuid)
    assert flow.cancel(queued['uuid'])['state'] == 'cancelled'
    with pytest.raises(exception.Conflict, match='already ended'):
        flow.cancel(queued['uuid'])
    # The agent's next report learns it was cancelled.
    with pytest.raises(exception.JobStateConflict):
        flow.progress(queued['uuid'], 'downloading')

    busy = flow.program(_admin(), bitstream.uuid,
                        h.add_region('region1').uuid)
    h.walk(flow, busy['uuid'], ('downloading', 'programming'))
    with pytest.raises(exception.Conflict, match='torn off half way'):
        flow.cancel(busy['uuid'])
    assert jobs_db.get(busy['uuid']).state == 'programming'


def test_heartbeat_from_another_host_refused(flow):
    flow, _agents = flow
    job = flow.program(_admin(), h.add_bitstream().uuid,
                       h.add_region().uuid)
    assert flow.heartbeat(job['uuid'], h.HOST)['alive']
    with pytest.raises(exception.JobStateConflict, match='host1'):
        flow.heartbeat(job['uuid'], 'intruder')


def test_agent_started_requeues_started_jobs_and_resends_queued(flow):
    flow, agents = flow
    bitstream = h.add_bitstream()
    started = flow.program(_admin(), bitstream.uuid, h.add_region().uuid)
    waiting = flow.program(_admin(), bitstream.uuid,
                           h.add_region('region1').uuid)
    h.walk(flow, started['uuid'], ('downloading', 'programming'))
    agents.sent.clear()

    result = flow.agent_started(h.HOST)

    assert result['abandoned'] == [started['uuid']]
    assert sorted(result['dispatched']) == sorted(agents.uuids()) == \
        sorted([started['uuid'], waiting['uuid']])
    assert (jobs_db.get(started['uuid']).state,
            jobs_db.get(started['uuid']).attempts) == ('queued', 1)
    # A job that never started lost no try.
    assert jobs_db.get(waiting['uuid']).attempts == 0


def test_agent_started_fails_a_job_without_tries_left(flow, conf):
    conf.set_override('max_attempts', 1, group='programming')
    flow, agents = flow
    job = flow.program(_admin(), h.add_bitstream().uuid,
                       h.add_region().uuid)
    h.walk(flow, job['uuid'])
    agents.sent.clear()
    assert flow.agent_started(h.HOST)['dispatched'] == []
    failed = jobs_db.get(job['uuid'])
    assert failed.state == 'failed' and 'no tries left' in failed.error
    assert agents.sent == []


def test_reaper_requeues_and_resends_then_fails(flow):
    flow, agents = flow
    job = flow.program(_admin(), h.add_bitstream().uuid,
                       h.add_region().uuid)
    flow.progress(job['uuid'], 'downloading')
    assert flow.reap_and_redispatch() == []
    later = models.utcnow() + datetime.timedelta(hours=1)

    [reaped] = flow.reap_and_redispatch(now=later)
    assert (reaped.state, reaped.attempts) == ('queued', 1)
    assert agents.uuids() == [job['uuid'], job['uuid']]

    [reaped] = flow.reap_and_redispatch(
        now=later + datetime.timedelta(hours=1))
    assert reaped.state == 'failed'
    assert agents.uuids() == [job['uuid'], job['uuid']]


def test_dispatch_of_a_job_no_longer_queued_sends_nothing(flow):
    flow, agents = flow
    job = flow.program(_admin(), h.add_bitstream().uuid,
                       h.add_region().uuid)
    flow.cancel(job['uuid'])
    assert flow.dispatch(job['uuid']) is False
    assert agents.uuids() == [job['uuid']]


def test_sent_job_names_its_try_and_a_stale_try_is_stopped(flow):
    """A reaped-and-requeued job whose slow agent is still alive: try 1's
    reports are refused once try 2 began, even the one that repeats the
    state try 2 is in (which a retried RPC report would be)."""
    flow, agents = flow
    job = flow.program(_admin(), h.add_bitstream().uuid,
                       h.add_region().uuid)
    assert agents.sent[-1][1]['try'] == 1
    flow.progress(job['uuid'], 'downloading', try_number=1)
    later = models.utcnow() + datetime.timedelta(hours=1)
    [reaped] = flow.reap_and_redispatch(now=later)
    assert (reaped.state, reaped.attempts) == ('queued', 1)
    assert agents.sent[-1][1]['try'] == 2
    flow.progress(job['uuid'], 'downloading', try_number=2)
    with pytest.raises(exception.JobStateConflict, match='try 1'):
        flow.progress(job['uuid'], 'downloading', try_number=1)
    with pytest.raises(exception.JobStateConflict, match='try 1'):
        flow.progress(job['uuid'], 'programming', try_number=1)
    with pytest.raises(exception.JobStateConflict, match='try 1'):
        flow.heartbeat(job['uuid'], h.HOST, try_number=1)
    # Try 2's own repeated report is still harmless.
    assert flow.progress(job['uuid'], 'downloading',
                         try_number=2)['state'] == 'downloading'
    assert jobs_db.get(job['uuid']).state == 'downloading'
