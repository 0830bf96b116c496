"""Long list bodies, encoded in bulk.

Building a dict per row and handing 10,000 of them to ``json.dumps`` costs
more in Python's per-row work than in the encoder. Here the rows' values
are encoded by one ``json.dumps`` call (C), placed by slices, and the
objects assembled by one %-format of the row template repeated: no Python
loop per row or value. The text is exactly what ``json.dumps`` (default
separators, ASCII) gives for the same dicts, so a list and the one-object
view agree byte for byte.

    fmt = RowFormat(['uuid', 'links', 'reasons'],
                    wraps={'links': '[{"href": %s, "rel": "self"}]'},
                    raw=['reasons'])
    text = fmt.encode([(uuid, href), ...], {'reasons': ['[]', ...]})
"""
import itertools
import json

# NOTE: json.dumps escapes a newline inside a string, so a raw one only
# ever separates the items of a list of scalars encoded with it.
_ITEM_SEPARATOR = '\n'


def encode_scalars(values):
    """The JSON text of each value; values are str, int, bool, float or
    None (one json.dumps call for all)."""
    if not values:
        return []
    text = json.dumps(values, separators=(_ITEM_SEPARATOR, ': '))
    return text[1:-1].split(_ITEM_SEPARATOR)


class RowFormat:
    """The JSON object of one row: ``keys`` in order. A key's value is
    placed in ``wraps[key]`` (a template with one %s) when given. The keys
    in ``raw`` take JSON texts the caller encoded; the others come from
    the rows, in key order."""

    def __init__(self, keys, wraps=None, raw=()):
        wraps = wraps or {}
        self.keys = tuple(keys)
        self.raw = tuple(raw)
        unknown = set(self.raw) - set(self.keys)
        if unknown:
            raise ValueError('raw keys %s are not keys' % sorted(unknown))
        self.row_keys = tuple(k for k in self.keys if k not in self.raw)
        self._template = '{%s}' % ', '.join(
            '%s: %s' % (json.dumps(key).replace('%', '%%'),
                        wraps.get(key, '%s'))
            for key in self.keys)

    def encode(self, rows, raw=None):
        """The rows' objects joined as in a JSON list, without brackets.

        :param rows: sequences starting with the values of ``row_keys`` in
            order (str, int, bool, float or None); any further values of
            a row are ignored (the caller's, for its ``raw`` columns).
        :param raw: {key: [JSON text per row]} for each of ``raw``.
        """
        raw = raw or {}
        if set(raw) != set(self.raw):
            raise ValueError('raw columns %s, not %s'
                             % (sorted(raw), sorted(self.raw)))
        count = len(rows)
        if any(len(column) != count for column in raw.values()):
            raise ValueError('a raw column is not one text per row')
        if not count:
            return ''
        width = len(rows[0])
        if width < len(self.row_keys):
            raise ValueError('rows of %d values for %d keys'
                             % (width, len(self.row_keys)))
        values = encode_scalars(list(itertools.chain.from_iterable(rows)))
        if len(values) != count * width:
            raise ValueError('rows of different lengths')
        args = [None] * (count * len(self.keys))
        step = len(self.keys)
        taken = 0
        for index, key in enumerate(self.keys):
            if key in raw:
                args[index::step] = raw[key]
            else:
                args[index::step] = values[taken::width]
                taken += 1
        return ', '.join([self._template] * count) % tuple(args)
