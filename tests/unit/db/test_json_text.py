"""db/sql/json_text.py: what SQLite is asked to write, and the same text
made from the values on the other backends. Both are checked against the
one-object views on all three backends by
tests/functional/api/test_list_bodies.py."""
import json

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from cyborg_lite.db.sql import json_text

TABLE = sa.table('t', sa.column('name', sa.String),
                 sa.column('count', sa.Integer), sa.column('id', sa.Integer))
TEXT = json_text.JsonText(['{"100%": ', 'name', ', "n": ', 'count', '}'])


def _select():
    return sa.select(TABLE.c.id, TEXT.expression(TABLE.c.get), TABLE.c.name)


def test_sqlite_writes_the_text_in_one_call():
    assert str(_select().compile(dialect=sqlite.dialect())) == (
        """SELECT t.id, printf('{"100%%": %s, "n": %s}', """
        """json_quote(t.name), json_quote(t.count)) AS json_text_1, """
        """t.name \nFROM t""")


def test_other_databases_are_not_asked_to_write_it():
    with pytest.raises(sa.exc.CompileError):
        _select().compile(dialect=postgresql.dialect())


def test_elsewhere_the_values_are_read_and_the_text_made_here():
    stmt, finish = json_text.for_dialect(_select(), 'postgresql')
    assert str(stmt.compile(dialect=postgresql.dialect())) == (
        'SELECT t.id, t.name, t.count, t.name AS name__1 \nFROM t')
    odd = 'quote " \\ \n \x01 \x7f é %s'
    rows = finish([(1, 'a', 5, 'a'), (2, odd, None, odd)])
    assert rows == [(1, '{"100%": "a", "n": 5}', 'a'),
                    (2, '{"100%%": %s, "n": null}' % json.dumps(odd), odd)]
    assert finish([]) == []


def test_on_sqlite_the_statement_is_read_as_it_is():
    stmt, finish = json_text.for_dialect(_select(), 'sqlite')
    assert stmt is not None and finish([(1, 'x', 'a')]) == [(1, 'x', 'a')]


@pytest.mark.parametrize('type_', [sa.Boolean, sa.Float, sa.Numeric])
def test_values_json_dumps_would_spell_otherwise_are_refused(type_):
    text = json_text.JsonText(['{"x": ', 'x', '}'])
    with pytest.raises(TypeError):
        text.expression({'x': sa.column('x', type_)}.get)


def test_literal_texts_are_part_of_the_statements_cache_key():
    def statement(key):
        text = json_text.JsonText(['{"%s": ' % key, 'name', '}'])
        return sa.select(text.expression(TABLE.c.get))
    assert statement('a')._generate_cache_key() != \
        statement('b')._generate_cache_key()
    assert statement('a')._generate_cache_key() == \
        statement('a')._generate_cache_key()


def test_json_text_starts_and_ends_with_text():
    with pytest.raises(ValueError):
        json_text.JsonText(['{', 'a'])
