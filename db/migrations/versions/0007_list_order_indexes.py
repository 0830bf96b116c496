"""index (created_at, id) of devices, deployables, accelerator_requests

A list's default order is created_at, then id (db/sql/pagination.py). Without
an index in that order the database sorts the whole table for every page:
a GET /v2/devices of 10,000 rows spent a quarter of its database time in
SQLite's sort, and a page of 20 sorted as many rows as a page of all.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03 12:40:00
"""
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

TABLES = ('devices', 'deployables', 'accelerator_requests')


def upgrade():
    for table in TABLES:
        op.create_index('ix_%s_created_at_id' % table, table,
                        ['created_at', 'id'], unique=False)


def downgrade():
    for table in TABLES:
        op.drop_index('ix_%s_created_at_id' % table, table_name=table)
