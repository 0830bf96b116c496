"""devices and deployables: health with its reason and time; recovering

The agent's health monitor reports a state per device and per region
(common/states.HEALTH, which adds 'recovering'), why, and the conductor
keeps since when (the database's clock).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06 12:00:00
"""
from alembic import op
import sqlalchemy as sa

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None

# NOTE: the states as this revision made them; a later change of
# common/states.py needs a revision of its own.
OLD_HEALTH = ('healthy', 'degraded', 'unhealthy')
HEALTH = ('healthy', 'degraded', 'unhealthy', 'recovering')


def _in(column, values):
    return '%s IN (%s)' % (column, ', '.join("'%s'" % v for v in values))


def _reason_and_since(batch_op):
    batch_op.add_column(sa.Column('health_reason', sa.String(length=255),
                                  nullable=True))
    batch_op.add_column(sa.Column('health_since', sa.DateTime(),
                                  nullable=True))


def upgrade():
    with op.batch_alter_table('devices', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('ck_devices_device_health'),
                                 type_='check')
        batch_op.create_check_constraint('device_health',
                                         _in('health', HEALTH))
        _reason_and_since(batch_op)
    with op.batch_alter_table('deployables', schema=None) as batch_op:
        batch_op.add_column(sa.Column(
            'health',
            sa.Enum(*HEALTH, name='deployable_health', native_enum=False,
                    create_constraint=True, length=16),
            server_default='healthy', nullable=False))
        _reason_and_since(batch_op)


def downgrade():
    devices = sa.table('devices', sa.column('health', sa.String))
    op.execute(devices.update().where(devices.c.health == 'recovering')
               .values(health='unhealthy'))
    with op.batch_alter_table('deployables', schema=None) as batch_op:
        batch_op.drop_column('health_since')
        batch_op.drop_column('health_reason')
        # NOTE: first, or SQLite's batch copy keeps a CHECK on a column
        # that is gone.
        batch_op.drop_constraint(
            batch_op.f('ck_deployables_deployable_health'), type_='check')
        batch_op.drop_column('health')
    with op.batch_alter_table('devices', schema=None) as batch_op:
        batch_op.drop_column('health_since')
        batch_op.drop_column('health_reason')
        batch_op.drop_constraint(batch_op.f('ck_devices_device_health'),
                                 type_='check')
        batch_op.create_check_constraint('device_health',
                                         _in('health', OLD_HEALTH))
