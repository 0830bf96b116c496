"""The conditional UPDATE: how every writer of a shared row decides.

Several conductors (and the API) change the same ARQ, attach handle or
programming job at once, and none trusts what it read earlier::

    won = conditional.update(s, ARQ, ARQ.id == arq.id,
                             {'state': 'Bound'},
                             ARQ.state == 'BindStarted',
                             ARQ.version == arq.version)

The UPDATE repeats, in its WHERE clause, the conditions the caller decided
on, and the caller learns from the row count whether they still held.
A versioned row's ``version`` goes up by one with every change (the column
is SQLAlchemy's version_id_col, so the ORM's own flushes of the same rows,
as in db/inventory.py, check and bump it too).

What decides a race, by backend:

- PostgreSQL (READ COMMITTED), MySQL/MariaDB (InnoDB): the UPDATE waits
  for the row lock of a writer that changed the row first, then evaluates
  its WHERE against the committed row: the second writer matches nothing.
- SQLite: one writer at a time. A writer's transaction starts with BEGIN
  IMMEDIATE (db/sql/session.py), so it holds the database's write lock from
  its first read to its commit; no other writer can change a row between
  its read and its UPDATE. The conditions still guard against what a
  caller read in an earlier transaction.

``before_update`` is a hook for tests: called with the table name right
before the UPDATE is sent, it lets a test hold two transactions at the
point of conflict (tests/unit/db/held.py).
"""
import sqlalchemy as sa

before_update = None


def _versioned(model):
    return model.__mapper__.version_id_col is not None


def update(s, model, key, values, *conditions, bump_version=True):
    """UPDATE ``model`` SET ``values`` WHERE ``key`` AND ``conditions``.

    Returns the number of rows changed (0: a condition no longer held).
    ``version`` goes up by one on a versioned model unless
    ``bump_version`` is false (derived columns only one writer sets).
    """
    return run(s, statement(model, key, values, *conditions,
                            bump_version=bump_version), {})


def statement(model, key, values, *conditions, bump_version=True):
    """``update``'s statement, built once at import for a hot path: its
    variable parts are ``sa.bindparam``s, given to ``run`` per call."""
    table = model.__table__
    values = dict(values)
    if bump_version and _versioned(model):
        values['version'] = table.c.version + 1
    return sa.update(table).where(key, *conditions).values(**values)


def run(s, stmt, params):
    """Execute a ``statement`` with ``params`` in ``s``'s transaction; the
    number of rows changed. A Core execution: none of the ORM's statement
    handling, but its pending objects are flushed first, as
    ``s.execute`` would."""
    s.flush()
    if before_update is not None:
        before_update(stmt.table.name)
    return s.connection().execute(stmt, params).rowcount


# Backends where SELECT ... FOR UPDATE SKIP LOCKED exists; on SQLite the
# writer's BEGIN IMMEDIATE already serialises every writer. Tests turn it
# off to leave a race to the conditional UPDATE alone.
SKIP_LOCKED_DIALECTS = ('postgresql', 'mysql')
use_skip_locked = True


def skip_locked(s):
    """Whether a locking read in ``s`` may skip rows others locked."""
    return use_skip_locked and \
        s.get_bind().dialect.name in SKIP_LOCKED_DIALECTS
