"""programming_jobs.namespace, device_history.seconds: programming time
accounted per project and Kubernetes namespace

A job a ResourceClaim's Prepare started keeps the claim's namespace (the
claim's row goes with its release; the job's record stays); a job's end
event in the device history carries its seconds, from its creation to
its end, the time a workload waited for its region.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06 19:00:00
"""
from alembic import op
import sqlalchemy as sa

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('programming_jobs', schema=None) as batch_op:
        # NULL: a job not started for a claim, or before this revision.
        batch_op.add_column(sa.Column('namespace', sa.String(63),
                                      nullable=True))
    with op.batch_alter_table('device_history', schema=None) as batch_op:
        # Only on a programming job's end rows; NULL on every other.
        batch_op.add_column(sa.Column('seconds', sa.Float(), nullable=True))


def downgrade():
    with op.batch_alter_table('device_history', schema=None) as batch_op:
        batch_op.drop_column('seconds')
    with op.batch_alter_table('programming_jobs', schema=None) as batch_op:
        batch_op.drop_column('namespace')
