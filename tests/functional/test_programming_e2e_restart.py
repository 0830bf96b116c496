"""Programming jobs across agent deaths: a job is failed or retried, never
left running and never reported succeeded unless the hardware has it; the
region's recorded function follows what the hardware holds."""
from cyborg_lite.common import context
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.rpc import agent_client as agent_rpcapi
from tests import waiting
from tests.functional import programming_env as pe
from tests.functional.programming_env import make_env  # noqa: F401


def _start_and_kill_mid_write(env):
    """A job whose agent dies while the driver writes the region."""
    job = env.program(env.add_bitstream().uuid)
    env.wait_job(job['uuid'], states=('programming',))
    env.kill_agent()
    return job['uuid']


def _region_matches_hardware(env):
    agent_rpcapi.AgentAPI().request_report(context.get_admin_context(),
                                           pe.HOST)
    return waiting.until(
        lambda: env.region().function_id == env.hardware())


def test_restart_requeues_then_new_agent_succeeds(conf, make_env):
    conf.set_override('max_attempts', 2, group='programming')
    env = make_env(program_delay=1.0)
    job_uuid = _start_and_kill_mid_write(env)

    env.start_agent()  # agent_started: requeue, send to the new agent

    done = env.wait_job(job_uuid)
    # Issue 18.5: two tries begun, the first kept with why it ended; the
    # job's own error is cleared by the success.
    assert (done.state, done.attempts, done.error) == ('succeeded', 2, None)
    first, second = jobs_db.tries_of([done.id])[done.id]
    assert (first.number, first.hostname, first.outcome) == (
        1, pe.HOST, 'abandoned')
    assert 'agent on %s restarted' % pe.HOST in first.error
    assert first.ended_at is not None
    assert (second.number, second.outcome, second.error) == (
        2, 'succeeded', None)
    assert env.hardware() == pe.NEW_FUNCTION
    assert env.region().function_id == pe.NEW_FUNCTION
    assert env.orphans_done()
    # The dead try's late reports were refused: still the one success.
    assert jobs_db.get(job_uuid).state == 'succeeded'


def test_restart_without_tries_left_fails_and_db_follows_hardware(
        conf, make_env):
    conf.set_override('max_attempts', 1, group='programming')
    env = make_env(program_delay=1.0)
    job_uuid = _start_and_kill_mid_write(env)

    env.start_agent()

    done = env.wait_job(job_uuid)
    assert done.state == 'failed'
    assert 'restarted during the job; no tries left' in done.error
    # NOTE: the dead agent's write still lands (as a flashing tool that
    # outlived its agent would); the job stays failed, and the next scan
    # records what the region really holds.
    assert env.orphans_done()
    assert jobs_db.get(job_uuid).state == 'failed'
    assert _region_matches_hardware(env)


def _quick_reaper(conf):
    conf.set_override('heartbeat_timeout', 2, group='programming')
    conf.set_override('heartbeat_interval', 1, group='programming')
    conf.set_override('reap_interval', 1, group='programming')


def test_silent_agent_reaped_after_timeout(conf, make_env):
    _quick_reaper(conf)
    conf.set_override('max_attempts', 1, group='programming')
    env = make_env(program_delay=1.0)
    job_uuid = _start_and_kill_mid_write(env)

    # No agent comes back: the conductor's periodic reaper ends the job.
    done = env.wait_job(job_uuid)
    assert done.state == 'failed'
    assert 'no progress from the agent within 2 s' in done.error
    assert env.orphans_done()
    assert jobs_db.get(job_uuid).state == 'failed'


def test_reaped_job_is_retried_when_an_agent_is_back(conf, make_env):
    _quick_reaper(conf)
    conf.set_override('max_attempts', 2, group='programming')
    env = make_env(program_delay=1.0)
    job_uuid = _start_and_kill_mid_write(env)
    requeued = env.wait_job(job_uuid, states=('queued',))
    assert requeued.attempts == 1

    env.start_agent()

    done = env.wait_job(job_uuid)
    assert (done.state, done.attempts) == ('succeeded', 2)
    assert [(t.number, t.outcome) for t in jobs_db.tries_of([done.id])[
        done.id]] == [(1, 'abandoned'), (2, 'succeeded')]
    assert env.hardware() == pe.NEW_FUNCTION
    assert env.region().function_id == pe.NEW_FUNCTION


def test_live_job_with_heartbeats_is_not_reaped(conf, make_env):
    _quick_reaper(conf)
    # The write outlasts heartbeat_timeout; heartbeats keep the job alive.
    env = make_env(program_delay=3.5)
    job = env.program(env.add_bitstream().uuid)
    done = env.wait_job(job['uuid'])
    assert (done.state, done.attempts, done.error) == ('succeeded', 1, None)
