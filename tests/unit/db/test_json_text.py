"""db/json_text.py: what each backend is asked to write. Its output is
checked against the one-object views on all three backends by
tests/functional/api/test_list_bodies.py."""
import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from cyborg_lite.db import json_text

NAME = sa.column('name', sa.String)
COUNT = sa.column('count', sa.Integer)


def _sql(element, dialect):
    return str(element.compile(dialect=dialect))


def test_each_backend_writes_a_value_as_json():
    assert _sql(json_text.value(NAME), sqlite.dialect()) == \
        'json_quote(name)'
    assert _sql(json_text.value(NAME), postgresql.dialect()) == \
        "COALESCE(to_json(name)::text, 'null')"
    assert _sql(json_text.value(NAME), mysql.dialect()) == \
        "COALESCE(JSON_QUOTE(name), 'null')"
    # MySQL's JSON_QUOTE would write a number as a string.
    assert _sql(json_text.value(COUNT), mysql.dialect()) == \
        "COALESCE(CAST(count AS CHAR), 'null')"


@pytest.mark.parametrize('type_', [sa.Boolean, sa.Float, sa.Numeric])
def test_values_json_dumps_would_spell_otherwise_are_refused(type_):
    with pytest.raises(TypeError):
        _sql(json_text.value(sa.column('x', type_)), sqlite.dialect())


def test_a_text_is_its_literals_around_the_values_in_one_call():
    text = json_text.JsonText(['{"100%": ', 'name', ', "n": ', 'count', '}'])
    expression = text.expression({'name': NAME, 'count': COUNT}.get)
    assert _sql(expression, sqlite.dialect()) == (
        """printf('{"100%%": %s, "n": %s}', json_quote(name), """
        """json_quote(count))""")
    # psycopg2 and pymysql read %% as %.
    assert _sql(expression, postgresql.dialect()) == (
        """CONCAT('{"100%%": ', COALESCE(to_json(name)::text, 'null'), """
        """', "n": ', COALESCE(to_json(count)::text, 'null'), '}')""")


def test_literal_texts_are_part_of_the_statements_cache_key():
    def statement(key):
        text = json_text.JsonText(['{"%s": ' % key, 'name', '}'])
        return sa.select(text.expression({'name': NAME}.get))
    assert statement('a')._generate_cache_key() != \
        statement('b')._generate_cache_key()
    assert statement('a')._generate_cache_key() == \
        statement('a')._generate_cache_key()
