"""Migrated databases for tests: migrate once per worker, copy per test.

Running the alembic revisions costs 0.4-0.9 s on SQLite, 0.3-0.9 s on
PostgreSQL and 1-5 s on MariaDB, and some 2,000 tests need a migrated
database. Each backend's template is migrated once per pytest process
(each xdist worker has its own servers), and every test gets a new
database copied from it: as empty and as migrated as one that ran the
revisions itself (tests/unit/db/test_migrated_databases.py compares the
two). The tests of the migrations themselves take ``db_url`` and run them.
"""
import contextlib
import os
import shutil
import sqlite3
import uuid

from cyborg_lite.db import migration
from cyborg_lite.db.sql import session

TEMPLATE_NAME = 'migrated_template'


def _migrate(url):
    migration.upgrade(url=url)
    # Only this URL's engine: a copy needs the template closed (SQLite's
    # WAL written back, no PostgreSQL session on it), and other engines
    # may be in use by the fixtures of the running module.
    session.get_engine(url).dispose()


# The session fixtures (tests/conftest.py) of each backend's template.
TEMPLATE_FIXTURES = {'sqlite': 'sqlite_template', 'postgresql': 'pg_template',
                     'mysql': 'mariadb_template'}


def new_database(kind, request, sqlite_path=None):
    """The URL of a new migrated database on backend ``kind`` (a file at
    ``sqlite_path`` on SQLite), copied from the worker's template."""
    template = request.getfixturevalue(TEMPLATE_FIXTURES[kind])
    if kind == 'sqlite':
        return template.copy(sqlite_path)
    return template.copy()


def new_name():
    return 't_' + uuid.uuid4().hex[:16]


class SQLiteTemplate:
    """A migrated SQLite file; ``copy(path)`` is a byte copy of it, in
    the journal mode the test configured."""

    def __init__(self, directory):
        self.path = os.path.join(str(directory), TEMPLATE_NAME + '.sqlite')
        _migrate('sqlite:///' + self.path)
        _set_journal_mode(self.path, 'delete')

    def copy(self, path):
        shutil.copyfile(self.path, str(path))
        # A file the test migrated itself is in WAL mode from the first
        # connection on if its [database]sqlite_journal_mode says so; a
        # first connection that had to switch it would need the database
        # to itself.
        from cyborg_lite.conf import CONF
        if CONF.database.sqlite_journal_mode == 'wal':
            _set_journal_mode(path, 'wal')
        return 'sqlite:///%s' % path


def _set_journal_mode(path, mode):
    with contextlib.closing(sqlite3.connect(str(path))) as conn:
        conn.execute('PRAGMA journal_mode=%s' % mode)


class PostgresTemplate:
    """A migrated database on ``server``; a copy is ``CREATE DATABASE ...
    TEMPLATE`` it (0.05 s where the revisions take 0.3-0.9 s)."""

    def __init__(self, server):
        self.server = server
        _migrate(server.create_database(TEMPLATE_NAME))

    def copy(self):
        return self.server.create_database(new_name(), template=TEMPLATE_NAME)


class MariaDBTemplate:
    """A migrated database on ``server``; a copy is a new database with
    each table created from the template's ``SHOW CREATE TABLE`` (foreign
    keys, checks, indexes, AUTO_INCREMENT and collations included) and
    the template's rows (alembic_version) copied: 0.1 s where the
    revisions take 1-5 s. MariaDB has no CREATE DATABASE ... TEMPLATE,
    and ``CREATE TABLE ... LIKE`` drops the foreign keys."""

    def __init__(self, server):
        self.server = server
        _migrate(server.create_database(TEMPLATE_NAME))
        self.tables = []
        self.with_rows = []
        conn = server.connect(TEMPLATE_NAME)
        try:
            with conn.cursor() as cursor:
                self._read_template(cursor)
        finally:
            conn.close()

    def _read_template(self, cursor):
        cursor.execute('SHOW FULL TABLES')
        for name, kind in cursor.fetchall():
            if kind != 'BASE TABLE':
                raise RuntimeError('%s is a %s: MariaDBTemplate copies '
                                   'tables only' % (name, kind))
            cursor.execute('SHOW CREATE TABLE `%s`' % name)
            self.tables.append(cursor.fetchone()[1])
            cursor.execute('SELECT 1 FROM `%s` LIMIT 1' % name)
            if cursor.fetchone():
                self.with_rows.append(name)
        for what in ('TRIGGERS', 'PROCEDURE STATUS WHERE Db = DATABASE()',
                     'FUNCTION STATUS WHERE Db = DATABASE()'):
            cursor.execute('SHOW ' + what)
            if cursor.fetchall():
                raise RuntimeError('the migrated schema has %s: '
                                   'MariaDBTemplate copies tables only'
                                   % what.split()[0].lower())

    def copy(self):
        name = new_name()
        url = self.server.create_database(name)
        conn = self.server.connect(name)
        try:
            with conn.cursor() as cursor:
                # The tables refer to each other: create them in any order.
                cursor.execute('SET FOREIGN_KEY_CHECKS=0')
                for statement in self.tables:
                    cursor.execute(statement)
                for table in self.with_rows:
                    cursor.execute('INSERT INTO `%s` SELECT * FROM `%s`.`%s`'
                                   % (table, TEMPLATE_NAME, table))
            conn.commit()
        finally:
            conn.close()
        return url
