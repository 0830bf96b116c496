"""Query strings of /v2/deployables."""
from cyborg_lite.api.schemas import common
from cyborg_lite.common import states
from cyborg_lite.db import deployables as db_deployables

_TEXT = {'type': 'string', 'maxLength': 255}

LIST_QUERY = common.list_query(db_deployables.SORT_KEYS, {
    'name': _TEXT, 'device_id': common.QUERY_INT, 'rp_uuid': common.UUID,
    'driver_name': _TEXT, 'region_type': _TEXT, 'function_id': _TEXT,
})


# What GET shows of a deployable (Cyborg's fields, then our own;
# ``device_state`` and ``cleaning_error`` from 2.5, topology from 2.6,
# health from 2.7).
VIEW = common.view({
    'uuid': common.STRING, 'name': common.STRING,
    'parent_id': common.NULLABLE_INTEGER, 'root_id': common.NULLABLE_INTEGER,
    'device_id': common.INTEGER, 'num_accelerators': common.INTEGER,
    # A JSON text of [{key: value}, ...], as Cyborg shows it.
    'attributes_list': common.STRING, 'rp_uuid': common.NULLABLE_STRING,
    'driver_name': common.STRING, 'bitstream_id': common.NULLABLE_STRING,
    'region_type': common.NULLABLE_STRING,
    'function_id': common.NULLABLE_STRING,
    'function_name': common.NULLABLE_STRING,
    'local_memory_mb': common.INTEGER,
    'device_state': {'type': 'string', 'enum': list(states.DEVICE.states)},
    'cleaning_error': common.NULLABLE_STRING,
    **common.TOPOLOGY, **common.HEALTH,
}, optional=['device_state', 'cleaning_error', *common.TOPOLOGY,
             *common.HEALTH])
LIST = common.collection('deployables', VIEW)
