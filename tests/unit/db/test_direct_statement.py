"""db/sql/direct_statement.py and session.statement_writer: on SQLite the
statements run on the sqlite3 connection, elsewhere through Core; either
way a row reads back as Core and the ORM wrote and read it, and a failed
statement writes nothing."""
import datetime

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cyborg_lite.common import uuids
from cyborg_lite.db import models
from cyborg_lite.db.sql import direct_statement
from cyborg_lite.db.sql import session

PROFILES = models.DeviceProfile.__table__
ARQS = models.AcceleratorRequest.__table__
# Microseconds kept: SQLite stores the time as text, Core's way.
WHEN = datetime.datetime(2026, 12, 4, 20, 1, 2, 345678)
INSERT = direct_statement.DirectStatement(PROFILES.insert().values(
    {key: sa.bindparam(key) for key in
     ('uuid', 'name', 'project_id', 'profile_json', 'created_at')}))
BY_NAME = direct_statement.DirectStatement(
    sa.select(PROFILES).where(PROFILES.c.name == sa.bindparam('name')))


def _profile(name, **values):
    row = {'uuid': uuids.new(), 'name': name,
           'project_id': None, 'profile_json': '[]', 'created_at': WHEN}
    row.update(values)
    return row


def _count(table):
    with session.core_reader() as conn:
        return conn.scalar(sa.select(sa.func.count()).select_from(table))


def test_a_row_written_reads_back_as_core_reads_it(db):
    with session.statement_writer() as conn:
        assert INSERT.rows(conn, _profile('one', project_id='p1')) == []
    with session.core_writer() as conn:
        conn.execute(INSERT.core, _profile('twin', uuid='twin'))
    with session.core_reader() as conn:
        direct = BY_NAME.rows(conn, {'name': 'one'})
        core = conn.execute(BY_NAME.core, {'name': 'one'}).all()
        twin = conn.execute(BY_NAME.core, {'name': 'twin'}).one()
    assert len(direct) == 1
    assert direct[0]._asdict() == core[0]._asdict()
    # MariaDB's DATETIME keeps no microseconds, the others all of them.
    assert direct[0].created_at == twin.created_at
    assert direct[0].created_at.replace(microsecond=0) == \
        WHEN.replace(microsecond=0)
    assert direct[0].project_id == 'p1' and direct[0].id is not None
    with session.core_reader() as conn:
        assert BY_NAME.rows(conn, {'name': 'nobody'}) == []


def test_a_unique_value_taken_is_cores_integrity_error(db):
    with session.statement_writer() as conn:
        INSERT.rows(conn, _profile('one'))
    with pytest.raises(sa_exc.IntegrityError):
        with session.statement_writer() as conn:
            INSERT.rows(conn, _profile('one', uuid='another-uuid'))
    assert _count(PROFILES) == 1
    # The writer's connection is usable after the failure.
    with session.statement_writer() as conn:
        INSERT.rows(conn, _profile('two'))
    assert _count(PROFILES) == 2


def test_a_value_its_type_refuses_is_a_statement_error(db):
    with session.statement_writer() as conn:
        INSERT.rows(conn, _profile('one'))
    with session.core_reader() as conn:
        profile_id = BY_NAME.rows(conn, {'name': 'one'})[0].id
    insert_arq = direct_statement.DirectStatement(ARQS.insert().values(
        {key: sa.bindparam(key) for key in
         ('uuid', 'state', 'device_profile_id', 'device_profile_group_id',
          'version', 'created_at')}))
    arq = {'uuid': 'a', 'state': 'NoSuchState', 'device_profile_id':
           profile_id, 'device_profile_group_id': 0, 'version': 1,
           'created_at': WHEN}
    with pytest.raises(sa_exc.StatementError):
        with session.core_writer() as conn:
            insert_arq.rows(conn, [arq])
    with pytest.raises(sa_exc.StatementError):
        with session.core_writer() as conn:
            insert_arq.rows(conn, [dict(arq, state='Initial')]
                            + [{'uuid': 'b'}])
    assert _count(ARQS) == 0
    with session.core_writer() as conn:
        insert_arq.rows(conn, [dict(arq, uuid=u, state='Initial')
                               for u in 'abc'])
        assert insert_arq.rows(conn, []) == []
    assert _count(ARQS) == 3


def test_a_failure_later_in_the_block_undoes_the_statement(db):
    with pytest.raises(RuntimeError):
        with session.core_writer() as conn:
            INSERT.rows(conn, _profile('one'))
            raise RuntimeError('after the insert')
    assert _count(PROFILES) == 0


def test_sqlite_sends_one_statement_without_begin_or_commit(sqlite_db):
    sent = []
    engine = session.get_engine()
    with session.statement_writer() as conn:
        sqlite = conn.connection.driver_connection
        sqlite.set_trace_callback(sent.append)
        try:
            INSERT.rows(conn, _profile('one'))
        finally:
            sqlite.set_trace_callback(None)
        assert not conn.in_transaction()
    assert [s.split()[0] for s in sent] == ['INSERT']
    assert _count(PROFILES) == 1
    assert engine is session.get_engine()


def test_a_core_statement_in_a_statement_writer_is_committed(sqlite_db):
    with session.statement_writer() as conn:
        conn.execute(PROFILES.insert(), _profile('one'))
    assert _count(PROFILES) == 1
    with pytest.raises(RuntimeError):
        with session.statement_writer() as conn:
            conn.execute(PROFILES.insert(), _profile('two'))
            raise RuntimeError('after the insert')
    assert _count(PROFILES) == 1
