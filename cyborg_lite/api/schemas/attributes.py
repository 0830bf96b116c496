"""Query strings and bodies of /v2/attributes."""
from cyborg_lite.api.schemas import common
from cyborg_lite.db import attributes as db_attributes

LIST_QUERY = common.list_query(db_attributes.SORT_KEYS, {
    'deployable_id': common.QUERY_INT,
    'key': {'type': 'string', 'maxLength': 255},
})

CREATE = {
    'type': 'object',
    'properties': {
        # Cyborg's attribute names its deployable by internal id.
        'deployable_id': {'type': 'integer', 'minimum': 1,
                          'maximum': 2 ** 31 - 1},
        'key': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'value': {'type': 'string', 'maxLength': 65535},
    },
    'required': ['deployable_id', 'key', 'value'],
    'additionalProperties': False,
}


VIEW = common.view({
    'uuid': common.STRING, 'deployable_id': common.INTEGER,
    'key': common.STRING, 'value': common.STRING,
})
LIST = common.collection('attributes', VIEW)
