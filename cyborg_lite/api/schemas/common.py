"""Pieces shared by the resource schemas."""

UUID_PATTERN = ('^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-'
                '[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$')
UUID = {'type': 'string', 'pattern': UUID_PATTERN}
NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255}
# A query-string integer: digits only, at most 9 so it always fits an int.
QUERY_INT = {'type': 'string', 'pattern': '^[0-9]{1,9}$'}


def list_query(sort_keys, filters=None):
    """Schema of a list's query string: filters plus limit/marker/sort."""
    properties = {
        'limit': {'type': 'string', 'pattern': '^[1-9][0-9]{0,8}$'},
        'marker': UUID,
        'sort_key': {'type': 'string', 'enum': list(sort_keys)},
        'sort_dir': {'type': 'string', 'enum': ['asc', 'desc']},
    }
    properties.update(filters or {})
    return {'type': 'object', 'properties': properties,
            'additionalProperties': False}
