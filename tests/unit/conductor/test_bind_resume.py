"""A bind whose region must be programmed first, at the RPC boundary: the
bind returns with the ARQ BindStarted and the job queued (no RPC worker
waits for the card); the agent's progress reports, over RPC to the
conductor, end the job and resume the bind; a conductor killed between
the job's end and the resume leaves the bind to the reaper; two resumes
of one ARQ have one winner.

The conductor is the real ConductorManager over inproc:// RPC; the agent
is the test (it answers the job's cast with the calls a real agent
makes, rpc/conductor_client job_progress); Nova is the [arq]notifier.
"""
import datetime

import pytest
import sqlalchemy as sa

from cyborg_lite.common import context
from cyborg_lite.common import exception
from cyborg_lite.conductor import bind
from cyborg_lite.conductor import manager
from cyborg_lite.conductor import notifier as notifier_mod
from cyborg_lite.conductor import programming
from cyborg_lite.db import arq_binds
from cyborg_lite.db import arq_releases
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import models
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.db.sql import session
from cyborg_lite.rpc import conductor_client as rpcapi
from cyborg_lite.rpc import transport as rpc
from tests.unit.bitstreams.conftest import FUNCTION_ID
from tests.unit.bitstreams.conftest import REGION_TYPE
from tests.unit.bitstreams.conftest import add_bitstream
from tests.unit.conductor import bind_helpers as h
from tests.unit.conductor import programming_flow_helpers as ph

NOTIFIER = 'tests.unit.conductor.bind_helpers:RecordingNotifier'
STEPS = ('downloading', 'programming', 'verifying')


@pytest.fixture
def nova(conf):
    """What Nova is told: the [arq]notifier of the conductor's process."""
    conf.set_override('notifier', NOTIFIER, group='arq')
    notifier_mod._loaded.pop(NOTIFIER, None)
    yield notifier_mod.get_default()
    notifier_mod._loaded.pop(NOTIFIER, None)


@pytest.fixture
def conductor(conf, nova):
    """(ConductorAPI, the agents' recorded casts) of a real conductor."""
    conf.set_override('transport_url', 'inproc://')
    flow, agents = ph.make_flow()
    server = rpc.get_server(rpc.CONDUCTOR_TOPIC, 'cond-1', [
        manager.ConductorManager('cond-1', programming=flow)])
    server.start()
    yield rpcapi.ConductorAPI(), agents
    server.stop()
    server.wait()
    rpc.cleanup()


def _needs_programming():
    """A region holding another function, a bitstream of the wanted one,
    and an ARQ whose profile asks for it."""
    region = h.make_region(function_id='cd' * 16)
    with session.writer() as s:
        s.execute(sa.update(models.Deployable)
                  .where(models.Deployable.id == region['deployable_id'])
                  .values(region_type=REGION_TYPE))
    add_bitstream(visibility='public')
    arq_uuid = h.make_arq(profile_id=h.make_profile(
        [{'resources:FPGA': '1', 'accel:function_id': FUNCTION_ID}]))
    return region, arq_uuid


def _bind_call(api, arq_uuid, region):
    """bind_arqs as a call (a cast's handler, waited for): returns once the
    conductor's handler did."""
    ctxt = context.get_admin_context()
    return api.client.prepare(version='1.1').call(
        ctxt, 'bind_arqs', bindings={arq_uuid: h.binding(region)})


def _bound_to_wait_for_a_job_that_ended(arq_uuid, region):
    """The bind of ``arq_uuid`` started its programming job, which ended
    (recorded, its bind not resumed yet); the job."""
    flow, agents = ph.make_flow()
    bind.bind_arqs(None, {arq_uuid: h.binding(region)},
                   programmer=programming.BindProgrammer(flow))
    [(_host, job)] = agents.sent
    for step in STEPS:
        programming.record_progress(job['uuid'], step)
    programming.record_progress(job['uuid'], 'succeeded',
                                function_id=FUNCTION_ID)
    return job


def _run_job(api, job, outcome='succeeded', error=None):
    """The agent's reports of the job, over RPC to the conductor."""
    ctxt = context.get_admin_context()
    for step in STEPS:
        api.job_progress(ctxt, job['uuid'], step, try_number=job['try'])
    return api.job_progress(ctxt, job['uuid'], outcome, error=error,
                            function_id=FUNCTION_ID, try_number=job['try'])


def test_the_bind_returns_while_the_job_runs_and_its_end_binds(
        db, conductor, nova):
    api, agents = conductor
    region, arq_uuid = _needs_programming()

    assert _bind_call(api, arq_uuid, region) == {arq_uuid: 'BindStarted'}
    [(hostname, job)] = agents.sent
    assert hostname == 'host1'
    [row] = jobs_db.list_jobs()
    assert (row.uuid, row.state) == (job['uuid'], 'queued')
    assert row.arq_id == h.get_arq(arq_uuid).id
    assert h.get_arq(arq_uuid).state == 'BindStarted'
    assert nova.events == []

    assert _run_job(api, job)['state'] == 'succeeded'
    arq = h.get_arq(arq_uuid)
    assert (arq.state, arq.error) == ('Bound', None)
    assert arq.attach_handle_id == h.handles_of(region)[0].id
    assert [(e['arq_uuid'], e['status']) for e in nova.events] == [
        (arq_uuid, 'completed')]


def test_a_failed_job_fails_its_bind_with_the_job_error(
        db, conductor, nova):
    api, agents = conductor
    region, arq_uuid = _needs_programming()
    _bind_call(api, arq_uuid, region)
    [(_host, job)] = agents.sent

    _run_job(api, job, 'failed', error='fpga write error')
    arq = h.get_arq(arq_uuid)
    assert arq.state == 'BindFailed'
    assert 'fpga write error' in arq.error and job['uuid'] in arq.error
    assert not h.handles_of(region)[0].in_use
    assert [(e['arq_uuid'], e['status']) for e in nova.events] == [
        (arq_uuid, 'failed')]


@pytest.mark.parametrize('outcome', ['succeeded', 'failed'])
def test_a_conductor_killed_after_the_job_ended_leaves_it_to_the_reaper(
        db, nova, outcome):
    """The job's end is committed (record_progress) and the conductor dies
    before it resumes the bind: the bind reaper resumes it at once, long
    before [arq]bind_timeout."""
    region, arq_uuid = _needs_programming()
    flow, agents = ph.make_flow()
    programmer = programming.BindProgrammer(flow)
    assert bind.bind_arqs(None, {arq_uuid: h.binding(region)},
                          programmer=programmer) == {arq_uuid: 'BindStarted'}
    [(_host, job)] = agents.sent
    for step in STEPS:
        programming.record_progress(job['uuid'], step)
    programming.record_progress(job['uuid'], outcome, error='fpga died',
                                function_id=FUNCTION_ID)
    assert h.get_arq(arq_uuid).state == 'BindStarted'

    failed = bind.reap_stale_binds(3600, notifier=nova)
    arq = h.get_arq(arq_uuid)
    if outcome == 'succeeded':
        assert (failed, arq.state) == ([], 'Bound')
    else:
        assert (failed, arq.state) == ([arq_uuid], 'BindFailed')
        assert 'fpga died' in arq.error
    assert [e['arq_uuid'] for e in nova.events] == [arq_uuid]
    # Resumed once: the reaper finds nothing more to do.
    assert bind.reap_stale_binds(3600, notifier=nova) == []
    assert len(nova.events) == 1


def test_a_job_of_an_earlier_bind_does_not_end_the_next_one(db, nova):
    """The ARQ's first bind waited for a job that failed; its next bind
    (taken after that job was created) is not resumed by it."""
    region, arq_uuid = _needs_programming()
    flow, agents = ph.make_flow()
    programmer = programming.BindProgrammer(flow)
    bind.bind_arqs(None, {arq_uuid: h.binding(region)},
                   programmer=programmer)
    [(_host, job)] = agents.sent
    programming.record_progress(job['uuid'], 'failed', error='first')
    bind.resume(job['uuid'], notifier=nova)
    assert h.get_arq(arq_uuid).state == 'BindFailed'
    with session.writer() as s:
        # The next bind was taken after the first job (database clock).
        s.execute(sa.update(models.ProgrammingJob).values(
            created_at=datetime.datetime(2000, 1, 1)))
    arq_releases.unbind_all(arqs_db.ALL, [arq_uuid])
    [started], refused = arq_binds.begin_binds(
        {arq_uuid: h.binding(region)}, 'cond-2')
    assert not refused
    assert arq_binds.bind_waiting_on(job['uuid']) is None
    assert arq_binds.ended_jobs_of_binds() == []
    assert bind.resume(job['uuid'], notifier=nova) is None
    assert h.get_arq(arq_uuid).state == 'BindStarted'


def test_of_two_resumes_of_one_arq_one_wins(db, conf, nova):
    """Two conductors took the job's end (an RPC retry; a previous
    release's conductor polling its job): both read the bind at one
    version. On a Kubernetes host the first leaves the ARQ BindStarted,
    holding its handle, until its publish; the second is superseded,
    claims nothing, and the ARQ ends Bound once."""
    conf.set_override('hosts', ['host1'], group='kubernetes')
    region, arq_uuid = _needs_programming()
    with session.writer() as s:
        dep = s.get(models.Deployable, region['deployable_id'])
        s.add(models.AttachHandle(
            uuid='second-handle', deployable_id=dep.id, attach_type='PCI',
            attach_info='{"domain": "0000", "bus": "ff", "device": "00", '
                        '"function": "7"}'))
    job = _bound_to_wait_for_a_job_that_ended(arq_uuid, region)
    first, _ = arq_binds.bind_waiting_on(job['uuid'])
    second, _ = arq_binds.bind_waiting_on(job['uuid'])
    assert first.version == second.version

    claimed = arq_binds.finish_bind(first, region['deployable_id'],
                                    region['deployable_uuid'])
    assert claimed.version == first.version + 1      # held for its publish
    with pytest.raises(exception.ARQStateConflict):
        arq_binds.finish_bind(second, region['deployable_id'],
                              region['deployable_uuid'])
    arq_binds.mark_bound(first, claimed)
    assert h.get_arq(arq_uuid).state == 'Bound'
    assert [x.in_use for x in h.handles_of(region)].count(True) == 1


def test_a_bind_held_for_its_publish_waits_for_no_job(db, conf, nova):
    """A resume that reads the bind after another resume's claim holds it
    (BindStarted, its handle taken, its publish under way) finds no bind
    waiting for the job: it must not bind it again and fail it for the
    handle the first one holds (the periodic look for ended jobs and the
    agent's report of the job's end both resume it)."""
    conf.set_override('hosts', ['host1'], group='kubernetes')
    region, arq_uuid = _needs_programming()
    job = _bound_to_wait_for_a_job_that_ended(arq_uuid, region)
    first, _ = arq_binds.bind_waiting_on(job['uuid'])
    claimed = arq_binds.finish_bind(first, region['deployable_id'],
                                    region['deployable_uuid'])
    assert h.get_arq(arq_uuid).state == 'BindStarted'   # held
    assert job['uuid'] not in arq_binds.ended_jobs_of_binds()
    assert arq_binds.bind_waiting_on(job['uuid']) is None
    assert bind.resume(job['uuid'], notifier=nova) is None

    arq_binds.mark_bound(first, claimed)
    assert h.get_arq(arq_uuid).state == 'Bound'
    assert [x.in_use for x in h.handles_of(region)].count(True) == 1


def test_a_superseded_resume_tells_nova_nothing(db, nova, monkeypatch):
    """Two resumes read the bind at one version (the agent's report of the
    job's end and the periodic look for ended jobs): the first binds it
    and tells Nova; the second, superseded, reports the state it finds
    and leaves Nova's event to the first (one event per bind)."""
    region, arq_uuid = _needs_programming()
    job = _bound_to_wait_for_a_job_that_ended(arq_uuid, region)
    read_before = arq_binds.bind_waiting_on(job['uuid'])

    assert bind.resume(job['uuid'], notifier=nova) == (arq_uuid, 'Bound')
    monkeypatch.setattr(arq_binds, 'bind_waiting_on',
                        lambda _job_uuid: read_before)
    assert bind.resume(job['uuid'], notifier=nova) == (arq_uuid, 'Bound')
    assert [(e['arq_uuid'], e['status']) for e in nova.events] == [
        (arq_uuid, 'completed')]
