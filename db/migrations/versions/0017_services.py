"""services: which code each running service is

One row per (kind, host): an agent, a conductor or an API. Each writes
its release and the RPC versions it speaks with its heartbeat, so an
operator mid-upgrade sees who still runs the previous release.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06 19:00:00
"""
from alembic import op
import sqlalchemy as sa

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'services',
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('kind', sa.String(32), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        # NULL: a service of a release that does not say (an agent of
        # 2026.1.0 heartbeats without it).
        sa.Column('release', sa.String(64), nullable=True),
        # JSON: {rpc topic: the newest version this service speaks}.
        sa.Column('rpc_versions', sa.Text(), nullable=True),
        sa.Column('heartbeat_at', sa.DateTime(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.UniqueConstraint('kind', 'host', name='uniq_services0kind0host'))


def downgrade():
    op.drop_table('services')
