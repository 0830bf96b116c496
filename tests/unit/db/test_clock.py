"""db/sql/clock: the database's UTC time, the same shape on every backend."""
import datetime

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.mysql import mariadb

from cyborg_lite.db import models
from cyborg_lite.db.sql import clock
from cyborg_lite.db.sql import session
from tests.unit.conductor import bind_helpers as h


def test_now_is_naive_utc(db):
    with session.reader() as s:
        now = clock.now(s)
    assert isinstance(now, datetime.datetime) and now.tzinfo is None
    # The same machine's clock: equal to ours up to the read itself (a
    # loose bound, so that a slow machine cannot fail it).
    assert abs(now - models.utcnow()) < datetime.timedelta(minutes=5)


def test_a_stamp_reads_back_as_the_database_time(db):
    arq_uuid = h.make_arq()
    with session.writer() as s:
        s.execute(sa.update(models.AcceleratorRequest)
                  .where(models.AcceleratorRequest.uuid == arq_uuid)
                  .values(bind_started_at=clock.utc_now()))
        before = clock.now(s)
    stamped = h.get_arq(arq_uuid).bind_started_at
    assert isinstance(stamped, datetime.datetime)
    assert abs(stamped - before) < datetime.timedelta(minutes=5)


@pytest.mark.parametrize('dialect,sql', [
    (mysql.dialect(), 'UTC_TIMESTAMP(6)'),
    (mariadb.MariaDBDialect(), 'UTC_TIMESTAMP(6)'),
    (postgresql.dialect(), "(now() AT TIME ZONE 'UTC')"),
])
def test_each_server_backend_has_its_spelling(dialect, sql):
    assert str(sa.select(clock.utc_now()).compile(dialect=dialect)) == \
        'SELECT %s AS utc_now_1' % sql
