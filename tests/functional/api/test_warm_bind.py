"""Warm placement of an ARQ bind (issue 43 item 2), through the API as
Nova drives it: on a card whose regions share one provider (the FAKE
card without SR-IOV: both regions behind its PF), the bind takes the
region already running the function the device profile asks for and
programs nothing; when none runs it, the region reprogrammed is the one
whose function was asked for least recently (inventory/warm.py), and
the API shows which: the ARQ's attach handle, the programming job, the
device's history.

The API app, the real ConductorService and an agent with the FAKE driver
over inproc:// (tests/functional/programming_env.py)."""
import pytest
import sqlalchemy as sa

from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests import waiting
from tests.functional import programming_env as pe
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MEMBER_A
from tests.functional.programming_env import make_env  # noqa: F401
from tests.unit.bitstreams import builders

PATH = '/v2/accelerator_requests'
INSTANCE = 'c0ffee00-0000-4000-8000-00000000a043'
# A member's request, as Nova sends it on with its service token.
NOVA = dict(MEMBER_A, **{'X-Service-Roles': 'service'})
# The admin reading jobs (2.4) and a device's history (2.9).
READER = dict(ADMIN, **{'OpenStack-API-Version': 'accelerator 2.9'})


@pytest.fixture
def env(make_env):  # noqa: F811
    return make_env()


def _bind(app, env, function_id):
    """An ARQ of a profile asking for ``function_id``, bound through the
    API to the card's one provider; the ARQ as the API shows it once
    resolved."""
    [rp_uuid] = {region.rp_uuid for region in env.regions()}
    fx.create_profile(app, ADMIN, groups=[{
        'resources:FPGA': '1', 'accel:function_id': function_id}])
    arq = fx.create_arqs(app, MEMBER_A).json['arqs'][0]
    app.patch_json(PATH, {arq['uuid']: [
        {'op': 'add', 'path': '/hostname', 'value': pe.HOST},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
        {'op': 'add', 'path': '/instance_uuid', 'value': INSTANCE}]},
        headers=NOVA, status=202)
    return waiting.read_until(
        lambda: app.get('%s/%s' % (PATH, arq['uuid']),
                        headers=MEMBER_A).json,
        lambda seen: seen['state'] in ('Bound', 'BindFailed'),
        what='ARQ %s resolved' % arq['uuid'])


def _handle_of(env, name):
    with session.reader() as s:
        return s.scalars(sa.select(models.AttachHandle.uuid).where(
            models.AttachHandle.deployable_id == env.region(name).id)).one()


def _jobs(app):
    return app.get('/v2/programs', headers=READER).json['programs']


def test_a_bind_takes_the_sibling_already_running_the_function(env,
                                                               api_conf):
    app = env.api_app(api_conf)
    bitstream = env.add_bitstream()
    # region1 (second by name) runs the function; region0 the old one.
    loaded = env.wait_job(env.program(bitstream.uuid, 'region1')['uuid'])
    assert loaded.state == 'succeeded'
    assert (env.hardware('region0'), env.hardware('region1')) == (
        pe.OLD_FUNCTION, pe.NEW_FUNCTION)

    bound = _bind(app, env, pe.NEW_FUNCTION)

    assert bound['state'] == 'Bound', bound
    assert bound['attach_handle_uuid'] == _handle_of(env, 'region1')
    # No job was started for the bind: the region ran the function.
    assert [job['uuid'] for job in _jobs(app)] == [loaded.uuid]
    assert env.hardware('region0') == pe.OLD_FUNCTION


def test_the_region_asked_for_longest_ago_is_reprogrammed(env, api_conf):
    """Neither region runs the function asked for: the bind reprograms
    the one whose function was asked for least recently (region1, loaded
    before region0), not the first by name, and leaves region0's."""
    app = env.api_app(api_conf)
    first = env.add_bitstream()
    env.wait_job(env.program(first.uuid, 'region1')['uuid'])
    recent_afu = '3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e60'
    recent = env.add_bitstream(image=pe.new_image(afu_uuid=recent_afu),
                               function_id=builders.hex32(recent_afu))
    env.wait_job(env.program(recent.uuid, 'region0')['uuid'])
    asked_afu = '9e8d7c6b-5a49-4837-a261-504f3e2d1c0b'
    asked = env.add_bitstream(image=pe.new_image(afu_uuid=asked_afu),
                              function_id=builders.hex32(asked_afu))

    bound = _bind(app, env, asked.function_id)

    assert bound['state'] == 'Bound', bound
    region1 = env.region('region1')
    assert bound['attach_handle_uuid'] == _handle_of(env, 'region1')
    # The eviction as the API tells it: the bind's job loaded region1,
    # and the device's history shows the bind ending there.
    [bind_job] = [job for job in _jobs(app)
                  if job['bitstream_uuid'] == asked.uuid]
    assert (bind_job['deployable_uuid'], bind_job['state']) == (
        region1.uuid, 'succeeded')
    [device] = app.get('/v2/devices', headers=READER).json['devices']
    history = app.get('/v2/devices/%s/history' % device['uuid'],
                      headers=READER).json
    ends = [row['deployable_uuid'] for row in history['history']
            if row['event'] == 'arq.bind.end']
    assert ends == [region1.uuid]
    assert (env.hardware('region0'), env.hardware('region1')) == (
        builders.hex32(recent_afu), asked.function_id)
