"""attach_handles.awaits_removal: a vGPU released, not yet removed

A handle of a deployable whose bind makes the instance (a vGPU type of
the vendor-specific VFIO framework) is let go one VF at a time: its
holder's release keeps it in use with this flag until the host's agent
has written 0 into the VF (db/instance_removals.py), and only the type's
other VFs stay offered meanwhile.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07 17:40:00
"""
from alembic import op
import sqlalchemy as sa

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('attach_handles', schema=None) as batch_op:
        # NULL: no removal awaited (every handle before this release).
        batch_op.add_column(sa.Column('awaits_removal', sa.Boolean(),
                                      nullable=True))


def downgrade():
    with op.batch_alter_table('attach_handles', schema=None) as batch_op:
        batch_op.drop_column('awaits_removal')
