"""index deployables.rp_uuid

Every ARQ bind looks its region up by resource provider uuid; without an
index that is a scan of the deployables table (16,000 rows on a
1,000-host fleet).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02 15:55:00
"""
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('deployables', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_deployables_rp_uuid'),
                              ['rp_uuid'], unique=False)


def downgrade():
    with op.batch_alter_table('deployables', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_deployables_rp_uuid'))
