"""published_hosts: who served a host's publish requests last

A conductor's publisher that served a host's requests last, with nothing
but the change at hand pending since, knows what Placement has for that
host (what it wrote): it writes the difference without reading the
host's provider tree first (db/publish_requests.py, placement/sink.py).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03 15:40:00
"""
from alembic import op
import sqlalchemy as sa

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'published_hosts',
        sa.Column('hostname', sa.String(length=255), nullable=False),
        sa.Column('publisher', sa.String(length=64), nullable=False),
        sa.Column('request_id', sa.Integer(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('hostname', name=op.f('pk_published_hosts')))


def downgrade():
    op.drop_table('published_hosts')
