"""Revision 0004 (deployables.device_state) on SQLite, PostgreSQL and
MariaDB: a region a Bound ARQ holds when it runs starts allocated, every
other one available; going back removes the columns. Either way every row
that refers to a deployable survives (on SQLite the table is copied and
dropped, see db/migration._migrating)."""
import sqlalchemy as sa
from alembic import script as alembic_script

from cyborg_lite.db import migration
from cyborg_lite.db.sql import session

CLEANING_COLUMNS = {'device_state', 'device_state_at', 'cleaning_uuid',
                    'cleaning_started_at', 'cleaning_attempts',
                    'cleaning_error'}


def _before_0004():
    scripts = alembic_script.ScriptDirectory.from_config(
        migration._config('sqlite://'))
    return scripts.get_revision('0004').down_revision


def _columns(url):
    return {c['name'] for c in sa.inspect(
        session.get_engine(url=url)).get_columns('deployables')}


def _handles(url):
    with session.get_engine(url=url).connect() as conn:
        return conn.execute(sa.text(
            'SELECT count(*) FROM attach_handles')).scalar()


def _insert_regions(url):
    """Two regions of one device; the first has its handle in use."""
    with session.get_engine(url=url).begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO devices (id, uuid, type, vendor, model, hostname, "
            "driver_name, identity, status, health, version, created_at) "
            "VALUES (1, 'd1', 'FPGA', 'v', 'm', 'h', 'fake', 'i', "
            "'enabled', 'healthy', 1, CURRENT_TIMESTAMP)"))
        for dep_id in (1, 2):
            conn.execute(sa.text(
                "INSERT INTO deployables (id, uuid, device_id, name, "
                "num_accelerators, driver_name, local_memory_mb, version, "
                "created_at) VALUES (:id, :uuid, 1, :name, 1, 'fake', 0, 1, "
                "CURRENT_TIMESTAMP)"),
                {'id': dep_id, 'uuid': 'r%d' % dep_id,
                 'name': 'h_i_region%d' % dep_id})
            conn.execute(sa.text(
                "INSERT INTO attach_handles (uuid, deployable_id, in_use, "
                "attach_type, attach_info, version, created_at) VALUES "
                "(:uuid, :dep, :in_use, 'PCI', '{}', 1, CURRENT_TIMESTAMP)"),
                {'uuid': 'ah%d' % dep_id, 'dep': dep_id,
                 'in_use': dep_id == 1})


def test_held_regions_start_allocated_and_the_rest_available(db_url, conf):
    migration.upgrade(_before_0004(), url=db_url)
    assert not CLEANING_COLUMNS & _columns(db_url)
    _insert_regions(db_url)

    migration.upgrade(url=db_url)

    with session.get_engine(url=db_url).connect() as conn:
        rows = dict(conn.execute(sa.text(
            'SELECT uuid, device_state FROM deployables')).all())
        attempts = set(conn.execute(sa.text(
            'SELECT cleaning_attempts FROM deployables')).scalars())
    assert rows == {'r1': 'allocated', 'r2': 'available'}
    assert attempts == {0}
    assert _handles(db_url) == 2


def test_downgrade_removes_the_columns_and_keeps_the_rows(db_url, conf):
    migration.upgrade(url=db_url)
    _insert_regions(db_url)

    migration.downgrade(_before_0004(), url=db_url)

    assert not CLEANING_COLUMNS & _columns(db_url)
    with session.get_engine(url=db_url).connect() as conn:
        assert conn.execute(sa.text(
            'SELECT count(*) FROM deployables')).scalar() == 2
    assert _handles(db_url) == 2
    migration.upgrade(url=db_url)
    assert CLEANING_COLUMNS <= _columns(db_url)
