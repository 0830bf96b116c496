"""signed bitstreams: trusted keys, per-project policies, signatures

trusted_keys holds the public keys an admin trusts to sign bitstreams
(global or per project; revoked ones are kept), project_signature_policies
an admin's signature_policy per project, and bitstreams gain a detached
signature, the key its uploader named and when it came.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-10 09:00:00
"""
from alembic import op
import sqlalchemy as sa

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

# NOTE: the values as this revision made them; a later change of
# bitstreams/signatures.py needs a revision of its own.
ALGORITHMS = ('ed25519', 'ecdsa-p256')
POLICIES = ('disabled', 'warn', 'enforce')


def _enum(values, name):
    return sa.Enum(*values, name=name, native_enum=False,
                   create_constraint=True, length=16)


def upgrade():
    op.create_table(
        'trusted_keys',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('uuid', sa.String(length=36), nullable=False),
        sa.Column('key_id', sa.String(length=64), nullable=False),
        sa.Column('name', sa.String(length=255), nullable=False),
        sa.Column('algorithm', _enum(ALGORITHMS, 'signature_algorithm'),
                  nullable=False),
        sa.Column('public_key', sa.Text(), nullable=False),
        sa.Column('certificate', sa.Text(), nullable=True),
        sa.Column('subject', sa.Text(), nullable=True),
        sa.Column('not_before', sa.DateTime(), nullable=True),
        sa.Column('not_after', sa.DateTime(), nullable=True),
        sa.Column('project_id', sa.String(length=64), nullable=True),
        sa.Column('revoked_at', sa.DateTime(), nullable=True),
        sa.Column('revocation_reason', sa.Text(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_trusted_keys')),
        sa.UniqueConstraint('key_id', name=op.f('uq_trusted_keys_key_id')),
        sa.UniqueConstraint('uuid', name=op.f('uq_trusted_keys_uuid')))
    with op.batch_alter_table('trusted_keys') as batch_op:
        batch_op.create_index(batch_op.f('ix_trusted_keys_project_id'),
                              ['project_id'], unique=False)
    op.create_table(
        'project_signature_policies',
        sa.Column('project_id', sa.String(length=64), nullable=False),
        sa.Column('policy', _enum(POLICIES, 'signature_policy'),
                  nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint(
            'project_id', name=op.f('pk_project_signature_policies')))
    with op.batch_alter_table('bitstreams') as batch_op:
        batch_op.add_column(sa.Column('signature', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('signature_key_id',
                                      sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('signed_at', sa.DateTime(),
                                      nullable=True))


def downgrade():
    with op.batch_alter_table('bitstreams') as batch_op:
        batch_op.drop_column('signed_at')
        batch_op.drop_column('signature_key_id')
        batch_op.drop_column('signature')
    op.drop_table('project_signature_policies')
    op.drop_table('trusted_keys')
