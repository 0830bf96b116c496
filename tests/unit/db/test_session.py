"""Engines, URL validation and transactions."""
import pytest
import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.db import models
from cyborg_lite.db import session


@pytest.mark.parametrize('url', ['foo://x/y', 'not a url', 'oracle://u@h/d'])
def test_unknown_db_url_is_a_clear_error(url):
    with pytest.raises(exception.DatabaseURLError) as info:
        session.validate_url(url)
    assert url in str(info.value)


def test_sqlite_in_missing_directory_is_a_clear_error(tmp_path, conf):
    url = 'sqlite:///%s/nope/db.sqlite' % tmp_path
    with pytest.raises(exception.DatabaseURLError, match='does not exist'):
        session.create_engine(url)


def _device(uuid):
    return models.Device(uuid=uuid, type='GPU', vendor='10de', model='m',
                         hostname='h', driver_name='nvidia', identity=uuid)


def test_writer_rolls_back_everything_on_error(db):
    with pytest.raises(RuntimeError):
        with session.writer() as s:
            s.add(_device('a'))
            s.flush()
            raise RuntimeError('boom')
    with session.reader() as s:
        assert s.scalar(sa.select(sa.func.count(models.Device.id))) == 0


def test_reader_commits_nothing(db):
    with session.reader() as s:
        s.add(_device('b'))
        s.flush()
    with session.reader() as s:
        assert s.scalar(sa.select(sa.func.count(models.Device.id))) == 0


def test_stale_version_is_detected(db):
    with session.writer() as s:
        s.add(_device('c'))
    with session.reader() as s:
        stale = s.scalars(sa.select(models.Device)).one()
    with session.writer() as s:
        fresh = s.scalars(sa.select(models.Device)).one()
        fresh.model = 'new'
    with pytest.raises(sa.orm.exc.StaleDataError):
        with session.writer() as s:
            stale = s.merge(stale, load=False)
            stale.model = 'lost update'
    with session.reader() as s:
        assert s.scalars(sa.select(models.Device)).one().model == 'new'


@pytest.mark.parametrize('mode, journal, synchronous', [
    ('wal', 'wal', 1),        # synchronous NORMAL
    ('delete', 'delete', 2),  # synchronous FULL, SQLite's default
])
def test_sqlite_journal_mode_follows_config(conf, tmp_path, mode, journal,
                                            synchronous):
    conf.set_override('sqlite_journal_mode', mode, group='database')
    url = 'sqlite:///%s/j.sqlite' % tmp_path
    try:
        with session.get_engine(url).connect() as conn:
            assert conn.exec_driver_sql(
                'PRAGMA journal_mode').scalar() == journal
            assert conn.exec_driver_sql(
                'PRAGMA synchronous').scalar() == synchronous
    finally:
        session.dispose_all()


def test_writers_of_one_process_queue_on_a_lock(db, conf):
    # Many threads writing at once all succeed (none gives up in SQLite's
    # busy handler) and every row lands.
    import threading
    errors = []

    def write(i):
        try:
            with session.writer() as s:
                s.add(_device('t%d' % i))
        except Exception as exc:  # collected for the assertion
            errors.append(exc)
    threads = [threading.Thread(target=write, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with session.reader() as s:
        assert s.scalar(sa.select(sa.func.count(models.Device.id))) == 20
