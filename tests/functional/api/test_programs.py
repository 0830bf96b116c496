"""/v2/programs over the real conductor and agent (inproc:// RPC, the FAKE
driver's simulated sysfs tree as hardware): a job runs to succeeded, and
every refusal comes before anything reaches the region."""
import oslo_messaging
import pytest
import webtest

from cyborg_lite.api import deploy
from cyborg_lite.common import states
from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import programming_jobs as jobs_db
from tests.functional.api import bitstream_helpers as bh
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import ANONYMOUS
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import MEMBER_B
from tests.functional.api.conftest import error_of
from tests import waiting
from tests.functional import programming_env as pe
from tests.functional.programming_env import make_env  # noqa: F401

UUID = '5d6a8f0e-6a47-4b5b-9c50-1a2b3c4d5e6f'


@pytest.fixture
def env(make_env):  # noqa: F811
    return make_env()


@pytest.fixture
def rpc_app(env, api_conf):
    return env.api_app(api_conf)


def _bitstream(app, caller=MEMBER_A, image=None, **values):
    """An active bitstream uploaded through the API."""
    image = pe.new_image() if image is None else image
    return bh.create_active(app, caller, image, **values)['uuid']


def _program(app, caller, region, bitstream, status=202, **extra):
    body = dict(deployable_uuid=region.uuid, bitstream_uuid=bitstream,
                **extra)
    return app.post_json('/v2/programs', body, headers=bh.h(caller),
                         status=status)


def _wait(app, caller, job_uuid, states=states.JOB_TERMINAL):
    def done():
        job = app.get('/v2/programs/' + job_uuid, headers=bh.h(caller)).json
        return job if job['state'] in states else None
    job = waiting.until(done)
    assert job, 'job %s never ended' % job_uuid
    return job


def test_program_reaches_succeeded(rpc_app, env):
    region = env.region()
    bitstream = _bitstream(rpc_app)
    resp = _program(rpc_app, MEMBER_A, region, bitstream)
    job = resp.json
    assert resp.location == 'http://localhost/v2/programs/' + job['uuid']
    assert (job['deployable_uuid'], job['bitstream_uuid'], job['hostname'],
            job['project_id'], job['force']) == (
        region.uuid, bitstream, pe.HOST, 'project-a', False)
    # The 202 shows the job as it is: the agent may have begun it already.
    assert job['attempts'] in (0, 1)
    assert [t['number'] for t in job['tries']] in ([], [1])
    done = _wait(rpc_app, MEMBER_A, job['uuid'])
    assert (done['state'], done['error']) == ('succeeded', None)
    assert done['finished_at'].endswith('+00:00')
    # Issue 17.5: a job that ran once shows one try, in list and show.
    [only_try] = done['tries']
    assert done['attempts'] == 1
    assert (only_try['number'], only_try['hostname'], only_try['outcome'],
            only_try['error']) == (1, pe.HOST, 'succeeded', None)
    assert only_try['started_at'] <= only_try['ended_at']
    listed = rpc_app.get('/v2/programs', headers=bh.h(MEMBER_A)).json[
        'programs']
    assert [(j['uuid'], j['attempts'], j['tries']) for j in listed] == [
        (done['uuid'], 1, done['tries'])]
    assert env.hardware() == pe.NEW_FUNCTION
    assert env.hardware('region1') == pe.OLD_FUNCTION


def test_wrong_region_type_is_400_before_any_job(rpc_app, env):
    other = '00000000-0000-0000-0000-000000000001'
    bitstream = _bitstream(rpc_app, image=pe.new_image(interface=other))
    resp = _program(rpc_app, MEMBER_A, env.region(), bitstream, status=400)
    assert 'region type mismatch' in error_of(resp)
    assert jobs_db.list_jobs() == []
    assert env.hardware() == pe.OLD_FUNCTION


def test_busy_region_is_409(make_env, api_conf):  # noqa: F811
    env = make_env(program_delay=1.0)
    app = webtest.TestApp(deploy.loadapp(api_conf,
                                         conductor_factory=lambda: env.api))
    bitstream = _bitstream(app)
    first = _program(app, MEMBER_A, env.region(), bitstream).json
    resp = _program(app, MEMBER_A, env.region(), bitstream, status=409)
    assert first['uuid'] in error_of(resp)
    assert len(jobs_db.list_jobs()) == 1
    assert _wait(app, MEMBER_A, first['uuid'])['state'] == 'succeeded'


def _bind(app, region):
    """A Bound ARQ of project A on ``region``."""
    fx.create_profile(app, bh.h(MEMBER_A))
    arq = fx.create_arqs(app, bh.h(MEMBER_A)).json['arqs'][0]
    fx.set_arq(arq['uuid'], state='Bound', deployable_id=region.id)
    return arq['uuid']


def test_bound_region_needs_force_and_admin(rpc_app, env):
    region = env.region()
    arq = _bind(rpc_app, region)
    bitstream = _bitstream(rpc_app, ADMIN, visibility='public')
    resp = _program(rpc_app, MEMBER_A, region, bitstream, status=409)
    assert arq in error_of(resp)
    resp = _program(rpc_app, MEMBER_A, region, bitstream, status=403,
                    force=True)
    assert 'cyborg:program:force' in error_of(resp)
    assert jobs_db.list_jobs() == []
    job = _program(rpc_app, ADMIN, region, bitstream, force=True).json
    assert job['force'] is True
    assert _wait(rpc_app, ADMIN, job['uuid'])['state'] == 'succeeded'


def test_another_projects_private_bitstream_is_404(rpc_app, env):
    bitstream = _bitstream(rpc_app, MEMBER_A)
    resp = _program(rpc_app, MEMBER_B, env.region(), bitstream, status=404)
    assert bitstream in error_of(resp)
    assert jobs_db.list_jobs() == []


def test_bitstream_without_image_is_409(rpc_app, env):
    queued = bh.create(rpc_app, MEMBER_A).json['uuid']
    resp = _program(rpc_app, MEMBER_A, env.region(), queued, status=409)
    assert 'not active' in error_of(resp)


def test_unknown_region_is_404(rpc_app, env):
    bitstream = _bitstream(rpc_app)
    body = {'deployable_uuid': UUID, 'bitstream_uuid': bitstream}
    resp = rpc_app.post_json('/v2/programs', body, headers=bh.h(MEMBER_A),
                             status=404)
    assert UUID in error_of(resp)


def _queued_job(env, project='project-a'):
    """A job row that no agent was sent (it stays queued)."""
    bitstream = bitstreams_db.get(env.add_bitstream().uuid)
    return jobs_db.create_job(env.region('region1').id, bitstream.id,
                              hostname=pe.HOST, project_id=project)


def test_cancel_queued_job(rpc_app, env):
    job = _queued_job(env)
    resp = rpc_app.post('/v2/programs/%s/cancel' % job.uuid,
                        headers=bh.h(MEMBER_A), status=200)
    assert (resp.json['state'], resp.json['error']) == (
        'cancelled', 'cancelled on request')
    assert jobs_db.get(job.uuid).active_deployable_id is None


def test_cancel_while_programming_is_409(rpc_app, env):
    job = _queued_job(env)
    jobs_db.transition(job.uuid, 'queued', 'downloading')
    jobs_db.transition(job.uuid, 'downloading', 'programming')
    resp = rpc_app.post('/v2/programs/%s/cancel' % job.uuid,
                        headers=bh.h(MEMBER_A), status=409)
    assert 'programming' in error_of(resp)
    assert jobs_db.get(job.uuid).state == 'programming'


def test_cancel_policy(rpc_app, env):
    job = _queued_job(env)
    url = '/v2/programs/%s/cancel' % job.uuid
    rpc_app.post(url, headers=bh.h(MEMBER_B), status=404)
    rpc_app.post(url, headers=bh.h(ANONYMOUS), status=403)
    rpc_app.post('/v2/programs/%s/cancel' % UUID, headers=bh.h(ADMIN),
                 status=404)
    assert jobs_db.get(job.uuid).state == 'queued'
    rpc_app.post(url, headers=bh.h(ADMIN), status=200)


def test_list_and_show_are_project_scoped_and_filtered(rpc_app, env):
    mine = _queued_job(env, 'project-a')
    jobs_db.cancel(mine.uuid)
    theirs = _queued_job(env, 'project-b')

    def listed(caller, query=''):
        body = rpc_app.get('/v2/programs' + query, headers=bh.h(caller)).json
        return [j['uuid'] for j in body['programs']]
    assert listed(MEMBER_A) == [mine.uuid]
    assert listed(MEMBER_B) == [theirs.uuid]
    assert listed(ADMIN) == [mine.uuid, theirs.uuid]
    assert listed(ADMIN, '?state=queued') == [theirs.uuid]
    assert listed(ADMIN, '?hostname=' + pe.HOST) == [mine.uuid, theirs.uuid]
    region1 = env.region('region1').uuid
    assert listed(ADMIN, '?deployable_uuid=' + region1) == [mine.uuid,
                                                             theirs.uuid]
    assert listed(ADMIN, '?deployable_uuid=' + env.region().uuid) == []
    bitstream = rpc_app.get('/v2/programs/' + mine.uuid,
                            headers=bh.h(ADMIN)).json['bitstream_uuid']
    assert listed(ADMIN, '?bitstream_uuid=' + bitstream) == [mine.uuid]
    assert listed(ADMIN, '?limit=1&sort_key=uuid') == [
        min(mine.uuid, theirs.uuid)]
    rpc_app.get('/v2/programs/' + mine.uuid, headers=bh.h(MEMBER_B),
                status=404)
    rpc_app.get('/v2/programs', headers=bh.h(ANONYMOUS), status=403)


@pytest.mark.parametrize('query,field', [
    ('?state=running', 'query.state'), ('?deployable_uuid=x',
                                        'query.deployable_uuid'),
    ('?colour=red', 'query.colour'),
])
def test_bad_list_query_is_400(app, query, field):
    resp = app.get('/v2/programs' + query, headers=bh.h(ADMIN), status=400)
    assert 'Invalid value for %s' % field in error_of(resp)


@pytest.mark.parametrize('body,field', [
    ({'bitstream_uuid': UUID}, 'body.deployable_uuid'),
    ({'deployable_uuid': UUID, 'bitstream_uuid': 'x'}, 'body.bitstream_uuid'),
    ({'deployable_uuid': UUID, 'bitstream_uuid': UUID, 'force': 'yes'},
     'body.force'),
    ({'deployable_uuid': UUID, 'bitstream_uuid': UUID, 'when': 1},
     'body.when'),
])
def test_bad_create_body_is_400_and_no_call(app, conductor, body, field):
    resp = app.post_json('/v2/programs', body, headers=bh.h(MEMBER_A),
                         status=400)
    assert 'Invalid value for %s' % field in error_of(resp)
    assert conductor.calls == []


class _Silent:
    """A conductor client whose calls time out (no conductor running)."""

    def program(self, ctxt, *args, **kwargs):
        raise oslo_messaging.MessagingTimeout('no reply')

    cancel_program = program


def test_no_conductor_is_503(sqlite_db, api_conf):
    app = webtest.TestApp(deploy.loadapp(api_conf,
                                         conductor_factory=_Silent))
    body = {'deployable_uuid': UUID, 'bitstream_uuid': UUID}
    resp = app.post_json('/v2/programs', body, headers=bh.h(MEMBER_A),
                         status=503)
    assert 'conductor did not answer' in error_of(resp)


@pytest.mark.parametrize('method,path', [
    ('GET', '/v2/programs'), ('POST', '/v2/programs'),
    ('GET', '/v2/programs/' + UUID),
    ('POST', '/v2/programs/%s/cancel' % UUID),
])
def test_routes_need_version_2_4(app, method, path):
    headers = dict(ADMIN, **{'OpenStack-API-Version': 'accelerator 2.3'})
    resp = app.request(path, method=method, headers=headers, status=404)
    assert 'needs API version 2.4' in error_of(resp)
