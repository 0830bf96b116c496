"""deployables: device_state and the secure cleanup between tenants

A region unbound or deleted goes pending_cleaning -> cleaning ->
available (or error) before the next tenant may have it
(common/states.DEVICE). Regions a Bound ARQ holds now start allocated,
every other one available.

Revision ID: 0004
Revises: 0002
Create Date: 2026-12-08 10:00:00
"""
from alembic import op
import sqlalchemy as sa

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

# NOTE: the states as this revision made them; a later change of
# common/states.py needs a revision of its own.
DEVICE_STATES = ('available', 'allocated', 'pending_cleaning', 'cleaning',
                 'error')


def upgrade():
    with op.batch_alter_table('deployables', schema=None) as batch_op:
        batch_op.add_column(sa.Column(
            'device_state',
            sa.Enum(*DEVICE_STATES, name='device_state', native_enum=False,
                    create_constraint=True, length=16),
            server_default='available', nullable=False))
        batch_op.add_column(sa.Column('device_state_at', sa.DateTime(),
                                      nullable=True))
        batch_op.add_column(sa.Column('cleaning_uuid', sa.String(length=36),
                                      nullable=True))
        batch_op.add_column(sa.Column('cleaning_started_at', sa.DateTime(),
                                      nullable=True))
        batch_op.add_column(sa.Column('cleaning_attempts', sa.Integer(),
                                      server_default='0', nullable=False))
        batch_op.add_column(sa.Column('cleaning_error', sa.Text(),
                                      nullable=True))
        batch_op.create_index(batch_op.f('ix_deployables_device_state'),
                              ['device_state'], unique=False)
    # Regions a Bound ARQ holds now: their handle is in use.
    deployables = sa.table('deployables', sa.column('id', sa.Integer),
                           sa.column('device_state', sa.String))
    handles = sa.table('attach_handles',
                       sa.column('deployable_id', sa.Integer),
                       sa.column('in_use', sa.Boolean))
    op.execute(deployables.update()
               .where(deployables.c.id.in_(
                   sa.select(handles.c.deployable_id)
                   .where(handles.c.in_use == sa.true())))
               .values(device_state='allocated'))


def downgrade():
    with op.batch_alter_table('deployables', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_deployables_device_state'))
        batch_op.drop_column('cleaning_error')
        batch_op.drop_column('cleaning_attempts')
        batch_op.drop_column('cleaning_started_at')
        batch_op.drop_column('cleaning_uuid')
        batch_op.drop_column('device_state_at')
        # NOTE: first, or SQLite's batch copy keeps a CHECK on a column
        # that is gone.
        batch_op.drop_constraint(batch_op.f('ck_deployables_device_state'),
                                 type_='check')
        batch_op.drop_column('device_state')
