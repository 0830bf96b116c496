"""publish_requests: ids only grow, on SQLite too

A serve deletes a host's requests up to the highest id its publish read,
and published_hosts keeps the highest id served (db/publish_requests.py).
Both need a request added later to have a higher id. PostgreSQL's and
MariaDB's sequences never go back, but SQLite gives a table without
AUTOINCREMENT the ids of its rows again once they are deleted: after
every request was served, a new one got id 1, so a slow publish serving
"up to 5" deleted it unpublished, and the publisher that served it was
not recorded. On SQLite the table is made again with AUTOINCREMENT, its
sequence starting above every id used so far (rows and published_hosts).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04 12:00:00
"""
from alembic import op
import sqlalchemy as sa

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def _rebuild(autoincrement):
    with op.batch_alter_table(
            'publish_requests', recreate='always',
            table_kwargs={'sqlite_autoincrement': autoincrement}):
        pass


def upgrade():
    bind = op.get_bind()
    if bind.dialect.name != 'sqlite':
        return
    _rebuild(True)
    highest = bind.execute(sa.text(
        'SELECT max(id) FROM (SELECT max(id) AS id FROM publish_requests '
        'UNION ALL SELECT max(request_id) FROM published_hosts)')).scalar()
    bind.execute(sa.text(
        "DELETE FROM sqlite_sequence WHERE name = 'publish_requests'"))
    bind.execute(sa.text(
        "INSERT INTO sqlite_sequence (name, seq) "
        "VALUES ('publish_requests', :seq)"), {'seq': highest or 0})


def downgrade():
    if op.get_bind().dialect.name == 'sqlite':
        _rebuild(False)
