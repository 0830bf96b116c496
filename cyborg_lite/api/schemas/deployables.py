"""Query strings of /v2/deployables."""
from cyborg_lite.api.schemas import common
from cyborg_lite.db import deployables as db_deployables

_TEXT = {'type': 'string', 'maxLength': 255}

LIST_QUERY = common.list_query(db_deployables.SORT_KEYS, {
    'name': _TEXT, 'device_id': common.QUERY_INT, 'rp_uuid': common.UUID,
    'driver_name': _TEXT, 'region_type': _TEXT, 'function_id': _TEXT,
})
