"""Timestamps as the API shows them, formatted by the database.

``iso_text(column)`` is the SQL expression for a DATETIME column as ISO
8601 text in UTC, to the second, '2026-01-31T12:34:56+00:00' (what
api/utils.timestamp makes of the datetime; NULL stays NULL). Long lists
read it instead of the datetime: SQLite keeps DATETIME as text, and
parsing 10,000 of them into datetimes only to format them back cost more
than the rest of the row.
"""
import sqlalchemy as sa
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression


class iso_text(expression.FunctionElement):
    """``column`` (naive UTC DATETIME) as 'YYYY-MM-DDTHH:MM:SS+00:00'."""
    type = sa.String()
    inherit_cache = True
    name = 'iso_text'


@compiler.compiles(iso_text, 'sqlite')
def _sqlite(element, compiler_, **kw):
    # NOTE: SQLAlchemy stores 'YYYY-MM-DD HH:MM:SS.ffffff'; CURRENT_TIMESTAMP
    # (db/sql/clock.py) 'YYYY-MM-DD HH:MM:SS.fff000'. The first 19 characters
    # are the second either way.
    return "(REPLACE(SUBSTR(%s, 1, 19), ' ', 'T') || '+00:00')" % (
        compiler_.process(element.clauses, **kw))


@compiler.compiles(iso_text, 'postgresql')
def _postgresql(element, compiler_, **kw):
    return "TO_CHAR(%s, 'YYYY-MM-DD\"T\"HH24:MI:SS\"+00:00\"')" % (
        compiler_.process(element.clauses, **kw))


@compiler.compiles(iso_text, 'mysql')
@compiler.compiles(iso_text, 'mariadb')
def _mysql(element, compiler_, **kw):
    # NOTE: the format goes as a literal whose %% the driver's paramstyle
    # (pymysql: format) turns back into %.
    fmt = compiler_.render_literal_value('%Y-%m-%dT%H:%i:%s+00:00',
                                         sa.String())
    return 'DATE_FORMAT(%s, %s)' % (compiler_.process(element.clauses, **kw),
                                    fmt)
