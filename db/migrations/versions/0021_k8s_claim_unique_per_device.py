"""k8s_claim_devices: one row per (claim, device name), not per deployable

A claim may ask for two vGPUs of one type (two devices of the pool that
are copies of one deployable, kubernetes/vgpu_counters.py): each holds a
VF of its own, a row each. The row is now unique per claim and device
name, which every row of the previous release already is (its device
names are unique per deployable), so its code, which looks a claim's row
up by deployable, keeps working beside this one.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07 17:50:00
"""
from alembic import op

revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None

_BY_DEPLOYABLE = 'uq_k8s_claim_devices_claim_uid_deployable_id'
_BY_DEVICE = 'uq_k8s_claim_devices_claim_uid_device_name'


def upgrade():
    with op.batch_alter_table('k8s_claim_devices', schema=None) as batch_op:
        batch_op.create_unique_constraint(_BY_DEVICE,
                                          ['claim_uid', 'device_name'])
        batch_op.drop_constraint(_BY_DEPLOYABLE, type_='unique')


def downgrade():
    with op.batch_alter_table('k8s_claim_devices', schema=None) as batch_op:
        batch_op.create_unique_constraint(_BY_DEPLOYABLE,
                                          ['claim_uid', 'deployable_id'])
        batch_op.drop_constraint(_BY_DEVICE, type_='unique')
