"""placement_providers: our resource providers as last seen, by generation

A conductor that has not published a host itself (another conductor did,
or it restarted) used to read every provider of the host's tree from
Placement, two GETs each, before writing a change. It now finds them
here: a listed provider whose generation equals the recorded one is known
(placement/reporter.py, db/placement_providers.py).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04 09:30:00
"""
from alembic import op
import sqlalchemy as sa

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'placement_providers',
        sa.Column('rp_uuid', sa.String(length=36), nullable=False),
        sa.Column('generation', sa.Integer(), nullable=False),
        sa.Column('inventories', sa.Text(), nullable=False),
        sa.Column('traits', sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint('rp_uuid',
                                name=op.f('pk_placement_providers')))


def downgrade():
    op.drop_table('placement_providers')
