"""The ``db`` fixtures copy a template migrated once per worker
(tests/migrated_databases.py): a copy must be what running the revisions
on an empty database makes, and each test's copy its own."""
import contextlib
import sqlite3

import pytest
import sqlalchemy as sa

from cyborg_lite.db import migration
from cyborg_lite.db.sql import session
from tests import migrated_databases


def _fresh(db, request, tmp_path):
    """A database on ``db``'s backend that ran the revisions itself."""
    backend = sa.engine.make_url(db).get_backend_name()
    if backend == 'sqlite':
        url = 'sqlite:///%s' % (tmp_path / 'fresh.sqlite')
    else:
        server = request.getfixturevalue(
            {'postgresql': 'pg_server', 'mysql': 'mariadb_server'}[backend])
        url = server.create_database(migrated_databases.new_name())
    migration.upgrade(url=url)
    return url


def _reflected(conn):
    inspector = sa.inspect(conn)
    tables = {}
    for table in sorted(inspector.get_table_names()):
        tables[table] = (
            [(c['name'], str(c['type']), c['nullable'], c['default'])
             for c in inspector.get_columns(table)],
            inspector.get_pk_constraint(table),
            sorted(map(repr, inspector.get_foreign_keys(table))),
            sorted(map(repr, inspector.get_indexes(table))),
            sorted(map(repr, inspector.get_unique_constraints(table))),
            sorted(map(repr, inspector.get_check_constraints(table))),
            inspector.get_table_options(table))
    return tables


def _lines(sql):
    return sorted(line.strip().rstrip(',') for line in
                  (sql or '').splitlines())


def _printed(conn):
    """The schema as the server prints it. A batch migration on SQLite
    writes a recreated table's constraints in no fixed order: each
    statement's lines are compared as a set."""
    dialect = conn.dialect.name
    if dialect == 'sqlite':
        return sorted((kind, name, _lines(sql)) for kind, name, sql in
                      conn.exec_driver_sql(
                          'SELECT type, name, sql FROM sqlite_master'))
    if dialect == 'mysql':
        tables = [row[0] for row in conn.exec_driver_sql('SHOW TABLES')]
        return [conn.exec_driver_sql('SHOW CREATE TABLE `%s`' % t).one()[1]
                for t in sorted(tables)]
    return sorted(tuple(row) for row in conn.exec_driver_sql(
        'SELECT sequencename, last_value FROM pg_sequences'))


def _snapshot(url):
    """Every table's definition and rows."""
    engine = session.get_engine(url)
    with contextlib.closing(engine.connect()) as conn:
        rows = {}
        for table in sa.inspect(conn).get_table_names():
            rows[table] = sorted(tuple(row) for row in conn.exec_driver_sql(
                'SELECT * FROM %s' % table))
        return _reflected(conn), _printed(conn), rows


def test_a_copy_is_what_the_revisions_make(db, request, tmp_path):
    copied = _snapshot(db)

    assert copied == _snapshot(_fresh(db, request, tmp_path))
    assert copied[2]['alembic_version'] == [(migration.head(),)]
    assert migration.current(url=db) == migration.head()


def test_each_copy_is_a_database_of_its_own(db, request, tmp_path):
    with session.get_engine(db).begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO device_profiles (uuid, name, profile_json, created_at)"
            " VALUES ('8e0b3c4e-0000-4000-8000-000000000001', 'mine', '[]',"
            " CURRENT_TIMESTAMP)"))
    backend = sa.engine.make_url(db).get_backend_name()
    other = migrated_databases.new_database(backend, request,
                                            str(tmp_path / 'other.sqlite'))

    assert other != db
    with session.get_engine(other).connect() as conn:
        assert conn.exec_driver_sql(
            'SELECT COUNT(*) FROM device_profiles').scalar() == 0


@pytest.mark.parametrize('mode', ['delete', 'wal'])
def test_a_sqlite_copy_is_in_the_journal_mode_of_its_test(conf, tmp_path,
                                                          mode):
    # As a file the test migrated itself: in WAL mode before a connection
    # of the service opens it if the test's configuration says so (a
    # first connection that must switch modes needs the file to itself).
    conf.set_override('sqlite_journal_mode', 'wal', group='database')
    template = migrated_databases.SQLiteTemplate(tmp_path)
    conf.set_override('sqlite_journal_mode', mode, group='database')
    copy = tmp_path / 'copy.sqlite'
    template.copy(copy)
    with contextlib.closing(sqlite3.connect(copy)) as conn:
        assert conn.execute('PRAGMA journal_mode').fetchone()[0] == mode
