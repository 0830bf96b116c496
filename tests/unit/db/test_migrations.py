"""The migrated schema equals the models, on SQLite, PostgreSQL and MariaDB."""
import logging

import pytest
import sqlalchemy as sa
from alembic import autogenerate
from alembic import migration as alembic_migration

from cyborg_lite.db import attach_handles
from cyborg_lite.db import migration
from cyborg_lite.db import models
from cyborg_lite.db.sql import session


def _diff(url):
    with session.get_engine(url).connect() as conn:
        ctx = alembic_migration.MigrationContext.configure(
            conn, opts={'compare_type': True})
        return autogenerate.compare_metadata(ctx, models.Base.metadata)


def test_migrated_schema_matches_models(db_url, conf):
    migration.upgrade(url=db_url)
    assert migration.current(url=db_url) == migration.head()
    assert _diff(db_url) == []


def test_upgrade_twice_is_a_no_op(db_url, conf):
    migration.upgrade(url=db_url)
    migration.upgrade(url=db_url)
    assert migration.current(url=db_url) == migration.head()


def test_downgrade_to_base_and_back(db_url, conf):
    migration.upgrade(url=db_url)
    migration.downgrade('base', url=db_url)
    assert migration.current(url=db_url) is None
    tables = sa.inspect(session.get_engine(url=db_url)).get_table_names()
    assert set(tables) <= {'alembic_version'}
    migration.upgrade(url=db_url)
    assert _diff(db_url) == []


def test_check_constraints_refuse_bad_enum_values(db):
    with pytest.raises(sa.exc.IntegrityError):
        with session.get_engine(db).begin() as conn:
            conn.execute(sa.text(
                "INSERT INTO devices (uuid, type, vendor, model, hostname,"
                " driver_name, identity, status, health, version,"
                " created_at) VALUES ('u1', 'TOASTER', 'v', 'm', 'h', 'd',"
                " 'i', 'enabled', 'healthy', 1, CURRENT_TIMESTAMP)"))


def test_one_active_job_per_region_is_enforced_by_the_database(db):
    with session.writer() as s:
        dev = models.Device(uuid='d', type='FPGA', vendor='x', model='m',
                            hostname='h', driver_name='fake', identity='i')
        s.add(dev)
        s.flush()
        dep = models.Deployable(uuid='r', device_id=dev.id, name='h_r0',
                                driver_name='fake')
        bs = models.Bitstream(uuid='b', name='b', format='raw')
        s.add_all([dep, bs])
        s.flush()
        s.add(models.ProgrammingJob(uuid='j1', deployable_id=dep.id,
                                    bitstream_id=bs.id,
                                    active_deployable_id=dep.id))
    with pytest.raises(sa.exc.IntegrityError):
        with session.writer() as s:
            s.add(models.ProgrammingJob(uuid='j2', deployable_id=dep.id,
                                        bitstream_id=bs.id,
                                        active_deployable_id=dep.id))
    with session.reader() as s:
        assert s.scalar(sa.select(sa.func.count(
            models.ProgrammingJob.id))) == 1


def test_each_revision_downgrades_to_the_one_before(db_url, conf):
    migration.upgrade(url=db_url)
    migration.downgrade('0001', url=db_url)
    assert migration.current(url=db_url) == '0001'
    indexes = {ix['name'] for ix in sa.inspect(
        session.get_engine(url=db_url)).get_indexes('deployables')}
    assert 'ix_deployables_rp_uuid' not in indexes
    migration.upgrade(url=db_url)
    assert _diff(db_url) == []


def test_0003_gives_each_function_in_use_one_key(db_url, conf, caplog):
    # Before 0003 two regions of one card could both hold its PF; the
    # upgrade keys the first and names the second in a warning.
    migration.upgrade('0002', url=db_url)
    rows = [
        "INSERT INTO devices (id, uuid, type, vendor, model, hostname,"
        " driver_name, identity, status, health, version, created_at)"
        " VALUES (1, 'd1', 'FPGA', 'v', 'm', 'h1', 'fake', 'i', 'enabled',"
        " 'healthy', 1, CURRENT_TIMESTAMP)"]
    for dep_id in (1, 2, 3):
        rows.append(
            "INSERT INTO deployables (id, uuid, device_id, name,"
            " num_accelerators, driver_name, local_memory_mb, version,"
            " created_at) VALUES (%d, 'r%d', 1, 'h1_r%d', 1, 'fake', 0, 1,"
            " CURRENT_TIMESTAMP)" % (dep_id, dep_id, dep_id))
    handles = [(1, True, '{"bus":"5e","function":"0"}'),
               (2, True, '{"function": "0", "bus": "5e"}'),
               (3, False, '{"bus":"5e","function":"0"}')]
    for handle_id, in_use, info in handles:
        rows.append(
            "INSERT INTO attach_handles (id, uuid, deployable_id, in_use,"
            " attach_type, attach_info, version, created_at) VALUES"
            " (%d, 'a%d', %d, %s, 'PCI', '%s', 1, CURRENT_TIMESTAMP)"
            % (handle_id, handle_id, handle_id,
               'TRUE' if in_use else 'FALSE', info))
    with session.get_engine(db_url).begin() as conn:
        for row in rows:
            conn.execute(sa.text(row))

    # NOTE: heard on the migration's own logger: another test of this
    # worker may have set up logging that stops alembic's at the root.
    logger = logging.getLogger('alembic.runtime.migration')
    caplog.set_level(logging.WARNING, logger=logger.name)
    logger.addHandler(caplog.handler)
    try:
        migration.upgrade(url=db_url)
    finally:
        logger.removeHandler(caplog.handler)

    with session.get_engine(db_url).connect() as conn:
        keys = dict(conn.execute(sa.text(
            'SELECT id, in_use_function FROM attach_handles')).all())
    assert keys == {1: attach_handles.function_key('h1', handles[0][2]),
                    2: None, 3: None}
    assert 'Attach handle id=2' in caplog.text


def test_health_states_are_checked_by_the_database(db):
    # 0011: recovering added to devices, a health of their own on
    # deployables; anything else refused by the CHECK constraints.
    with session.writer() as s:
        dev = models.Device(uuid='d', type='FPGA', vendor='x', model='m',
                            hostname='h', driver_name='fake', identity='i',
                            health='recovering')
        s.add(dev)
        s.flush()
        s.add(models.Deployable(uuid='r', device_id=dev.id, name='h_r0',
                                driver_name='fake', health='recovering'))
    for table in ('devices', 'deployables'):
        with pytest.raises(sa.exc.IntegrityError):
            with session.get_engine(db).begin() as conn:
                conn.execute(sa.text("UPDATE %s SET health = 'sick'"
                                     % table))
