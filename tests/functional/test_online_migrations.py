"""cyborg-lite-dbsync online_data_migrations, run as an operator runs it:
the end rows of jobs that ended before revision 0016 (seconds NULL, as a
2026.1.0 conductor left them) get the job's seconds from the job's row,
in batches of --max-count (exit 1 while rows are left, 0 once done,
idempotent); the upgrade check says whether they are done."""
import pytest
import sqlalchemy as sa

from cyborg_lite.cmd import status
from cyborg_lite.db import models
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.db.sql import session
from tests.functional import console
from tests.functional.programming_env import make_env  # noqa: F401

H = models.DeviceHistory


@pytest.fixture
def env(make_env):  # noqa: F811
    return make_env()


def _end_rows():
    """{history id: (seconds, the job's seconds_of)} of every job end."""
    with session.reader() as s:
        rows = s.execute(sa.select(H.id, H.seconds, models.ProgrammingJob)
                         .join(models.ProgrammingJob,
                               models.ProgrammingJob.uuid == H.object_uuid)
                         .where(H.event.in_([
                             'programming_job.program.end',
                             'programming_job.program.error',
                             'programming_job.cancel']))).all()
        return {i: (seconds, jobs_db.seconds_of(job))
                for i, seconds, job in rows}


def _as_before_0016():
    with session.writer() as s:
        s.execute(sa.update(H).values(seconds=None))


def _dbsync(tmp_path, sqlite_db, *args):
    path = tmp_path / 'odm.conf'
    path.write_text('[database]\nconnection = %s\n' % sqlite_db)
    script = console.Script('cyborg-lite-dbsync', '--config-file', path,
                            'online_data_migrations', *args)
    return script.run(timeout=60), script.stdout


def test_old_job_end_rows_get_their_seconds_in_batches(env, tmp_path,
                                                       sqlite_db):
    bitstream = env.add_bitstream().uuid
    for region in ('region0', 'region1'):
        job = env.program(bitstream, region=region)
        assert env.wait_job(job['uuid']).state == 'succeeded'
    written = _end_rows()
    assert len(written) == 2
    assert all(seconds == want for seconds, want in written.values())
    _as_before_0016()
    # Only the end rows are counted: the other rows' NULL is right.
    assert status.check_online_migrations().code == status.Code.WARNING

    rc, out = _dbsync(tmp_path, sqlite_db, '--max-count', '1')
    assert rc == 1, out
    assert 'device_history_seconds' in out
    assert sorted(s is None for s, _ in _end_rows().values()) == [
        False, True]

    rc, out = _dbsync(tmp_path, sqlite_db)
    assert rc == 0, out
    assert _end_rows() == written
    assert status.check_online_migrations().code == status.Code.SUCCESS
    # Idempotent: nothing found again, nothing changed.
    rc, out = _dbsync(tmp_path, sqlite_db, '--max-count', '5')
    assert rc == 0, out
    assert _end_rows() == written


def test_a_row_whose_job_is_gone_stays_unknown_and_does_not_count(
        env, tmp_path, sqlite_db):
    bitstream = env.add_bitstream().uuid
    job = env.program(bitstream)
    assert env.wait_job(job['uuid']).state == 'succeeded'
    _as_before_0016()
    with session.writer() as s:
        s.execute(sa.delete(models.ProgrammingJobTry))
        s.execute(sa.delete(models.ProgrammingJob))
    rc, out = _dbsync(tmp_path, sqlite_db)
    assert rc == 0, out
    with session.reader() as s:
        assert s.scalars(sa.select(H.seconds).where(
            H.event == 'programming_job.program.end')).all() == [None]


def test_a_failing_migration_exits_2_and_the_others_run(
        sqlite_db, monkeypatch):
    from cyborg_lite.cmd import dbsync
    from cyborg_lite.db import online_migrations

    def broken(max_count):
        raise RuntimeError('cannot')
    ran = []
    monkeypatch.setattr(online_migrations, 'MIGRATIONS', (
        ('broken', broken),
        ('fine', lambda n: ran.append(n) or (0, 0))))
    assert dbsync._online_data_migrations(None) == 2
    assert ran
