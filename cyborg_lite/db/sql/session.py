"""Engines and transactions.

``writer()`` and ``reader()`` are the only ways to get a session::

    with session.writer() as s:
        s.add(models.Device(...))

A writer commits when the block ends and rolls back on any exception, so a
failed operation leaves stored state untouched.

A database that cannot be reached (connection refused, or lost under a
statement) raises DatabaseUnavailable (503 at the API) and is logged by
``OUTAGE``: once when it starts, at most every OUTAGE_LOG_INTERVAL
seconds while it lasts, and once when a connection succeeds again.
"""
import contextlib
import logging
import os
import re
import threading
import time

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm

from cyborg_lite.common import exception
from cyborg_lite.common import outage
from cyborg_lite.conf import CONF

LOG = logging.getLogger(__name__)
OUTAGE_LOG_INTERVAL = 30
OUTAGE = outage.OutageLog('Database', LOG, interval=OUTAGE_LOG_INTERVAL)

SUPPORTED_BACKENDS = ('sqlite', 'postgresql', 'mysql')

_lock = threading.Lock()
_engines = {}
# One writer lock per SQLite engine, see _transaction; one lock per SQLite
# engine for the readers that take turns, see core_reader.
_sqlite_writer_locks = {}
_sqlite_turn_locks = {}
# The connection each SQLite engine's writers share, see _checked_out.
_sqlite_writer_connections = {}


def validate_url(url):
    """Return a SQLAlchemy URL or raise DatabaseURLError naming the URL
    (its password masked: the error goes to logs and terminals)."""
    try:
        parsed = sa.engine.make_url(url)
    except sa_exc.ArgumentError as exc:
        raise exception.DatabaseURLError(url=url, reason=str(exc))
    shown = parsed.render_as_string(hide_password=True)
    if parsed.get_backend_name() not in SUPPORTED_BACKENDS:
        raise exception.DatabaseURLError(
            url=shown, reason='unknown scheme %r' % parsed.drivername)
    try:
        parsed.get_dialect()
    except sa_exc.NoSuchModuleError as exc:
        raise exception.DatabaseURLError(url=shown, reason=str(exc))
    return parsed


def _sqlite_pragmas(dbapi_conn, _record):
    cursor = dbapi_conn.cursor()
    cursor.execute('PRAGMA foreign_keys=ON')
    cursor.execute('PRAGMA busy_timeout=%d'
                   % CONF.database.sqlite_busy_timeout_ms)
    if CONF.database.sqlite_journal_mode == 'wal':
        cursor.execute('PRAGMA journal_mode=WAL')
        cursor.execute('PRAGMA synchronous=NORMAL')
    cursor.close()


def _sqlite_begin(conn):
    # NOTE: pysqlite's own BEGIN handling defers the write lock until the
    # first write, letting two writers read the same row and both update
    # it; BEGIN IMMEDIATE serialises writers as PostgreSQL's row locks do.
    writer = conn.get_execution_options().get('cyborg_lite_writer')
    statement = 'BEGIN IMMEDIATE' if writer else 'BEGIN'
    # NOTE: sent on the driver's connection: through exec_driver_sql (an
    # execution context, cursor events, a result) these two words cost
    # as much as the INSERT they open. A failure ("database is locked"
    # past busy_timeout) is still SQLAlchemy's OperationalError.
    dbapi_error = conn.dialect.dbapi.Error
    try:
        conn.connection.driver_connection.execute(statement)
    except dbapi_error as exc:
        raise sa_exc.DBAPIError.instance(statement, (), exc,
                                         dbapi_error) from exc


# MySQL/MariaDB error codes of a CHECK constraint refusing a row (MariaDB
# ER_CONSTRAINT_FAILED, MySQL 8 ER_CHECK_CONSTRAINT_VIOLATED): the drivers
# report them as OperationalError, the other backends as IntegrityError.
_MYSQL_CHECK_FAILED = (4025, 3819)
# What a MySQL session is set to on connect: the strict mode oslo.db uses
# (a too-long string or a bad value fails instead of being truncated).
MYSQL_SQL_MODE = 'TRADITIONAL'
# PostgreSQL's default; the conditional updates and row locks are written
# for it. MySQL's REPEATABLE READ would make a locking read see rows its
# plain reads did not (see docs/deployment.md).
MYSQL_ISOLATION_LEVEL = 'READ COMMITTED'


# SELECT ... FOR UPDATE SKIP LOCKED (handle claims, reapers) exists from
# MariaDB 10.6 and MySQL 8.0 on; older servers would fail every claim.
MIN_SERVER_VERSIONS = {'MariaDB': (10, 6), 'MySQL': (8, 0)}


def check_mysql_version(version):
    """Raise ConfigError for a server too old for our queries.

    ``version`` is what SELECT VERSION() says, e.g. 10.11.6-MariaDB-0+deb12u1.
    """
    kind = 'MariaDB' if 'mariadb' in version.lower() else 'MySQL'
    found = tuple(int(n) for n in
                  re.match(r'(\d+)\.(\d+)', version).groups())
    wanted = MIN_SERVER_VERSIONS[kind]
    if found < wanted:
        raise exception.ConfigError(
            reason='%s %s is too old: cyborg_lite needs %s >= %d.%d (for '
                   'SELECT ... FOR UPDATE SKIP LOCKED)'
                   % (kind, version, kind, wanted[0], wanted[1]))


def _mysql_session(dbapi_conn, _record):
    cursor = dbapi_conn.cursor()
    try:
        cursor.execute('SELECT VERSION()')
        check_mysql_version(cursor.fetchone()[0])
        cursor.execute("SET SESSION sql_mode = '%s'" % MYSQL_SQL_MODE)
    finally:
        cursor.close()


def _mysql_check_is_integrity(context):
    orig = context.original_exception
    if (isinstance(context.sqlalchemy_exception, sa_exc.OperationalError)
            and getattr(orig, 'args', None)
            and orig.args[0] in _MYSQL_CHECK_FAILED):
        raise sa_exc.IntegrityError(context.statement, context.parameters,
                                    orig) from orig


def _create_mysql_engine(parsed, kwargs):
    if 'charset' not in parsed.query:
        parsed = parsed.update_query_dict({'charset': 'utf8mb4'})
    engine = sa.create_engine(parsed, isolation_level=MYSQL_ISOLATION_LEVEL,
                              **kwargs)
    sa.event.listen(engine, 'connect', _mysql_session)
    sa.event.listen(engine, 'handle_error', _mysql_check_is_integrity)
    return engine


def create_engine(url):
    parsed = validate_url(url)
    kwargs = {'echo': CONF.database.connection_debug, 'future': True}
    if parsed.get_backend_name() == 'sqlite':
        database = parsed.database
        if database and database != ':memory:':
            directory = os.path.dirname(os.path.abspath(database))
            if not os.path.isdir(directory):
                raise exception.DatabaseURLError(
                    url=url, reason='directory %s does not exist' % directory)
        kwargs['connect_args'] = {'check_same_thread': False}
        engine = sa.create_engine(parsed, **kwargs)
        sa.event.listen(engine, 'connect', _sqlite_pragmas)

        @sa.event.listens_for(engine, 'connect')
        def _no_pysqlite_begin(dbapi_conn, _record):
            dbapi_conn.isolation_level = None

        sa.event.listen(engine, 'begin', _sqlite_begin)
        return engine
    kwargs.update(pool_size=CONF.database.pool_size, pool_pre_ping=True)
    if parsed.get_backend_name() == 'mysql':
        return _create_mysql_engine(parsed, kwargs)
    return sa.create_engine(parsed, **kwargs)


def get_engine(url=None):
    url = url or CONF.database.connection
    engine = _engines.get(url)
    if engine is not None:
        return engine
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _engines[url] = create_engine(url)
            if engine.dialect.name == 'sqlite':
                _sqlite_writer_locks[engine] = threading.RLock()
                _sqlite_turn_locks[engine] = threading.Lock()
        return engine


def dispose_all():
    """Close every pooled connection (tests, and after fork)."""
    with _lock:
        for conn in _sqlite_writer_connections.values():
            conn.close()
        _sqlite_writer_connections.clear()
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()
        _sqlite_writer_locks.clear()
        _sqlite_turn_locks.clear()


@contextlib.contextmanager
def _transaction(url, is_writer, core=False):
    engine = get_engine(url)
    # NOTE: SQLite has one writer at a time anyway; threads of this process
    # queue on a lock instead of polling in SQLite's busy handler, whose
    # sleeps (up to 100 ms) made write latency p99 4-8x worse under
    # concurrency (bench/sqlite_writers.py). Other processes still meet
    # busy_timeout. RLock: a nested writer in one thread behaves as before.
    lock = _sqlite_writer_locks.get(engine) if is_writer else None
    with lock or contextlib.nullcontext():
        with _connection_transaction(engine, is_writer) as conn:
            if core:
                yield conn
            else:
                with _orm_session(conn, is_writer) as s:
                    yield s


def _unavailable(exc):
    detail = ' '.join(str(getattr(exc, 'orig', None) or exc).split())
    OUTAGE.failed(detail)
    return exception.DatabaseUnavailable()


def _connect(engine):
    try:
        conn = engine.connect()
    except sa_exc.DBAPIError as exc:
        # NOTE: with pool_pre_ping, a checkout has reached the server (or
        # opened a new connection): a failure here is the server's.
        raise _unavailable(exc) from exc
    OUTAGE.succeeded()
    return conn


def wait_until_reachable(retries, interval, url=None, sleep=time.sleep):
    """Return once a connection to the database opens, trying again every
    ``interval`` s up to ``retries`` more times (-1: forever); then
    DatabaseUnavailable. For a service starting: a database that is
    restarting, or not up yet, must not make it exit. The outage log
    says it once, and again when the database is back."""
    tries = 0
    while True:
        try:
            _connect(get_engine(url)).close()
            return
        except exception.DatabaseUnavailable:
            if 0 <= retries <= tries:
                raise
            tries += 1
            sleep(interval)


def _as_writer(conn):
    return conn.execution_options(cyborg_lite_writer=True)


def _kept_sqlite_writer(engine):
    """The connection kept checked out for ``engine``'s writers, who hold
    the writer lock while they use it; None where there is none (not
    SQLite) or it is in use (a writer nested in another)."""
    if engine not in _sqlite_writer_locks:
        return None
    conn = _sqlite_writer_connections.get(engine)
    if conn is not None and conn.invalidated:
        conn.close()
        conn = None
    if conn is None:
        conn = _sqlite_writer_connections[engine] = _as_writer(
            _connect(engine))
    return None if conn.in_transaction() else conn


@contextlib.contextmanager
def _checked_out(engine, is_writer):
    # NOTE: SQLite's writers take turns on the writer lock anyway; one
    # connection kept for them spares each write the pool's checkout and
    # checkin (a twelfth of a one-row POST's time).
    kept = _kept_sqlite_writer(engine) if is_writer else None
    if kept is not None:
        yield kept
        return
    with _connect(engine) as conn:
        yield _as_writer(conn) if is_writer else conn


@contextlib.contextmanager
def _connection_transaction(engine, is_writer):
    try:
        with _checked_out(engine, is_writer) as conn:
            with conn.begin() as txn:
                yield conn
                if not is_writer:
                    txn.rollback()
    except sa_exc.DBAPIError as exc:
        if exc.connection_invalidated:
            raise _unavailable(exc) from exc
        raise


@contextlib.contextmanager
def _orm_session(conn, is_writer):
    with orm.Session(bind=conn, expire_on_commit=False,
                     autoflush=True) as s:
        yield s
        if is_writer:
            s.flush()


# Per thread: a list of (callback, args) for each writer block open, the
# innermost last (see after_commit).
_after_commit = threading.local()


@contextlib.contextmanager
def _running_after_commit():
    stack = _after_commit.__dict__.setdefault('stack', [])
    callbacks = []
    stack.append(callbacks)
    try:
        yield
    finally:
        stack.pop()
    # Only reached once the block committed (an exception skips it).
    for func, args in callbacks:
        try:
            func(*args)
        except Exception:
            LOG.exception('After-commit call %r failed', func)


def after_commit(func, *args):
    """Call ``func(*args)`` once the innermost writer block of this thread
    has committed, and never if it rolls back: what is told to others
    (notifications) then says only what happened."""
    try:
        _after_commit.stack[-1].append((func, args))
    except (AttributeError, IndexError):
        raise RuntimeError('after_commit outside a writer block')


@contextlib.contextmanager
def writer(url=None):
    """A session in a read-write transaction committed at block end.

    Any exception rolls the whole transaction back.
    """
    with _running_after_commit(), _transaction(url, True) as s:
        yield s


@contextlib.contextmanager
def reader(url=None):
    """A session for reads; nothing it does is committed."""
    with _transaction(url, False) as s:
        yield s


@contextlib.contextmanager
def snapshot_reader(url=None):
    """reader() whose statements all see one snapshot of the database
    (an explanation counting many tables must not mix two moments).
    SQLite's read transaction is one already; PostgreSQL's and MySQL's
    READ COMMITTED is not, so the transaction is made REPEATABLE READ
    before its first read (read only: no lock is taken)."""
    with _transaction(url, False) as s:
        if s.connection().dialect.name != 'sqlite':
            s.connection().exec_driver_sql(
                'SET TRANSACTION ISOLATION LEVEL REPEATABLE READ')
        yield s


@contextlib.contextmanager
def core_writer(url=None):
    """writer() as a Core connection, for plain statements and rows: no
    ORM Session to build and tear down (a tenth of a millisecond, most of
    a one-statement request's database time)."""
    with _running_after_commit(), _transaction(url, True, core=True) as conn:
        yield conn


@contextlib.contextmanager
def statement_writer(url=None):
    """core_writer for a block whose statements may each be a transaction
    of its own, as they are on SQLite: no BEGIN IMMEDIATE before them and
    no COMMIT after (the sqlite3 connections are in autocommit mode, see
    create_engine), each a call that lets go of the GIL and, with other
    threads waiting for it, a hand-over and back. For one write, or reads
    and then one write whose constraints check again what the reads found
    (a new ARQ's profile: its foreign key); the block holds the writer
    lock, so no other writer of this process comes in between. Only for
    statements run on the driver's connection (db/sql/direct_statement.py): a
    Core execute begins a transaction, committed at block end. Elsewhere
    the same as core_writer, one transaction."""
    engine = get_engine(url)
    lock = _sqlite_writer_locks.get(engine)
    if lock is None:
        with core_writer(url) as conn:
            yield conn
        return
    with lock, _checked_out(engine, True) as conn:
        try:
            yield conn
        except BaseException:
            if conn.in_transaction():
                conn.rollback()
            raise
        if conn.in_transaction():
            conn.commit()


@contextlib.contextmanager
def core_reader(url=None, in_turn=False):
    """reader() as a Core connection (see core_writer).

    ``in_turn``: on SQLite, one such reader of the process at a time. The
    sqlite3 module lets go of the GIL at every row it steps to, so threads
    reading many rows at once hand the GIL to each other at every row; in
    turn, four threads reading a host's inventory (db/inventory_diff.py)
    did the same work in 1.0-1.1 ms a host instead of 1.6-1.8. Other
    databases fetch a result in one round trip: no effect there.
    """
    lock = _sqlite_turn_locks.get(get_engine(url)) if in_turn else None
    with lock or contextlib.nullcontext():
        with _transaction(url, False, core=True) as conn:
            yield conn
