"""JSON text built by the database, for long lists (api/json_list.py).

``JsonText(parts)`` names, for ``pagination.list_columns``, one column
whose value is text: ``parts`` alternate literal text and column names,
``(text, name, text, ..., text)``, and each named column's value comes as
its JSON (``value``): a JSON string, a number, or ``null``. The database
does per row what ``json.dumps`` would do per value in Python, in C, and
the driver hands back one string per row instead of one per value.

The escapes are json.dumps's (``"``, ``\\``, ``\\n`` ... ``\\u001f``), but
characters past ASCII and DEL come as they are, not as ``\\uXXXX``, and
MariaDB writes ``\\u001F``: api/json_list.py re-encodes the rare row
that has them.
"""
import sqlalchemy as sa
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression
from sqlalchemy.sql import visitors


class JsonText(tuple):
    """Literal texts and column names, alternating; texts at both ends."""

    def __new__(cls, parts):
        parts = tuple(parts)
        if len(parts) % 2 != 1:
            raise ValueError('JsonText parts must start and end with text')
        return super().__new__(cls, parts)

    def expression(self, column_of):
        """The SQL text expression; ``column_of(name)`` gives a column."""
        return _Text(self[0::2], [value(column_of(name))
                                  for name in self[1::2]])


class _Text(expression.FunctionElement):
    """``texts[0]``, the first value, ``texts[1]`` ... ``texts[-1]``, in
    one string built in one pass (``||`` would copy the row's text once
    per value)."""
    type = sa.String()
    inherit_cache = True
    name = 'json_text'
    # NOTE: the texts are SQL literals, so part of the statement's cache
    # key: two lists with other keys must not share a compiled statement.
    _traverse_internals = expression.FunctionElement._traverse_internals + [
        ('texts', visitors.InternalTraversal.dp_string_list)]

    def __init__(self, texts, values):
        self.texts = tuple(texts)
        super().__init__(*values)


def _literal(compiler_, text):
    return compiler_.render_literal_value(text, sa.String())


@compiler.compiles(_Text, 'sqlite')
def _sqlite_text(element, compiler_, **kw):
    # NOTE: concat() is SQLite 3.44's; printf() every version's.
    form = '%s'.join(text.replace('%', '%%') for text in element.texts)
    values = [compiler_.process(v, **kw) for v in element.clauses]
    return 'printf(%s)' % ', '.join([_literal(compiler_, form)] + values)


@compiler.compiles(_Text)
def _concat_text(element, compiler_, **kw):
    # NOTE: PostgreSQL's and MySQL's CONCAT take any number of arguments.
    args = [_literal(compiler_, element.texts[0])]
    for text, column in zip(element.texts[1:], element.clauses):
        args.append(compiler_.process(column, **kw))
        if text:
            args.append(_literal(compiler_, text))
    return 'CONCAT(%s)' % ', '.join(args)


class value(expression.FunctionElement):
    """``column``'s value as JSON text: a string, an integer or null."""
    type = sa.String()
    inherit_cache = True
    name = 'json_value'


def _checked(element):
    [column] = element.clauses
    if isinstance(column.type, (sa.Boolean, sa.Float, sa.Numeric)):
        # NOTE: SQLite and MySQL keep booleans as 0/1 and format floats
        # their own way: neither would be what json.dumps writes.
        raise TypeError('json_text.value of %r (%s) is not supported'
                        % (column, column.type))
    return column


@compiler.compiles(value, 'sqlite')
def _sqlite(element, compiler_, **kw):
    return 'json_quote(%s)' % compiler_.process(_checked(element), **kw)


@compiler.compiles(value, 'postgresql')
def _postgresql(element, compiler_, **kw):
    return "COALESCE(to_json(%s)::text, 'null')" % compiler_.process(
        _checked(element), **kw)


@compiler.compiles(value, 'mysql')
@compiler.compiles(value, 'mariadb')
def _mysql(element, compiler_, **kw):
    column = _checked(element)
    text = compiler_.process(column, **kw)
    if isinstance(column.type, sa.Integer):
        text = 'CAST(%s AS CHAR)' % text
    else:
        text = 'JSON_QUOTE(%s)' % text
    return "COALESCE(%s, 'null')" % text
