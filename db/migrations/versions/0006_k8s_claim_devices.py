"""k8s_claim_devices: regions prepared for Kubernetes ResourceClaims

One row per (claim, region) the kubelet plugin prepared: the region's
attach handle is held for the claim (UNIQUE attach_handle_id, as on
accelerator_requests), and the programming job loading it for the claim.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03 07:00:00
"""
from alembic import op
import sqlalchemy as sa

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'k8s_claim_devices',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('uuid', sa.String(length=36), nullable=False),
        sa.Column('claim_uid', sa.String(length=36), nullable=False),
        sa.Column('namespace', sa.String(length=63), nullable=False),
        sa.Column('claim_name', sa.String(length=253), nullable=False),
        sa.Column('device_name', sa.String(length=63), nullable=False),
        sa.Column('project_id', sa.String(length=64), nullable=True),
        sa.Column('deployable_id', sa.Integer(), nullable=False),
        sa.Column('attach_handle_id', sa.Integer(), nullable=False),
        sa.Column('programming_job_id', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ['attach_handle_id'], ['attach_handles.id'],
            name=op.f('fk_k8s_claim_devices_attach_handle_id_attach_handles'),
            ondelete='CASCADE'),
        sa.ForeignKeyConstraint(
            ['deployable_id'], ['deployables.id'],
            name=op.f('fk_k8s_claim_devices_deployable_id_deployables'),
            ondelete='CASCADE'),
        sa.ForeignKeyConstraint(
            ['programming_job_id'], ['programming_jobs.id'],
            name=op.f('fk_k8s_claim_devices_programming_job_id_'
                      'programming_jobs'),
            ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_k8s_claim_devices')),
        sa.UniqueConstraint('attach_handle_id',
                            name=op.f('uq_k8s_claim_devices_'
                                      'attach_handle_id')),
        sa.UniqueConstraint('claim_uid', 'deployable_id',
                            name=op.f('uq_k8s_claim_devices_claim_uid_'
                                      'deployable_id')),
        sa.UniqueConstraint('uuid', name=op.f('uq_k8s_claim_devices_uuid')))
    with op.batch_alter_table('k8s_claim_devices') as batch_op:
        batch_op.create_index(batch_op.f('ix_k8s_claim_devices_claim_uid'),
                              ['claim_uid'], unique=False)
        batch_op.create_index(
            batch_op.f('ix_k8s_claim_devices_deployable_id'),
            ['deployable_id'], unique=False)


def downgrade():
    op.drop_table('k8s_claim_devices')
