"""The database's clock: one time source for every host.

Timestamps that another host compares (a bind's start, a job's last
heartbeat) are stamped and compared with the database server's UTC time,
never a service host's: the API host that stamps a bind and the conductor
that reaps it may disagree by minutes, the database agrees with itself.

``utc_now()`` is the SQL expression, for VALUES and WHERE clauses;
``now(s)`` reads it once, for a cutoff computed in Python. Both give a
naive UTC datetime on every backend, as ``utcnow()`` does for this host's
clock (what a row stamps in Python: models' defaults).
"""
import datetime

import sqlalchemy as sa
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression


def utcnow():
    """This host's UTC time, naive: the same on every backend."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class utc_now(expression.FunctionElement):
    """The database server's current UTC time, naive."""
    type = sa.DateTime()
    inherit_cache = True
    name = 'utc_now'


@compiler.compiles(utc_now, 'sqlite')
def _sqlite(element, compiler_, **kw):
    # NOTE: SQLite keeps DATETIME as text; this is SQLAlchemy's spelling
    # (microseconds, 6 digits), so values sort with those it wrote. %f
    # gives milliseconds.
    return "(STRFTIME('%Y-%m-%d %H:%M:%f', 'now') || '000')"


@compiler.compiles(utc_now, 'postgresql')
def _postgresql(element, compiler_, **kw):
    # now() is the transaction's start, as timestamptz; in UTC, naive.
    return "(now() AT TIME ZONE 'UTC')"


@compiler.compiles(utc_now, 'mysql')
@compiler.compiles(utc_now, 'mariadb')
def _mysql(element, compiler_, **kw):
    return 'UTC_TIMESTAMP(6)'


def now(s):
    """The database's current UTC time, read in session ``s``."""
    return s.scalar(sa.select(utc_now()))
