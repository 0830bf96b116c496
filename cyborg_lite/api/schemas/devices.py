"""Query strings of /v2/devices."""
from cyborg_lite.api.schemas import common
from cyborg_lite.db import devices as db_devices
from cyborg_lite.db import models

_TEXT = {'type': 'string', 'maxLength': 255}

LIST_QUERY = common.list_query(db_devices.SORT_KEYS, {
    # Enumerations: the database refuses to even compare with another
    # value of an enumerated column.
    'type': {'type': 'string', 'enum': list(models.DEVICE_TYPES)},
    'vendor': _TEXT, 'hostname': _TEXT,
    'status': {'type': 'string', 'enum': list(models.DEVICE_STATUSES)},
})
