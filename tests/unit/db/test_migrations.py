"""The migrated schema equals the models, on SQLite, PostgreSQL and MariaDB."""
import pytest
import sqlalchemy as sa
from alembic import autogenerate
from alembic import migration as alembic_migration

from cyborg_lite.db import migration
from cyborg_lite.db import models
from cyborg_lite.db import session


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
