"""Rows' JSON text for long lists (api/json_list.py).

``JsonText(parts)`` names, for ``pagination.list_columns``, one column
whose value is text: ``parts`` alternate literal text and column names,
``(text, name, text, ..., text)``, and each named column's value comes as
its JSON, as ``json.dumps`` writes it: a string, an integer or ``null``.

Who writes it depends on the database (``for_dialect``):

- SQLite, in this process: the database, ``printf(form, json_quote(v1),
  ...)``, in C, and the driver hands back one string per row instead of
  one per value. Its escapes are json.dumps's (``"``, ``\\``, ``\\n`` ...
  ``\\u001f``), but it writes characters past ASCII and DEL as they are:
  api/json_list.py re-encodes the rare row that has them.
- PostgreSQL and MariaDB: this module, from the values the query reads
  (one ``json.dumps`` for all of them). A server database's CPU is shared
  by every API worker; writing the JSON there (``to_json``, ``JSON_QUOTE``)
  took it 2.6 times the CPU of reading the rows
  (docs/benchmarks-history.md 8.1).
"""
import functools
import itertools
import json

import sqlalchemy as sa
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression
from sqlalchemy.sql import visitors

# NOTE: json.dumps escapes a newline inside a string, so a raw one only
# ever separates the items of a list of scalars encoded with it.
_ITEM_SEPARATOR = '\n'


class JsonText(tuple):
    """Literal texts and column names, alternating; texts at both ends."""

    def __new__(cls, parts):
        parts = tuple(parts)
        if len(parts) % 2 != 1:
            raise ValueError('JsonText parts must start and end with text')
        return super().__new__(cls, parts)

    def expression(self, column_of):
        """The SQL expression; ``column_of(name)`` gives a column."""
        return _Text(self[0::2], [_checked(column_of(name))
                                  for name in self[1::2]])


class _Text(expression.FunctionElement):
    """``texts[0]``, the first value as JSON, ``texts[1]`` ...
    ``texts[-1]``."""
    type = sa.String()
    inherit_cache = True
    name = 'json_text'
    # NOTE: the texts are SQL literals, so part of the statement's cache
    # key: two lists with other keys must not share a compiled statement.
    _traverse_internals = expression.FunctionElement._traverse_internals + [
        ('texts', visitors.InternalTraversal.dp_string_list)]

    def __init__(self, texts, values):
        self.texts = tuple(texts)
        if any(_ITEM_SEPARATOR in text for text in self.texts):
            raise ValueError('a JsonText literal has a raw newline')
        super().__init__(*values)

    @property
    def form(self):
        """The texts as a %-format with one %s per value."""
        return '%s'.join(text.replace('%', '%%') for text in self.texts)


def _checked(column):
    if isinstance(column.type, (sa.Boolean, sa.Float, sa.Numeric)):
        # NOTE: SQLite keeps booleans as 0/1 and formats floats its own
        # way: neither would be what json.dumps writes.
        raise TypeError('a JsonText value of %r (%s) is not supported'
                        % (column, column.type))
    return column


@compiler.compiles(_Text, 'sqlite')
def _sqlite_text(element, compiler_, **kw):
    # NOTE: one pass: ``||`` copies the row's text once per value, and
    # concat() is SQLite 3.44's.
    values = ['json_quote(%s)' % compiler_.process(column, **kw)
              for column in element.clauses]
    form = compiler_.render_literal_value(element.form, sa.String())
    return 'printf(%s)' % ', '.join([form] + values)


@compiler.compiles(_Text)
def _elsewhere(element, compiler_, **kw):
    raise sa.exc.CompileError('JsonText is written by SQLite only; '
                              'for_dialect reads its values elsewhere')


def for_dialect(stmt, dialect_name):
    """(statement, finish): what to execute for the select ``stmt`` on
    ``dialect_name``, and ``finish(rows)`` giving the driver's tuples with
    each JsonText column as its text."""
    columns = list(stmt.selected_columns)
    if dialect_name == 'sqlite' or not any(isinstance(c, _Text)
                                           for c in columns):
        return stmt, _as_read
    selected, plan = [], []
    for column in columns:
        if isinstance(column, _Text):
            plan.append((len(selected), len(column.clauses), column.form))
            selected.extend(column.clauses)
        else:
            plan.append((len(selected), 1, None))
            selected.append(column)
    return (stmt.with_only_columns(*selected),
            functools.partial(_with_texts, plan))


def _as_read(rows):
    return rows


def _with_texts(plan, rows):
    if not rows:
        return rows
    columns = []
    for start, width, form in plan:
        if form is None:
            columns.append([row[start] for row in rows])
            continue
        values = _dumped(itertools.chain.from_iterable(
            row[start:start + width] for row in rows))
        # NOTE: one %-format of the rows' forms joined, split again: the
        # texts and the values' JSON have no raw newline.
        texts = _ITEM_SEPARATOR.join([form] * len(rows)) % tuple(values)
        columns.append(texts.split(_ITEM_SEPARATOR))
    return list(zip(*columns))


def _dumped(values):
    """The JSON text of each value, from one json.dumps call (C)."""
    text = json.dumps(list(values), separators=(_ITEM_SEPARATOR, ': '))
    return text[1:-1].split(_ITEM_SEPARATOR) if text != '[]' else []
