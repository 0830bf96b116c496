"""Warm placement of an ARQ bind (issue 43 item 2): on a card whose
regions share one provider (the FAKE card without SR-IOV: both regions
behind its PF), the bind takes the region already running the function
the device profile asks for, and programs nothing.

The real ConductorService and an agent with the FAKE driver over
inproc:// (tests/functional/programming_env.py); Nova's bind is the
conductor's RPC bind_arqs."""
import pytest
import sqlalchemy as sa

from cyborg_lite.common import context
from cyborg_lite.db import models
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.db.sql import session
from tests import waiting
from tests.functional import programming_env as pe
from tests.functional.programming_env import make_env  # noqa: F401
from tests.unit.bitstreams import builders
from tests.unit.conductor import bind_helpers as h

INSTANCE = 'c0ffee00-0000-4000-8000-00000000a043'
NOVA = context.RequestContext(user_id='nova', project_id='service',
                              roles=['service'])


@pytest.fixture
def env(make_env):  # noqa: F811
    return make_env()


def _bind(env, arq_uuid, rp_uuid):
    env.api.bind_arqs(NOVA, {arq_uuid: {
        'hostname': pe.HOST, 'device_rp_uuid': rp_uuid,
        'instance_uuid': INSTANCE}})
    return waiting.read_until(
        lambda: h.get_arq(arq_uuid),
        lambda arq: arq.state in ('Bound', 'BindFailed'),
        what='ARQ %s resolved' % arq_uuid)


def _providers():
    with session.reader() as s:
        return set(s.scalars(sa.select(models.Deployable.rp_uuid)))


def test_a_bind_takes_the_sibling_already_running_the_function(env):
    # One provider for both regions: the bind, not Placement, picks.
    assert len(_providers()) == 1
    bitstream = env.add_bitstream()
    # region1 (second by name) runs the function; region0 the old one.
    loaded = env.wait_job(env.program(bitstream.uuid, 'region1')['uuid'])
    assert loaded.state == 'succeeded'
    assert (env.hardware('region0'), env.hardware('region1')) == (
        pe.OLD_FUNCTION, pe.NEW_FUNCTION)

    profile = h.make_profile([{'resources:FPGA': '1',
                               'accel:function_id': pe.NEW_FUNCTION}])
    arq_uuid = h.make_arq(profile_id=profile, project_id='project-a')
    bound = _bind(env, arq_uuid, env.region('region1').rp_uuid)

    assert bound.state == 'Bound', bound.error
    assert bound.deployable_id == env.region('region1').id
    # No job was started for the bind: the region ran the function.
    assert [job.uuid for job in jobs_db.list_jobs()] == [loaded.uuid]
    assert env.hardware('region0') == pe.OLD_FUNCTION


def test_the_region_asked_for_longest_ago_is_reprogrammed(env):
    """Neither region runs the function asked for: the bind reprograms
    the one whose function was asked for least recently (region1, loaded
    before region0), not the first by name, and leaves region0's."""
    first = env.add_bitstream()
    env.wait_job(env.program(first.uuid, 'region1')['uuid'])
    recent_afu = '3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e60'
    recent = env.add_bitstream(image=pe.new_image(afu_uuid=recent_afu),
                               function_id=builders.hex32(recent_afu))
    env.wait_job(env.program(recent.uuid, 'region0')['uuid'])
    asked_afu = '9e8d7c6b-5a49-4837-a261-504f3e2d1c0b'
    asked = env.add_bitstream(image=pe.new_image(afu_uuid=asked_afu),
                              function_id=builders.hex32(asked_afu))

    profile = h.make_profile([{'resources:FPGA': '1',
                               'accel:function_id': asked.function_id}])
    arq_uuid = h.make_arq(profile_id=profile, project_id='project-a')
    bound = _bind(env, arq_uuid, env.region('region1').rp_uuid)

    assert bound.state == 'Bound', bound.error
    assert bound.deployable_id == env.region('region1').id
    assert (env.hardware('region0'), env.hardware('region1')) == (
        builders.hex32(recent_afu), asked.function_id)
