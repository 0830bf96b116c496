"""Long list bodies, one text per row from the database layer
(db/sql/json_text.py).

An item of a list is the JSON object ``view`` makes of one row: its keys
in order, json.dumps's default separators and escapes. A RowFormat gives
the text of a row's object around its values, as JsonText columns; the
database layer hands back each row's text (SQLite writes it, in C; on a
server database it is made from the values read). The values only Python
works out (``raw`` keys: a device's reasons, an ARQ's attach handle
info, a deployable's attributes) the caller encodes, and they are placed
between those texts. Building a dict per row and handing 10,000 of them
to ``json.dumps`` cost most of a list. The text is what ``json.dumps``
gives for the same dicts, so a list and the one-object view agree byte
for byte (tests/functional/api/test_list_bodies.py).

    fmt = RowFormat(['uuid', 'links', 'reasons'],
                    wraps={'links': '[{"href": %s, "rel": "self"}]'},
                    raw=['reasons'], columns={'links': 'href'})
    rows = db.list_rows(fmt.columns() + ('status',), ...)
    pieces = fmt.encode(rows, {'reasons': ['[]', ...]})
"""
import json

from cyborg_lite.db.sql import json_text

# About how many characters a piece of a list's text has.
PIECE_SIZE = 64 * 1024


class RowFormat:
    """The JSON object of one row: ``keys`` in order. A key's value is
    placed in ``wraps[key]`` (a template with one %s) when given. The keys
    in ``raw`` take JSON texts the caller encoded; the others are read
    from the database column ``columns.get(key, key)``."""

    def __init__(self, keys, wraps=None, raw=(), columns=None):
        wraps = wraps or {}
        columns = columns or {}
        self.keys = tuple(keys)
        unknown = set(raw) - set(self.keys)
        self.raw = tuple(key for key in self.keys if key in raw)
        if unknown:
            raise ValueError('raw keys %s are not keys' % sorted(unknown))
        if 'uuid' not in self.keys or 'uuid' in self.raw:
            raise ValueError('a listed object has a uuid from the database')
        around = [tuple(wraps.get(key, '%s').split('%s')) for key in keys]
        if any(len(pair) != 2 for pair in around):
            raise ValueError('a wrap has one %s')
        # texts[i] comes before key i's value, texts[i + 1] after it.
        texts = ['{']
        for index, key in enumerate(self.keys):
            texts[-1] += '%s%s: %s' % (', ' if index else '', json.dumps(key),
                                       around[index][0])
            texts.append(around[index][1])
        texts[-1] += '}'
        segments, parts = [], [texts[0]]
        for index, key in enumerate(self.keys):
            if key in self.raw:
                segments.append(json_text.JsonText(parts))
                parts = [texts[index + 1]]
            else:
                parts += [columns.get(key, key), texts[index + 1]]
        segments.append(json_text.JsonText(parts))
        self.segments = tuple(segments)

    def columns(self):
        """The columns to read (db pagination.list_columns): ``uuid`` (a
        page's next link), then the texts between the raw values."""
        return ('uuid',) + self.segments

    def encode(self, rows, raw=None):
        """The rows' objects as in a JSON list, without brackets, in
        pieces of about PIECE_SIZE characters (joined, the text).

        :param rows: the values of ``columns()``, in order, then any of
            the caller's own (ignored here).
        :param raw: {key: [JSON text per row]} for each of ``raw``.
        """
        raw = raw or {}
        if set(raw) != set(self.raw):
            raise ValueError('raw columns %s, not %s'
                             % (sorted(raw), sorted(self.raw)))
        if any(len(column) != len(rows) for column in raw.values()):
            raise ValueError('a raw column is not one text per row')
        if not rows:
            return []
        if len(rows[0]) < len(self.segments) + 1:
            raise ValueError('rows of %d values for %d columns'
                             % (len(rows[0]), len(self.segments) + 1))
        pieces = [[row[1] for row in rows]]
        for index, key in enumerate(self.raw):
            pieces += [raw[key], [row[index + 2] for row in rows]]
        texts = list(map(''.join, zip(*pieces))) if self.raw else pieces[0]
        return _pieces(texts)


def _pieces(texts):
    # NOTE: a 4 MB string and its bytes are fresh pages for the kernel to
    # map and the WSGI server to copy on each partial send; pieces of 64K
    # reuse the allocator's memory.
    count = max(1, PIECE_SIZE // (len(texts[0]) + 2))
    pieces = []
    for start in range(0, len(texts), count):
        piece = ', '.join(texts[start:start + count])
        if not _as_dumped(piece):
            piece = ', '.join(map(_as_json_dumps, texts[start:start + count]))
        pieces.append(', ' + piece if start else piece)
    return pieces


def _as_dumped(text):
    """Whether the database's text is spelled as json.dumps would: it is
    unless a value has characters past ASCII or DEL (json.dumps writes
    \\uXXXX, SQLite the character)."""
    # NOTE: str.isascii is O(1); the search is C.
    return text.isascii() and '\x7f' not in text


def _as_json_dumps(text):
    """The text of one object as json.dumps spells it."""
    if _as_dumped(text):
        return text
    return json.dumps(json.loads(text))
