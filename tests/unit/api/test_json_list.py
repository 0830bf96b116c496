"""api/json_list.py: bulk encoding gives json.dumps's bytes."""
import json

import pytest

from cyborg_lite.api import json_list

ODD = ['plain', 'a "quote" and \\ backslash', 'new\nline\ttab\r',
       'percent %s %% %d', 'é ü 中文 \u2028', '\x00\x1f', '', None, 0, -7,
       True, False, 1.5, 'trailing\n']
LINK = '[{"href": %s, "rel": "self"}]'


def test_encode_scalars_is_json_dumps_of_each_value():
    assert json_list.encode_scalars(ODD) == [json.dumps(v) for v in ODD]


def test_encode_scalars_of_nothing():
    assert json_list.encode_scalars([]) == []


def test_rows_are_json_dumps_of_the_dicts():
    fmt = json_list.RowFormat(['a', 'links', 'raw', '%k"'],
                              {'links': LINK}, raw=['raw'])
    dicts = [{'a': v, 'links': [{'href': 'http://x/%d' % i, 'rel': 'self'}],
              'raw': {'n': i, 'odd': ODD[i]}, '%k"': ODD[-1 - i]}
             for i, v in enumerate(ODD)]
    # A row: the values of the keys not raw, then the caller's own.
    rows = [(d['a'], d['links'][0]['href'], d['%k"'], 'ignored', i)
            for i, d in enumerate(dicts)]
    raw = {'raw': [json.dumps(d['raw']) for d in dicts]}
    assert '[%s]' % fmt.encode(rows, raw) == json.dumps(dicts)


def test_no_rows_is_empty_text():
    assert json_list.RowFormat(['a']).encode([]) == ''


@pytest.mark.parametrize('rows,raw', [
    ([('1',)], {}),                       # too few values per row
    ([('1', '2', '3'), ('1', '2')], {}),  # rows of different lengths
    ([('1', '2')], {'c': []}),            # a raw column of the wrong length
])
def test_rows_must_fit_the_keys(rows, raw):
    fmt = json_list.RowFormat(['a', 'b', 'c'], raw=['c'] if raw else ())
    if not raw:
        fmt = json_list.RowFormat(['a', 'b'])
    with pytest.raises(ValueError):
        fmt.encode(rows, raw)


def test_raw_keys_must_be_keys():
    with pytest.raises(ValueError):
        json_list.RowFormat(['a'], raw=['b'])
