"""What a bind may load follows the ARQ's project, never the context the
bind arrives with: Nova's service user, an admin, or the admin context
the bind reaper sends an untaken bind again with.

The real ConductorService and an agent with the FAKE driver over
inproc:// (tests/functional/programming_env.py); binds reach the
conductor over RPC as the API's cast or the reaper's does.
"""
import pytest

from cyborg_lite.common import context
from cyborg_lite.conductor import bind
from cyborg_lite.db import arq_binds
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.db import signature_policies as policies_db
from tests import waiting
from tests.functional import programming_env as pe
from tests.functional.programming_env import make_env  # noqa: F401
from tests.unit.conductor import bind_helpers as h

INSTANCE = 'c0ffee00-0000-4000-8000-00000000b001'
ADMIN_OF_B = context.RequestContext(user_id='root', project_id='project-b',
                                    roles=['admin'], is_admin=True)


@pytest.fixture
def env(make_env):  # noqa: F811
    return make_env(sriov=True)


def _arq(wanted, by='accel:bitstream_id', project_id='project-a'):
    profile = h.make_profile([{'resources:FPGA': '1', by: wanted}])
    return h.make_arq(profile_id=profile, project_id=project_id)


def _binding(env):
    return {'hostname': pe.HOST, 'device_rp_uuid': env.region().rp_uuid,
            'instance_uuid': INSTANCE}


def _resolved(arq_uuid):
    return waiting.read_until(
        lambda: h.get_arq(arq_uuid),
        lambda arq: arq.state in ('Bound', 'BindFailed'),
        what='ARQ %s resolved' % arq_uuid)


def _private_of_b(env):
    return env.add_bitstream(visibility='private', project_id='project-b')


def _loaded_nothing(env):
    assert jobs_db.list_jobs() == []
    assert env.hardware() == pe.OLD_FUNCTION


def test_an_admin_context_does_not_open_another_projects_bitstream(env):
    theirs = _private_of_b(env)
    arq_uuid = _arq(theirs.uuid)

    env.api.bind_arqs(context.get_admin_context(),
                      {arq_uuid: _binding(env)})

    failed = _resolved(arq_uuid)
    assert failed.state == 'BindFailed'
    assert 'Bitstream %s could not be found' % theirs.uuid in failed.error
    _loaded_nothing(env)


def test_a_function_only_another_projects_bitstream_loads_is_not_found(
        env):
    _private_of_b(env)
    arq_uuid = _arq(pe.NEW_FUNCTION, by='accel:function_id')

    env.api.bind_arqs(context.get_admin_context(),
                      {arq_uuid: _binding(env)})

    failed = _resolved(arq_uuid)
    assert failed.state == 'BindFailed'
    assert 'No active bitstream' in failed.error
    _loaded_nothing(env)


def test_a_bind_the_reaper_sends_again_loads_what_its_arq_may(env):
    """A member's bind the API recorded and no conductor took: the
    reaper casts it again with an admin context, and the ARQ's project
    still decides."""
    theirs = _private_of_b(env)
    arq_uuid = _arq(theirs.uuid)
    arq_binds.start_binds({arq_uuid: _binding(env)})

    assert bind.resend_untaken_binds(after=0) == [arq_uuid]

    failed = _resolved(arq_uuid)
    assert failed.state == 'BindFailed'
    assert 'Bitstream %s could not be found' % theirs.uuid in failed.error
    _loaded_nothing(env)


def test_the_projects_own_private_bitstream_is_loaded_whoever_binds(env):
    mine = _private_of_b(env)
    arq_uuid = _arq(mine.uuid, project_id='project-b')
    nova = context.RequestContext(user_id='nova', project_id='service',
                                  roles=['service'])

    env.api.bind_arqs(nova, {arq_uuid: _binding(env)})

    bound = _resolved(arq_uuid)
    assert bound.state == 'Bound', bound.error
    assert env.hardware() == pe.NEW_FUNCTION
    assert env.region().bitstream_id == mine.uuid


def test_the_arqs_projects_signature_policy_decides_a_resent_bind(
        conf, env):
    """Project A enforces signatures; the deployment warns. A region
    loaded with an unsigned image is not handed to project A's instance
    as it is, though the bind comes back with the reaper's context,
    which has no project."""
    conf.set_override('signature_policy', 'warn', group='bitstreams')
    unsigned = env.add_bitstream()
    done = env.wait_job(env.program(unsigned.uuid)['uuid'])
    assert done.state == 'succeeded', done.error
    policies_db.set_policy('project-a', 'enforce')
    arq_uuid = _arq(unsigned.uuid)
    arq_binds.start_binds({arq_uuid: _binding(env)})

    assert bind.resend_untaken_binds(after=0) == [arq_uuid]

    failed = _resolved(arq_uuid)
    assert failed.state == 'BindFailed'
    assert 'policy of project project-a is enforce' in failed.error
    assert [j.state for j in jobs_db.list_jobs()] == ['succeeded']


def test_an_arq_of_no_project_gets_public_images_only_whoever_binds(env):
    theirs = _private_of_b(env)
    arq_uuid = _arq(theirs.uuid, project_id=None)

    env.api.bind_arqs(ADMIN_OF_B, {arq_uuid: _binding(env)})

    failed = _resolved(arq_uuid)
    assert failed.state == 'BindFailed'
    assert 'Bitstream %s could not be found' % theirs.uuid in failed.error
    _loaded_nothing(env)


def test_an_arq_of_no_project_gets_the_deployments_signature_policy(
        conf, env):
    """The deployment enforces, project B only warns: an unsigned image
    already loaded is not handed as it is to an ARQ of no project bound
    by an admin of project B."""
    conf.set_override('signature_policy', 'warn', group='bitstreams')
    unsigned = env.add_bitstream()
    done = env.wait_job(env.program(unsigned.uuid)['uuid'])
    assert done.state == 'succeeded', done.error
    conf.set_override('signature_policy', 'enforce', group='bitstreams')
    policies_db.set_policy('project-b', 'warn')
    arq_uuid = _arq(unsigned.uuid, project_id=None)

    env.api.bind_arqs(ADMIN_OF_B, {arq_uuid: _binding(env)})

    failed = _resolved(arq_uuid)
    assert failed.state == 'BindFailed'
    assert 'policy of this deployment' in failed.error
    assert [j.state for j in jobs_db.list_jobs()] == ['succeeded']
