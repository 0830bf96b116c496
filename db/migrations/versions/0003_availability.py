"""availability: one ARQ per PCI function, agent heartbeats, publish requests

- attach_handles.in_use_function: the function's key while the handle is
  in use, UNIQUE, so sibling handles naming one PCI function (regions of a
  card reached through its PF) can never be on two ARQs. Filled for the
  handles in use now; where two in-use handles already share a function
  (the double use this revision ends) the later one keeps NULL and a
  warning names it.
- agents: one row per agent host, its last heartbeat and up/down state.
- publish_requests: hosts whose offer changed outside a report, waiting
  for the conductor to publish them.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-09 10:00:00
"""
import logging

from alembic import op
import sqlalchemy as sa

from cyborg_lite.db import attach_handles

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

LOG = logging.getLogger('alembic.runtime.migration')


def upgrade():
    with op.batch_alter_table('attach_handles', schema=None) as batch_op:
        batch_op.add_column(sa.Column('in_use_function', sa.String(length=64),
                                      nullable=True))
        batch_op.create_unique_constraint(
            batch_op.f('uq_attach_handles_in_use_function'),
            ['in_use_function'])
    _fill_in_use_functions()

    op.create_table(
        'agents',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('hostname', sa.String(length=255), nullable=False),
        sa.Column('state', sa.Enum('up', 'down', name='agent_state',
                                   native_enum=False, create_constraint=True,
                                   length=16), nullable=False),
        sa.Column('heartbeat_at', sa.DateTime(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_agents')),
        sa.UniqueConstraint('hostname', name=op.f('uq_agents_hostname')))

    op.create_table(
        'publish_requests',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('hostname', sa.String(length=255), nullable=False),
        sa.Column('reason', sa.String(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_publish_requests')))
    with op.batch_alter_table('publish_requests', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_publish_requests_hostname'),
                              ['hostname'], unique=False)


def _fill_in_use_functions():
    handles = sa.table('attach_handles', sa.column('id'),
                       sa.column('deployable_id'), sa.column('attach_info'),
                       sa.column('in_use'), sa.column('in_use_function'))
    deps = sa.table('deployables', sa.column('id'), sa.column('device_id'))
    devices = sa.table('devices', sa.column('id'), sa.column('hostname'))
    conn = op.get_bind()
    rows = conn.execute(
        sa.select(handles.c.id, handles.c.attach_info, devices.c.hostname)
        .select_from(handles.join(deps, deps.c.id == handles.c.deployable_id)
                     .join(devices, devices.c.id == deps.c.device_id))
        .where(handles.c.in_use.is_(True))
        .order_by(handles.c.id)).all()
    seen = set()
    for handle_id, attach_info, hostname in rows:
        key = attach_handles.function_key(hostname, attach_info)
        if key in seen:
            LOG.warning('Attach handle id=%s names a function (%s on %s) '
                        'another in-use handle holds; the two ARQs share '
                        'one device: unbind one of them', handle_id,
                        attach_info, hostname)
            continue
        seen.add(key)
        conn.execute(sa.update(handles).where(handles.c.id == handle_id)
                     .values(in_use_function=key))


def downgrade():
    with op.batch_alter_table('publish_requests', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_publish_requests_hostname'))
    op.drop_table('publish_requests')
    op.drop_table('agents')
    with op.batch_alter_table('attach_handles', schema=None) as batch_op:
        batch_op.drop_constraint(
            batch_op.f('uq_attach_handles_in_use_function'), type_='unique')
        batch_op.drop_column('in_use_function')
