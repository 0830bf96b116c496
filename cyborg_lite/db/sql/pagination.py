"""limit / marker / sort for the list queries of the API's read modules.

A page is "rows after the marker in (sort_key, id) order": ``id`` breaks
ties so that rows with equal sort values are neither skipped nor repeated
between pages. Only NOT NULL columns may be sort keys (a NULL compares as
unknown in SQL and would drop rows from every page after it).
"""
import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.db.sql import json_text
from cyborg_lite.db.sql import timestamps

ALL = object()
"""Visibility sentinel: no project restriction (an admin's view)."""


def paginate(s, stmt, model, plain=False, **page):
    """Rows of ``stmt`` (selecting ``model`` or columns of its table) for
    one page.

    :param marker: uuid of the last row of the previous page; it must be a
        row ``stmt`` itself returns, else MarkerNotFound (400).
    :returns: a list of Row objects: ``row[0]`` is the ``model`` object
        when ``stmt`` selects the entity; a select of the table's columns
        (``sa.select(model.__table__)``) gives plain rows, much cheaper to
        load for a long list that is only read. ``plain`` gives the
        database driver's own tuples: cheaper still, and without
        SQLAlchemy's result processing, so only for columns whose stored
        form is what the caller wants (text, integers); ``s`` must then be
        a Core connection (``driver_rows``).
    """
    stmt = page_statement(s, stmt, model, **page)
    if plain:
        return driver_rows(s, stmt)
    return s.execute(stmt).all()


def page_statement(s, stmt, model, sort_key='created_at', sort_dir='asc',
                   limit=None, marker=None):
    """``stmt`` limited to one page, in page order (what ``paginate``
    executes; see there). Looks the marker up in ``s``."""
    column = getattr(model, sort_key)
    if column.nullable:
        raise ValueError('%s.%s is nullable and cannot be a sort key'
                         % (model.__tablename__, sort_key))
    ascending = sort_dir == 'asc'
    if marker is not None:
        # NOTE: the marker row through ``stmt`` itself (its filters and
        # joins), reading only the two values a page boundary needs.
        row = s.execute(stmt.with_only_columns(model.id, column)
                        .where(model.uuid == marker)).first()
        if row is None:
            raise exception.MarkerNotFound(marker=marker)
        last_id, value = row
        if ascending:
            after = sa.or_(column > value,
                           sa.and_(column == value, model.id > last_id))
        else:
            after = sa.or_(column < value,
                           sa.and_(column == value, model.id < last_id))
        stmt = stmt.where(after)
    if ascending:
        stmt = stmt.order_by(column.asc(), model.id.asc())
    else:
        stmt = stmt.order_by(column.desc(), model.id.desc())
    if limit is not None:
        stmt = stmt.limit(limit)
    return stmt


def driver_rows(conn, stmt, params=None):
    """The database driver's own tuples of ``stmt`` (see ``paginate``),
    read on the Core connection ``conn`` (session.core_reader: on SQLite,
    ``in_turn`` for a long list); a ``json_text.JsonText`` column as its
    text on every backend."""
    # NOTE: a Core execution's DBAPI cursor, read directly: for 10,000
    # rows SQLAlchemy's Row objects and type processors (Enum checks,
    # ORM loading) cost three times the fetch itself.
    stmt, finish = json_text.for_dialect(stmt, conn.dialect.name)
    result = conn.execute(stmt, params)
    try:
        return finish(result.cursor.fetchall())
    finally:
        result.close()


def ids_of_page(page_stmt, model):
    """A select of the ids of the rows ``page_stmt`` (page_statement)
    returns, to read what belongs to them in one more query. Nested in a
    derived table: MySQL and MariaDB refuse LIMIT in an IN subquery."""
    page = page_stmt.with_only_columns(model.id).subquery()
    return sa.select(page.c.id)


def list_columns(model, names, href_prefix='', extra=None):
    """The SQL expressions of a long list's columns ``names``, in order:
    ``created_at``, ``updated_at`` and ``health_since`` as the API's ISO
    text
    (db/sql/timestamps.py), ``href`` as ``href_prefix`` + uuid, a name in
    ``extra`` ({name: expression}) as given, any other name the column of
    ``model``; a ``json_text.JsonText`` as its text, with the values of
    the columns it names as JSON. With ``paginate(..., plain=True)`` a row
    is then exactly what a list body shows (api/json_list.py)."""
    extra = extra or {}

    def column_of(name):
        if name in extra:
            return extra[name]
        if name in ('created_at', 'updated_at', 'health_since'):
            return timestamps.iso_text(getattr(model, name))
        if name == 'href':
            return sa.literal(href_prefix, sa.String) + model.uuid
        return getattr(model, name)
    return [name.expression(column_of)
            if isinstance(name, json_text.JsonText) else column_of(name)
            for name in names]


def apply_filters(stmt, model, allowed, filters):
    """``stmt`` restricted to rows whose columns equal ``filters``' values.

    Only names in ``allowed`` may be used: filter names come from query
    strings, and getattr on a model with an arbitrary name must never be
    reachable from a request.
    """
    for key, value in (filters or {}).items():
        if key not in allowed:
            raise ValueError('%s is not a filter of %s'
                             % (key, model.__tablename__))
        stmt = stmt.where(getattr(model, key) == value)
    return stmt
