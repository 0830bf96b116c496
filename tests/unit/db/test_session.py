"""Engines, URL validation and transactions."""
import threading

import pytest
import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.common import outage
from cyborg_lite.db import inventory
from cyborg_lite.db import models
from cyborg_lite.db.sql import session


@pytest.mark.parametrize('url', ['foo://x/y', 'not a url', 'oracle://u@h/d'])
def test_unknown_db_url_is_a_clear_error(url):
    with pytest.raises(exception.DatabaseURLError) as info:
        session.validate_url(url)
    assert url in str(info.value)


def test_a_bad_db_url_error_hides_the_password():
    with pytest.raises(exception.DatabaseURLError) as info:
        session.validate_url('oracle://cyborg:s3cret@db/cyborg')
    assert 's3cret' not in str(info.value)
    assert 'oracle://cyborg:***@db/cyborg' in str(info.value)


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


def test_sqlite_writers_share_one_kept_connection(db):
    """On SQLite the writers, who take turns anyway, use one connection
    kept checked out; a failed write leaves it without a transaction, and
    dispose_all gives it back. Elsewhere each writer checks one out."""
    engine = session.get_engine()
    checkouts = []

    def count(*_args):
        checkouts.append(1)
    sa.event.listen(engine, 'checkout', count)
    for name in 'cde':
        with session.writer() as s:
            s.add(_device(name))
    with pytest.raises(RuntimeError):
        with session.core_writer() as conn:
            conn.execute(sa.text('DELETE FROM devices'))
            raise RuntimeError('boom')
    with session.core_writer() as conn:
        conn.execute(sa.text("DELETE FROM devices WHERE uuid = 'c'"))
    sa.event.remove(engine, 'checkout', count)
    assert len(checkouts) == (1 if db.startswith('sqlite') else 5)
    with session.reader() as s:
        assert sorted(s.scalars(sa.select(models.Device.uuid))) == ['d', 'e']
    session.dispose_all()
    assert engine.pool.checkedout() == 0


def test_reader_commits_nothing(db):
    with session.reader() as s:
        s.add(_device('b'))
        s.flush()
    with session.reader() as s:
        assert s.scalar(sa.select(sa.func.count(models.Device.id))) == 0


def test_core_reader_commits_nothing(db):
    with session.core_reader() as conn:
        conn.execute(sa.insert(models.Device.__table__).values(
            uuid='0' * 36, type='FPGA', vendor='v', model='m',
            hostname='h', driver_name='d', identity='i', status='enabled',
            health='healthy', version=1))
    with session.reader() as s:
        assert s.scalar(sa.select(sa.func.count(models.Device.id))) == 0


def _second_reader_entered(in_turn, within):
    """Whether a second thread's core_reader(in_turn) opens, within
    ``within`` seconds, while this thread's is open."""
    entered = threading.Event()

    def second():
        with session.core_reader(in_turn=in_turn) as conn:
            conn.execute(sa.text('SELECT 1'))
            entered.set()

    with session.core_reader(in_turn=in_turn) as conn:
        conn.execute(sa.text('SELECT 1'))
        thread = threading.Thread(target=second)
        thread.start()
        overlapped = entered.wait(within)
    thread.join(10)
    assert entered.is_set() and not thread.is_alive()
    return overlapped


def test_readers_in_turn_take_turns_on_sqlite_only(db):
    """On SQLite a reader in turn waits for the one before it (threads
    reading rows at once hand the GIL over at every row); elsewhere, and
    for readers not asking, readers run at once."""
    # Waiting long for an overlap that must come costs nothing when it
    # comes; a busy machine can take seconds to schedule the thread.
    assert _second_reader_entered(in_turn=False, within=30)
    if db.startswith('sqlite'):
        assert not _second_reader_entered(in_turn=True, within=0.5)
    else:
        assert _second_reader_entered(in_turn=True, within=30)


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


def test_a_write_lock_held_elsewhere_is_sqlalchemys_operational_error(
        sqlite_db, conf):
    # Our BEGIN IMMEDIATE goes straight to the driver; past busy_timeout
    # its "database is locked" must still be the error the report retries
    # (db/inventory._RETRYABLE), not sqlite3's own.
    import sqlite3
    conf.set_override('sqlite_busy_timeout_ms', 50, group='database')
    session.dispose_all()
    other = sqlite3.connect(sa.make_url(sqlite_db).database,
                            isolation_level=None)
    other.execute('BEGIN IMMEDIATE')
    try:
        with pytest.raises(sa.exc.OperationalError, match='locked'):
            with session.core_writer():
                pass
        assert issubclass(sa.exc.OperationalError, inventory._RETRYABLE)
        # Readers are not held up by it.
        with session.core_reader() as conn:
            assert conn.exec_driver_sql('SELECT 1').scalar() == 1
    finally:
        other.rollback()
        other.close()
    with session.core_writer() as conn:
        conn.exec_driver_sql('SELECT 1')


# --- MySQL / MariaDB -------------------------------------------------------

@pytest.mark.mariadb
def test_mysql_sessions_are_read_committed_strict_and_utf8mb4(
        mariadb_server, conf):
    # The server itself is left at REPEATABLE READ and a loose sql_mode
    # would be allowed: the engine sets what our queries are written for.
    url = mariadb_server.create_database('t_session_opts')
    try:
        with session.get_engine(url).connect() as conn:
            level, mode, charset = conn.exec_driver_sql(
                'SELECT @@tx_isolation, @@sql_mode, '
                '@@character_set_connection').one()
        assert level == 'READ-COMMITTED'
        assert {'STRICT_ALL_TABLES', 'STRICT_TRANS_TABLES'} <= set(
            mode.split(','))
        assert charset == 'utf8mb4'
    finally:
        session.dispose_all()


@pytest.mark.mariadb
def test_a_too_old_mysql_server_is_refused_at_connect(mariadb_server, conf,
                                                      monkeypatch):
    monkeypatch.setitem(session.MIN_SERVER_VERSIONS, 'MariaDB', (99, 0))
    url = mariadb_server.create_database('t_session_old')
    try:
        with pytest.raises(exception.ConfigError, match='MariaDB >= 99.0'):
            session.get_engine(url).connect()
    finally:
        session.dispose_all()


@pytest.mark.parametrize('version, ok', [
    ('10.5.23-MariaDB-1:10.5.23+maria~ubu2004', False),
    ('10.6.0-MariaDB', True), ('10.11.6-MariaDB-0+deb12u1', True),
    ('5.7.44-log', False), ('8.0.36', True), ('11.4.2-MariaDB', True)])
def test_mysql_server_versions(version, ok):
    if ok:
        session.check_mysql_version(version)
    else:
        with pytest.raises(exception.ConfigError, match='too old'):
            session.check_mysql_version(version)


def test_mysql_url_gets_utf8mb4_unless_told(conf):
    engine = session.create_engine('mysql+pymysql://u:p@127.0.0.1:1/d')
    assert engine.url.query['charset'] == 'utf8mb4'
    engine = session.create_engine(
        'mysql+pymysql://u:p@127.0.0.1:1/d?charset=latin1')
    assert engine.url.query['charset'] == 'latin1'


def _deadlock(url):
    """Two transactions that wait for each other's row: the server kills
    one of them. Returns the error that one got."""
    import threading
    engine = session.get_engine(url)
    with session.writer(url) as s:
        s.add_all([_device('d1'), _device('d2')])
    barrier = threading.Barrier(2, timeout=30)
    errors = []

    def lock(first, second):
        try:
            with engine.connect() as conn, conn.begin():
                for uuid in (first, second):
                    conn.execute(sa.select(models.Device.id).where(
                        models.Device.uuid == uuid).with_for_update())
                    if uuid == first:
                        barrier.wait()
        except sa.exc.DBAPIError as exc:
            errors.append(exc)
    threads = [threading.Thread(target=lock, args=pair)
               for pair in (('d1', 'd2'), ('d2', 'd1'))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(errors) == 1, errors
    return errors[0]


# SQLite has one writer at a time: it cannot deadlock.
@pytest.mark.parametrize('db', [
    pytest.param('postgresql', marks=pytest.mark.postgresql),
    pytest.param('mysql', marks=pytest.mark.mariadb)], indirect=True)
def test_a_deadlock_is_a_conflict_the_report_retry_handles(db):
    # Galera reports a write-set conflict between nodes as this same
    # deadlock error (MySQL 1213), and PostgreSQL a deadlock as 40P01:
    # applying a report must start over, not fail.
    error = _deadlock(db)
    code = getattr(error.orig, 'pgcode', None) or error.orig.args[0]
    assert code in ('40P01', 1213)
    assert isinstance(error, inventory._RETRYABLE)


def test_unreachable_database_is_unavailable_and_logged_once(conf, caplog):
    """Issue 18.4: a refused connection is DatabaseUnavailable (the API's
    503), logged by the outage log, not once per operation."""
    from tests import servers
    url = 'postgresql+psycopg2://nobody@127.0.0.1:%d/x' % servers.free_port()
    conf.set_override('connection', url, group='database')
    caplog.set_level('INFO', logger='cyborg_lite.db.sql.session')
    try:
        for _ in range(20):
            with pytest.raises(exception.DatabaseUnavailable) as info:
                with session.reader() as s:
                    s.execute(sa.text('SELECT 1'))
            assert str(info.value) == ('The database is unavailable; try '
                                       'again later.')
        assert session.OUTAGE.down
        lines = [r.getMessage() for r in caplog.records]
        assert len(lines) == 1 and lines[0].startswith(
            'Database unreachable: ')
        assert 'Connection refused' in lines[0]
    finally:
        session.OUTAGE.succeeded()
        session.dispose_all()


@pytest.fixture
def outage_log(monkeypatch):
    """A fresh outage log (another test's outage may still be settling),
    whose first success ends an outage."""
    fresh = outage.OutageLog('Database', session.LOG, settle=0)
    monkeypatch.setattr(session, 'OUTAGE', fresh)
    return fresh


def test_a_starting_service_waits_for_the_database(conf, caplog,
                                                   outage_log):
    """A conductor started while PostgreSQL is down (restarting, or not up
    yet) waits for it, logging the outage once, instead of exiting."""
    from tests import servers
    server = servers.PostgresServer().start()
    try:
        conf.set_override('connection', server.url(), group='database')
        caplog.set_level('INFO', logger='cyborg_lite.db.sql.session')
        server.stop_server()
        slept = []

        def sleep(seconds):
            slept.append(seconds)
            if len(slept) == 2:
                server.start_server()
        session.wait_until_reachable(5, 7, sleep=sleep)
        assert slept == [7, 7]
        assert not outage_log.down
        lines = [r.getMessage() for r in caplog.records]
        assert [line.split(':')[0] for line in lines] == [
            'Database unreachable', 'Database reachable again']
    finally:
        session.dispose_all()
        server.stop()


@pytest.mark.parametrize('retries, tries', [(0, 1), (2, 3)])
def test_a_database_never_reached_is_unavailable_after_the_retries(
        conf, outage_log, retries, tries):
    from tests import servers
    url = 'postgresql+psycopg2://nobody@127.0.0.1:%d/x' % servers.free_port()
    conf.set_override('connection', url, group='database')
    slept = []
    try:
        with pytest.raises(exception.DatabaseUnavailable):
            session.wait_until_reachable(retries, 3, sleep=slept.append)
        assert slept == [3] * (tries - 1)
        assert outage_log.down
    finally:
        session.dispose_all()


@pytest.mark.parametrize('opener', [session.reader, session.writer,
                                    session.core_reader,
                                    session.core_writer])
def test_connection_lost_under_a_statement_is_unavailable(pg_server, conf,
                                                         monkeypatch, opener):
    url = pg_server.create_database('t_lost_' + opener.__name__)
    conf.set_override('connection', url, group='database')
    monkeypatch.setattr(session.OUTAGE, 'settle', 0)
    try:
        with pytest.raises(exception.DatabaseUnavailable):
            with opener() as s:
                pid = s.scalar(sa.text('SELECT pg_backend_pid()'))
                killer = sa.create_engine(url)
                with killer.connect() as other:
                    other.execute(sa.text('SELECT pg_terminate_backend(:p)'),
                                  {'p': pid})
                killer.dispose()
                s.execute(sa.text('SELECT 1'))
        assert session.OUTAGE.down
        # The next connection works and ends the outage.
        with session.reader() as s:
            assert s.scalar(sa.text('SELECT 1')) == 1
        assert not session.OUTAGE.down
    finally:
        session.OUTAGE.succeeded()
        session.dispose_all()
