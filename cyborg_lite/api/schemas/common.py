"""Pieces shared by the resource schemas."""
from cyborg_lite.common import states

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


# --- responses (docs/api/openapi.yaml; the tests validate every answer) ---

STRING = {'type': 'string'}
NULLABLE_STRING = {'type': ['string', 'null']}
INTEGER = {'type': 'integer'}
NULLABLE_INTEGER = {'type': ['integer', 'null']}
LINKS = {'type': 'array', 'items': {
    'type': 'object', 'required': ['href', 'rel'],
    'properties': {'href': STRING, 'rel': STRING},
    'additionalProperties': False}}
TIMESTAMPS = {'created_at': STRING, 'updated_at': NULLABLE_STRING}
# Where a device or deployable sits (2.6): null where unknown.
TOPOLOGY = {'numa_node': NULLABLE_INTEGER, 'local_cpulist': NULLABLE_STRING,
            'socket': NULLABLE_INTEGER, 'pcie_root': NULLABLE_STRING,
            'pci_bus_id': NULLABLE_STRING}
# A device's or deployable's health, from 2.7 (common/states.HEALTH).
HEALTH = {
    'health': {'type': 'string', 'enum': list(states.HEALTH.states)},
    'health_reason': NULLABLE_STRING,
    'health_since': NULLABLE_STRING,
}


def view(properties, optional=()):
    """One object as the API shows it: exactly these fields, all present
    but the ``optional`` ones (shown from some microversion on)."""
    properties = dict(properties, links=LINKS, **TIMESTAMPS)
    return {'type': 'object', 'properties': properties,
            'required': sorted(set(properties) - set(optional)),
            'additionalProperties': False}


def collection(key, item):
    """A list body: ``{key: [item, ...]}``, with ``<key>_links`` (next)
    when the page is full."""
    return {'type': 'object',
            'properties': {key: {'type': 'array', 'items': item},
                           key + '_links': LINKS},
            'required': [key], 'additionalProperties': False}
