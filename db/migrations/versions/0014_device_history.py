"""device_history: a row per transition of a device

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05 09:00:00
"""
from alembic import op
import sqlalchemy as sa

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'device_history',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('device_uuid', sa.String(length=36), nullable=False),
        sa.Column('deployable_uuid', sa.String(length=36), nullable=True),
        sa.Column('event', sa.String(length=64), nullable=False),
        sa.Column('state', sa.String(length=32), nullable=True),
        sa.Column('object_uuid', sa.String(length=36), nullable=True),
        sa.Column('project_id', sa.String(length=64), nullable=True),
        sa.Column('instance_uuid', sa.String(length=36), nullable=True),
        sa.Column('namespace', sa.String(length=63), nullable=True),
        sa.Column('claim_name', sa.String(length=253), nullable=True),
        sa.Column('reason', sa.Text(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_device_history')),
    )
    op.create_index('ix_device_history_device_uuid_id', 'device_history',
                    ['device_uuid', 'id'])
    op.create_index(op.f('ix_device_history_created_at'), 'device_history',
                    ['created_at'])


def downgrade():
    op.drop_index(op.f('ix_device_history_created_at'),
                  table_name='device_history')
    op.drop_index('ix_device_history_device_uuid_id',
                  table_name='device_history')
    op.drop_table('device_history')
