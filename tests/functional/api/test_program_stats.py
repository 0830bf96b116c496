"""Programming seconds by project and namespace (issue 43 item 3, API
2.11): /v2/programs/stats, the metric and the device history agree with
the job records, over the real conductor and agent (inproc:// RPC, the
FAKE driver programming for ``program_delay`` seconds); one job started
by a Kubernetes claim's Prepare is accounted to its namespace."""
import prometheus_client
import pytest
import sqlalchemy as sa

from cyborg_lite.common import context
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.functional.api import bitstream_helpers as bh
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import ANONYMOUS
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import MEMBER_B
from tests.functional.api.conftest import error_of
from tests.functional import programming_env as pe
from tests.functional.programming_env import make_env  # noqa: F401
from tests.unit.bitstreams import builders

V211 = {'OpenStack-API-Version': 'accelerator 2.11'}
V210 = {'OpenStack-API-Version': 'accelerator 2.10'}
OTHER_AFU = '7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d'
METRIC = 'cyborg_lite_programming_seconds_total'


@pytest.fixture
def env(make_env, conf):  # noqa: F811
    conf.set_override('namespace_projects', {'team-a': 'project-a'},
                      group='kubernetes')
    conf.set_override('hosts', [pe.HOST], group='kubernetes')
    return make_env(program_delay=0.2)


@pytest.fixture
def app(env, api_conf):
    return env.api_app(api_conf)


def _metric(project, namespace=''):
    return prometheus_client.REGISTRY.get_sample_value(
        METRIC, {'project': project, 'namespace': namespace}) or 0.0


def _program(app, env, caller, region, bitstream):
    job = app.post_json('/v2/programs', {
        'deployable_uuid': env.region(region).uuid,
        'bitstream_uuid': bitstream}, headers=bh.h(caller), status=202).json
    assert env.wait_job(job['uuid']).state == 'succeeded'
    return job['uuid']


def _prepare_claim(env, bitstream):
    """A claim in namespace team-a (project-a's) loading ``bitstream``
    into region0 at Prepare; returns its job's uuid."""
    request = {'claim_uid': 'c1a10000-0000-4000-8000-000000000001',
               'namespace': 'team-a', 'claim_name': 'fpga', 'pool': pe.HOST,
               'device': 'fpga-0000-5e-00-0-region0',
               'config': {'bitstream_id': bitstream}}
    env.api.prepare_k8s_device(context.get_admin_context(), pe.HOST,
                               request, wait=10)
    with session.reader() as s:
        return s.scalars(sa.select(models.ProgrammingJob.uuid).where(
            models.ProgrammingJob.namespace == 'team-a')).one()


def _sums_of_the_job_records():
    """{(project, namespace): (jobs, seconds)} summed here from the rows."""
    sums = {}
    with session.reader() as s:
        for job in s.scalars(sa.select(models.ProgrammingJob)):
            key = (job.project_id, job.namespace)
            jobs, seconds = sums.get(key, (0, 0.0))
            sums[key] = (jobs + 1, seconds + (
                job.finished_at - job.created_at).total_seconds())
    return sums


def _stats(app, caller, query='', status=200):
    return app.get('/v2/programs/stats' + query,
                   headers=bh.h(caller, **V211), status=status)


def test_seconds_per_project_equal_the_sum_over_the_job_records(app, env):
    before = {key: _metric(*key) for key in (
        ('project-a', ''), ('project-a', 'team-a'), ('project-b', ''))}
    bitstream = env.add_bitstream().uuid
    other = env.add_bitstream(
        image=pe.new_image(afu_uuid=OTHER_AFU),
        function_id=builders.hex32(OTHER_AFU)).uuid
    _program(app, env, MEMBER_A, 'region0', bitstream)
    _program(app, env, MEMBER_B, 'region1', bitstream)
    _program(app, env, MEMBER_A, 'region1', other)
    claim_job = _prepare_claim(env, other)

    expected = _sums_of_the_job_records()
    assert set(expected) == {('project-a', None), ('project-b', None),
                             ('project-a', 'team-a')}
    assert expected[('project-a', None)][0] == 2
    rows = _stats(app, ADMIN).json['programming_seconds']
    assert [(r['project_id'], r['namespace']) for r in rows] == [
        ('project-a', None), ('project-a', 'team-a'), ('project-b', None)]
    for row in rows:
        jobs, seconds = expected[(row['project_id'], row['namespace'])]
        assert row['jobs'] == jobs
        assert row['seconds'] == pytest.approx(seconds)
        assert row['seconds'] > 0
        # The metric counted the same seconds where each job ended.
        label = (row['project_id'], row['namespace'] or '')
        assert _metric(*label) - before[label] == pytest.approx(seconds)

    # Visibility follows the job's project, not the caller's filter.
    mine = _stats(app, MEMBER_A).json['programming_seconds']
    assert mine == [r for r in rows if r['project_id'] == 'project-a']
    assert _stats(app, MEMBER_A, '?project_id=project-b').json == {
        'programming_seconds': []}
    assert _stats(app, ADMIN, '?project_id=project-b').json[
        'programming_seconds'] == [r for r in rows
                                   if r['project_id'] == 'project-b']

    # The job's end in the device history carries its seconds, project
    # and namespace (2.11).
    device = env.region().device_id
    with session.reader() as s:
        device_uuid = s.get(models.Device, device).uuid
        job = s.scalars(sa.select(models.ProgrammingJob).where(
            models.ProgrammingJob.uuid == claim_job)).one()
    history = app.get('/v2/devices/%s/history' % device_uuid,
                      headers=bh.h(ADMIN, **V211)).json['history']
    [end] = [r for r in history if r['object_uuid'] == claim_job
             and r['event'] == 'programming_job.program.end']
    assert (end['project_id'], end['namespace']) == ('project-a', 'team-a')
    assert end['seconds'] == pytest.approx(
        (job.finished_at - job.created_at).total_seconds())
    assert {r['seconds'] is None for r in history
            if r['event'] != 'programming_job.program.end'} == {True}
    older = app.get('/v2/devices/%s/history' % device_uuid,
                    headers=bh.h(ADMIN, **V210)).json['history']
    assert older and all('seconds' not in r for r in older)


def test_stats_refusals(app):
    resp = app.get('/v2/programs/stats', headers=bh.h(ADMIN, **V210),
                   status=404)
    assert '2.11' in error_of(resp)
    _stats(app, ANONYMOUS, status=403)
    resp = _stats(app, ADMIN, '?project=x', status=400)
    assert 'project' in error_of(resp)
    assert _stats(app, MEMBER_B).json == {'programming_seconds': []}
