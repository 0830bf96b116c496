"""api/json_list.py: a row's text from the database, with the caller's raw
values between, is json.dumps's text of the row's dict.

SQLite is played here by ``_database_row``: it fills a JsonText's columns
as db/sql/json_text.py's SQL does (json.dumps without ensure_ascii: SQLite
leaves characters past ASCII as they are). The real thing is checked on
SQLite, PostgreSQL and MariaDB by tests/functional/api/test_list_bodies.py.
"""
import json

import pytest

from cyborg_lite.api import json_list
from cyborg_lite.db.sql import json_text

ODD = ['plain', 'a "quote" and \\ backslash', 'new\nline\ttab\r',
       'percent %s %% %d', 'é ü 中文 \u2028', '\x00\x1f', 'del \x7f', '',
       None, 0, -7, 'trailing\n', '\\u0041 is not an escape']
LINK = '[{"href": %s, "rel": "self"}]'


def _database_row(segments, values):
    texts = []
    for segment in segments:
        text = segment[0]
        for index in range(1, len(segment), 2):
            value = json.dumps(values[segment[index]], ensure_ascii=False)
            text += value + segment[index + 1]
        texts.append(text)
    return texts


def _format():
    return json_list.RowFormat(['uuid', 'a', 'links', 'raw', '%k"'],
                               {'links': LINK}, raw=['raw'],
                               columns={'links': 'href'})


def test_columns_are_the_uuid_then_the_texts_around_raw_values():
    assert _format().columns() == (
        'uuid',
        json_text.JsonText(['{"uuid": ', 'uuid', ', "a": ', 'a',
                            ', "links": [{"href": ', 'href',
                            ', "rel": "self"}], "raw": ']),
        json_text.JsonText([', "%k\\"": ', '%k"', '}']))


def test_rows_are_json_dumps_of_the_dicts():
    fmt = _format()
    dicts = [{'uuid': 'u%d' % i, 'a': v,
              'links': [{'href': 'http://x/%d' % i, 'rel': 'self'}],
              'raw': {'n': i, 'odd': ODD[i]}, '%k"': ODD[-1 - i]}
             for i, v in enumerate(ODD)]
    rows = []
    for d in dicts:
        values = dict(d, href=d['links'][0]['href'])
        rows.append([d['uuid']]
                    + _database_row(fmt.segments, values)
                    + ['ignored'])
    raw = {'raw': [json.dumps(d['raw']) for d in dicts]}
    assert '[%s]' % ''.join(fmt.encode(rows, raw)) == json.dumps(dicts)


def test_a_row_without_raw_keys_is_the_databases_text():
    fmt = json_list.RowFormat(['uuid', 'n'])
    [segment] = fmt.segments
    rows = [('u1', '{"uuid": "u1", "n": 1}'),
            ('u2', '{"uuid": "u2", "n": 2}')]
    assert segment == ('{"uuid": ', 'uuid', ', "n": ', 'n', '}')
    assert fmt.encode(rows) == [
        '{"uuid": "u1", "n": 1}, {"uuid": "u2", "n": 2}']


def test_adjacent_raw_keys_have_an_empty_text_between():
    fmt = json_list.RowFormat(['uuid', 'x', 'y'], raw=['y', 'x'])
    assert fmt.raw == ('x', 'y')
    assert fmt.columns()[1:] == (('{"uuid": ', 'uuid', ', "x": '),
                                 (', "y": ',), ('}',))
    rows = [('u', '{"uuid": "u", "x": ', ', "y": ', '}')]
    assert fmt.encode(rows, {'x': ['[1]'], 'y': ['null']}) == \
        ['{"uuid": "u", "x": [1], "y": null}']


def test_no_rows_is_no_text():
    assert json_list.RowFormat(['uuid']).encode([]) == []


def test_a_long_list_comes_in_pieces_of_about_piece_size():
    fmt = json_list.RowFormat(['uuid', 'n'])
    dicts = [{'uuid': 'u%05d' % i, 'n': 'x' * 90} for i in range(3000)]
    dicts[1500]['n'] = 'é'     # re-encoded in its piece only
    rows = [(d['uuid'], json.dumps(d, ensure_ascii=False)) for d in dicts]
    pieces = fmt.encode(rows)
    assert '[%s]' % ''.join(pieces) == json.dumps(dicts)
    assert len(pieces) > 3
    assert all(len(p) <= json_list.PIECE_SIZE + 200 for p in pieces)


@pytest.mark.parametrize('rows,raw', [
    ([('u', '{')], {}),                  # too few values per row
    ([('u', '{', '}')], {'c': []}),      # a raw column of the wrong length
    ([('u', '{', '}')], {'d': ['1']}),   # not the raw keys
])
def test_rows_must_fit_the_columns(rows, raw):
    fmt = json_list.RowFormat(['uuid', 'c'], raw=['c'])
    with pytest.raises(ValueError):
        fmt.encode(rows, raw)


@pytest.mark.parametrize('keys,kwargs', [
    (['uuid'], {'raw': ['b']}),               # raw keys must be keys
    (['a'], {}),                              # a uuid to page by
    (['uuid'], {'raw': ['uuid']}),            # ... read from the database
    (['uuid', 'l'], {'wraps': {'l': '[%s, %s]'}}),   # one value a wrap
])
def test_formats_that_cannot_be_listed(keys, kwargs):
    with pytest.raises(ValueError):
        json_list.RowFormat(keys, **kwargs)
