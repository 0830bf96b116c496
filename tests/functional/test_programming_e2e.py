"""Programming jobs end to end over inproc://: ConductorAPI -> conductor ->
agent -> FAKE driver (its simulated sysfs tree is the hardware)."""
import threading

import pytest

from cyborg_lite.common import context
from cyborg_lite.common import exception
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.placement import client as client_mod
from tests import waiting
from tests.functional import programming_env as pe
from tests.functional.programming_env import make_env  # noqa: F401
from tests.functional.placement.conftest import configure_placement
from tests.unit.bitstreams import builders
from tests.unit.conductor import bind_helpers


@pytest.fixture
def env(make_env):
    return make_env()


def test_program_succeeds_and_placement_trait_follows(
        conf, make_env, placement):  # noqa: F811
    configure_placement(conf, placement.endpoint)
    env = make_env()
    region = env.region()
    old_trait = 'CUSTOM_FUNCTION_ID_' + pe.OLD_FUNCTION.upper()
    assert old_trait in waiting.until(lambda: _traits(env, region.rp_uuid))
    bitstream = env.add_bitstream()
    job = env.program(bitstream.uuid)
    assert (job['state'], job['hostname'], job['deployable_uuid'],
            job['bitstream_uuid']) == ('queued', pe.HOST, region.uuid,
                                       bitstream.uuid)
    assert env.wait_job(job['uuid']).state == 'succeeded'
    assert env.hardware() == pe.NEW_FUNCTION
    assert env.region().function_id == pe.NEW_FUNCTION
    assert env.region().bitstream_id == bitstream.uuid
    # The sync runs right after the job is recorded as succeeded.
    new_trait = 'CUSTOM_FUNCTION_ID_' + pe.NEW_FUNCTION.upper()
    assert waiting.until(lambda: new_trait in _traits(env, region.rp_uuid))
    # The other region was not touched. Both are reached through the
    # card's PF, so the card's provider offers both functions.
    assert env.hardware('region1') == pe.OLD_FUNCTION
    assert env.region('region1').rp_uuid == region.rp_uuid
    assert old_trait in _traits(env, region.rp_uuid)


def _traits(env, rp_uuid):
    """The provider's traits in Placement; empty while it does not exist."""
    client = client_mod.PlacementClient(client_mod.adapter_from_conf(
        env.conf))
    try:
        return set(client.get('/resource_providers/%s/traits'
                              % rp_uuid)['traits'])
    except exception.PlacementError:
        return set()


def test_injected_failure_fails_job_and_keeps_function(make_env):
    env = make_env(fail_program=True)
    job = env.program(env.add_bitstream().uuid)
    done = env.wait_job(job['uuid'])
    assert done.state == 'failed'
    assert 'simulated failure' in done.error
    assert env.hardware() == pe.OLD_FUNCTION
    assert env.region().function_id == pe.OLD_FUNCTION


def test_wrong_region_type_refused_before_any_job(env):
    bitstream = env.add_bitstream(
        image=pe.new_image(interface='00000000-0000-0000-0000-000000000001'),
        region_type='0' * 31 + '1')
    with pytest.raises(exception.Invalid, match='region type mismatch'):
        env.program(bitstream.uuid)
    assert jobs_db.list_jobs() == []
    assert env.hardware() == pe.OLD_FUNCTION


def _truncated():
    image = pe.new_image()
    return image[:len(pe.new_image()) - len(builders.PAYLOAD) - 40]


@pytest.mark.parametrize('case,match', [
    ('bad checksum', 'sha256 mismatch'),
    ('truncated file', 'gbs'),
    ('header function', 'contradicts'),
    ('header region type', 'contradicts'),
])
def test_bad_image_refused_before_the_driver(env, case, match):
    if case == 'bad checksum':
        image = pe.new_image()
        # Same length, one byte flipped in the stored copy.
        corrupt = image[:-1] + bytes([image[-1] ^ 0xff])
        bitstream = env.add_bitstream(image, stored=corrupt)
    elif case == 'truncated file':
        bitstream = env.add_bitstream(_truncated())
    elif case == 'header function':
        bitstream = env.add_bitstream(function_id='ab' * 16)
    else:
        other = '11111111-2222-3333-4444-555555555555'
        bitstream = env.add_bitstream(pe.new_image(interface=other))
    done = env.wait_job(env.program(bitstream.uuid)['uuid'])
    assert done.state == 'failed'
    assert match in done.error.lower() if match == 'gbs' else \
        match in done.error
    # Refused before the driver: the simulated tree still has the old AFU.
    assert env.hardware() == pe.OLD_FUNCTION
    assert env.region().function_id == pe.OLD_FUNCTION


def test_busy_region_refused_and_concurrent_calls_run_one_job(env):
    env.agent.stop()  # jobs stay queued: nothing takes them
    bitstream = env.add_bitstream()
    results = []
    barrier = threading.Barrier(2)

    def call():
        barrier.wait()
        try:
            results.append(env.program(bitstream.uuid))
        except exception.RegionBusy as exc:
            results.append(exc)
    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    jobs = [r for r in results if isinstance(r, dict)]
    busy = [r for r in results if isinstance(r, exception.RegionBusy)]
    assert len(jobs) == 1 and len(busy) == 1
    assert busy[0].code == 409 and jobs[0]['uuid'] in str(busy[0])
    assert [j.uuid for j in jobs_db.list_jobs()] == [jobs[0]['uuid']]

    # The other region is free.
    env.program(bitstream.uuid, region='region1')


def test_cancel_queued_job_and_refuse_cancel_of_ended(env):
    env.agent.stop()
    job = env.program(env.add_bitstream().uuid)
    cancelled = env.api.cancel_program(context.get_admin_context(),
                                       job['uuid'])
    assert cancelled['state'] == 'cancelled'
    assert cancelled['finished_at'] is not None
    with pytest.raises(exception.Conflict, match='already ended'):
        env.api.cancel_program(context.get_admin_context(), job['uuid'])
    # A new agent gets the job's message late: it is refused, nothing runs.
    env.start_agent()
    assert waiting.until(lambda: env.agent.jobs.running() == {})
    assert env.hardware() == pe.OLD_FUNCTION
    assert jobs_db.get(job['uuid']).state == 'cancelled'


def test_cancel_while_programming_refused(make_env):
    env = make_env(program_delay=1.0)
    job = env.program(env.add_bitstream().uuid)
    env.wait_job(job['uuid'], states=('programming',))
    with pytest.raises(exception.Conflict, match='torn off'):
        env.api.cancel_program(context.get_admin_context(), job['uuid'])
    assert env.wait_job(job['uuid']).state == 'succeeded'


def _bind(env, groups):
    region = env.region()
    arq_uuid = bind_helpers.make_arq(
        profile_id=bind_helpers.make_profile(groups))
    env.api.bind_arqs(context.get_admin_context(), {arq_uuid: {
        'hostname': pe.HOST, 'device_rp_uuid': region.rp_uuid,
        'instance_uuid': 'c0ffee00-0000-4000-8000-000000000001'}})
    return waiting.until(lambda: _arq_if_done(arq_uuid))


def _arq_if_done(arq_uuid):
    arq = bind_helpers.get_arq(arq_uuid)
    return arq if arq.state in ('Bound', 'BindFailed') else None


def test_bind_programs_the_missing_function_first(env):
    bitstream = env.add_bitstream()
    arq = _bind(env, [{'resources:FPGA': '1',
                       'accel:function_id': pe.NEW_AFU}])
    assert arq.state == 'Bound', arq.error
    assert env.hardware() == pe.NEW_FUNCTION
    assert env.region().bitstream_id == bitstream.uuid
    [job] = jobs_db.list_jobs()
    assert (job.state, job.arq_id) == ('succeeded', arq.id)


def test_bind_fails_with_the_programming_reason(make_env):
    env = make_env(fail_program=True)
    arq = _bind(env, [{'resources:FPGA': '1',
                       'accel:bitstream_id': env.add_bitstream().uuid}])
    assert arq.state == 'BindFailed'
    assert 'simulated failure' in arq.error
    assert env.hardware() == pe.OLD_FUNCTION
