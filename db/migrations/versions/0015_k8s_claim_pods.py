"""k8s_claim_devices.pods: the pods a claim was reserved for

The kubelet names a claim, not its pods; the plugin reads them from the
claim's status.reservedFor at Prepare, so the holder series and the
claim's notifications can name them.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05 10:00:00
"""
from alembic import op
import sqlalchemy as sa

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('k8s_claim_devices', schema=None) as batch_op:
        # Comma-separated pod names (DNS subdomains hold no comma); NULL
        # for a claim prepared before this revision or by an older agent.
        batch_op.add_column(sa.Column('pods', sa.Text(), nullable=True))


def downgrade():
    with op.batch_alter_table('k8s_claim_devices', schema=None) as batch_op:
        batch_op.drop_column('pods')
