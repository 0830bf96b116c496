"""``cyborg-lite program ...`` through the real API to a real conductor
and an agent with the FAKE driver (tests/functional/programming_env.py),
all in this process over inproc:// messaging."""
import uuid

import pytest
import sqlalchemy as sa

from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.functional.cli import bitstream_cli as b
from tests.functional import programming_env as pe
from tests.functional.programming_env import make_env  # noqa: F401

LIFECYCLE = ['(start)', 'queued', 'downloading', 'programming',
             'verifying', 'succeeded']


@pytest.fixture
def env(make_env, api_url):  # noqa: F811
    # Long enough that --wait (polling every 0.2 s) sees "programming".
    return make_env(program_delay=1.0)


def _bitstream(cli, tmp_path, **metadata):
    path = b.write_image(tmp_path, afu_uuid=pe.NEW_AFU, **metadata)
    return b.create(cli, path, 'new').json['uuid']


def _changes(stderr, job):
    """[(old, new)] from ``<job>: old -> new`` lines."""
    changes = []
    for line in stderr.splitlines():
        if line.startswith(job + ': '):
            old, _, new = line[len(job) + 2:].partition(' -> ')
            changes.append((old, new))
    return changes


def test_create_wait_reports_state_changes(cli, env, tmp_path):
    bitstream = _bitstream(cli, tmp_path)
    region = env.region().uuid
    result = cli('program', 'create', region, bitstream, '--wait',
                 '-f', 'json')
    job = result.json
    assert (job['state'], job['deployable_uuid'], job['bitstream_uuid'],
            job['hostname']) == ('succeeded', region, bitstream, pe.HOST)
    changes = _changes(result.stderr, job['uuid'])
    assert changes[-1][1] == 'succeeded'
    assert ('programming' in [new for _old, new in changes]), changes
    # Each change follows the last, in lifecycle order.
    states = [changes[0][0]] + [new for _old, new in changes]
    assert [s for s in LIFECYCLE if s in states] == states
    assert env.hardware() == pe.NEW_FUNCTION


def test_list_and_show(cli, env, tmp_path):
    bitstream = _bitstream(cli, tmp_path)
    first = cli('program', 'create', env.region('region0').uuid, bitstream,
                '--wait', '-f', 'json').json
    second = cli('program', 'create', env.region('region1').uuid,
                 bitstream, '--wait', '-f', 'json').json
    rows = cli('program', 'list', '-f', 'json').json
    assert sorted(r['uuid'] for r in rows) == sorted(
        [first['uuid'], second['uuid']])
    assert set(rows[0]) == {'uuid', 'state', 'deployable_uuid',
                            'bitstream_uuid', 'hostname', 'error'}
    only = cli('program', 'list', '--deployable',
               env.region('region1').uuid, '--state', 'succeeded',
               '--hostname', pe.HOST, '--bitstream', bitstream,
               '-f', 'json').json
    assert [r['uuid'] for r in only] == [second['uuid']]
    shown = cli('program', 'show', first['uuid'], '-f', 'json').json
    assert (shown['state'], shown['hostname']) == ('succeeded', pe.HOST)
    assert shown['finished_at'] is not None
    # Issue 17.5: a job that ran once counts one try, and shows it.
    assert shown['attempts'] == 1
    assert [(t['number'], t['outcome']) for t in shown['tries']] == [
        (1, 'succeeded')]
    long_rows = cli('program', 'list', '--long', '-f', 'json').json
    assert {r['attempts'] for r in long_rows} == {1}
    table = cli('program', 'show', first['uuid']).stdout
    [line] = [l for l in table.splitlines() if '| tries' in l]
    assert 'try 1 on %s: succeeded (' % pe.HOST in line


def test_failed_job_exits_1(cli, make_env, api_url, tmp_path):  # noqa: F811
    env = make_env(fail_program=True)
    bitstream = _bitstream(cli, tmp_path)
    result = cli('program', 'create', env.region().uuid, bitstream,
                 '--wait')
    assert result.rc == 1, result
    assert result.stdout == ''
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith('Programming job ')
    assert ' ended failed: ' in last
    assert env.hardware() == pe.OLD_FUNCTION


def test_cancel_queued_job(cli, env, tmp_path):
    bitstream = _bitstream(cli, tmp_path)
    env.agent.stop()  # nobody takes the job: it stays queued
    job = cli('program', 'create', env.region().uuid, bitstream,
              '-f', 'json').json
    assert job['state'] == 'queued'
    cancelled = cli('program', 'cancel', job['uuid'], '-f', 'json').json
    assert (cancelled['uuid'], cancelled['state']) == (job['uuid'],
                                                       'cancelled')
    b.one_line_error(cli('program', 'cancel', job['uuid']),
                     'already ended', 'HTTP 409')


def test_api_refusals_are_one_line(cli, env, tmp_path):
    bitstream = _bitstream(cli, tmp_path)
    missing = str(uuid.uuid4())
    b.one_line_error(cli('program', 'show', missing),
                     'Programming job %s could not be found' % missing,
                     'HTTP 404')
    b.one_line_error(cli('program', 'create', missing, bitstream),
                     'HTTP 404')
    b.one_line_error(cli('program', 'create', 'not-a-uuid', bitstream),
                     'deployable_uuid', 'HTTP 400')
    # A bitstream a job refers to cannot be deleted.
    cli('program', 'create', env.region().uuid, bitstream, '--wait')
    b.one_line_error(cli('bitstream', 'delete', bitstream), 'HTTP 409')


def test_stats_sum_the_job_records(cli, env, tmp_path):
    """``program stats [--project]``: the seconds of the ended jobs, by
    project and namespace, as the job records say (API 2.11)."""
    bitstream = _bitstream(cli, tmp_path)
    jobs = [cli('program', 'create', env.region(region).uuid, bitstream,
                '--wait', '-f', 'json').json
            for region in ('region0', 'region1')]
    # noauth without [api]noauth_default_project_id: no project.
    assert {j['project_id'] for j in jobs} == {None}
    with session.reader() as sess:
        seconds = sum((job.finished_at - job.created_at).total_seconds()
                      for job in sess.scalars(sa.select(
                          models.ProgrammingJob)))
    [row] = cli('program', 'stats', '-f', 'json').json
    assert (row['project_id'], row['namespace'], row['jobs']) == (
        None, None, 2)
    assert row['seconds'] == pytest.approx(seconds)
    assert cli('program', 'stats', '--project', 'nobody', '-f',
               'json').json == []

