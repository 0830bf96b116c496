"""Statements that SQLite runs on its sqlite3 connection directly.

Core's execute of a statement it has already compiled and cached still
costs 60-80 us of Python: the cache lookup, an execution context, the
parameters processed, a result built. That was a quarter of the API's
CPU for a new device profile or ARQ, the API's busiest writes, on
SQLite, where the all-in-one's API, conductor and agent share one
process and its Python is the API's speed. A ``DirectStatement`` is a
Core statement compiled once for SQLite; ``rows(conn, params)`` runs it
on the sqlite3 connection of ``conn``'s transaction (session.core_writer
or core_reader), with its parameters' bind processors and its columns'
result processors applied as Core applies them (DATETIME as text, an
Enum's check of its value), and a failure raised as the same SQLAlchemy
exception. On the other backends it is Core's execute: there a
statement's round trip to the server outweighs its Python.

SQLAlchemy's cursor events do not see these statements (echo does not
log them).
"""
import collections

from sqlalchemy import exc as sa_exc


class DirectStatement:
    """``core``: an INSERT whose values are bind parameters, or a SELECT
    of plain columns, with parameters bound by name."""

    def __init__(self, core):
        self.core = core
        self._sqlite = None

    def rows(self, conn, params):
        """The rows ``core`` returns for ``params`` (a dict; a list of
        dicts runs it once for each), with attribute access by column key;
        [] for a statement that returns none."""
        if conn.dialect.name != 'sqlite':
            if isinstance(params, list) and not params:
                return []
            result = conn.execute(self.core, params)
            return result.all() if result.returns_rows else []
        compiled = self._sqlite or self._compile(conn.dialect)
        return compiled.run(conn, params)

    def _compile(self, dialect):
        self._sqlite = _Compiled(self.core, dialect)
        return self._sqlite


class _Compiled:
    """``core`` as SQLite runs it: qmark SQL, parameter names in order
    with their bind processors, the result's row type and processors."""

    def __init__(self, core, dialect):
        compiled = core.compile(dialect=dialect)
        self.sql = compiled.string
        self.names = compiled.positiontup
        self.binds = [_processor(compiled.binds[name].type, dialect)
                      for name in self.names]
        columns = list(core.selected_columns) if core.is_select else []
        self.row_type = collections.namedtuple(
            'Row', [column.key for column in columns]) if columns else None
        self.results = [
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in columns]
        self.dbapi_error = dialect.dbapi.Error

    def _values(self, params):
        try:
            return tuple(value if bind is None else bind(value)
                         for value, bind in zip(
                             [params[name] for name in self.names],
                             self.binds))
        except Exception as exc:
            # NOTE: as Core reports a value its type refuses (an Enum's
            # unknown value) or a parameter left out.
            raise sa_exc.StatementError(str(exc), self.sql, params,
                                        exc) from exc

    def _row(self, raw):
        return self.row_type._make(
            value if result is None else result(value)
            for value, result in zip(raw, self.results))

    def run(self, conn, params):
        sqlite = conn.connection.driver_connection
        many = isinstance(params, list)
        values = [self._values(p) for p in params] if many \
            else self._values(params)
        try:
            if many:
                if values:
                    sqlite.executemany(self.sql, values)
                return []
            cursor = sqlite.execute(self.sql, values)
            if self.row_type is None:
                return []
            return [self._row(raw) for raw in cursor.fetchall()]
        except self.dbapi_error as exc:
            # NOTE: the exception Core raises for it (IntegrityError for a
            # unique name taken, OperationalError for a locked database).
            raise sa_exc.DBAPIError.instance(
                self.sql, params, exc, self.dbapi_error) from exc


def _processor(type_, dialect):
    return type_.dialect_impl(dialect).bind_processor(dialect)
