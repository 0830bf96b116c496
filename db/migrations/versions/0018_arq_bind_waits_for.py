"""accelerator_requests.bind_waits_for_id: a bind waiting for a warm region

A bind whose group asks for a function that only a busy region runs may
wait for that region (conductor/bind_wait.py) instead of reprogramming a
free one: the ARQ stays BindStarted with this marker, which any
conductor reads to resume it when the region is freed, or to fall back.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07 03:30:00
"""
from alembic import op
import sqlalchemy as sa

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None

_FK = 'fk_accelerator_requests_bind_waits_for_id_deployables'
_INDEX = 'ix_accelerator_requests_bind_waits_for_id'


def upgrade():
    with op.batch_alter_table('accelerator_requests',
                              schema=None) as batch_op:
        # NULL: the bind waits for no region (every bind before this).
        batch_op.add_column(sa.Column('bind_waits_for_id', sa.Integer(),
                                      nullable=True))
        batch_op.create_foreign_key(_FK, 'deployables',
                                    ['bind_waits_for_id'], ['id'],
                                    ondelete='SET NULL')
        batch_op.create_index(_INDEX, ['bind_waits_for_id'], unique=False)


def downgrade():
    with op.batch_alter_table('accelerator_requests',
                              schema=None) as batch_op:
        batch_op.drop_constraint(_FK, type_='foreignkey')
        batch_op.drop_index(_INDEX)
        batch_op.drop_column('bind_waits_for_id')
