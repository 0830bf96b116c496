"""Reads of devices for the API (the conductor owns device writes)."""
import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.db import models
from cyborg_lite.db import pagination
from cyborg_lite.db import session

FILTERS = ('type', 'vendor', 'hostname', 'status')
SORT_KEYS = ('created_at', 'uuid', 'type', 'vendor', 'hostname', 'status')


def list_devices(filters=None, **page):
    """Devices matching ``filters`` (exact match on FILTERS), one page.

    ``page`` is sort_key, sort_dir, limit and marker for
    pagination.paginate.
    """
    stmt = sa.select(models.Device)
    stmt = pagination.apply_filters(stmt, models.Device, FILTERS, filters)
    with session.reader() as s:
        rows = pagination.paginate(s, stmt, models.Device, **page)
    return [row[0] for row in rows]


def get_device(uuid):
    with session.reader() as s:
        device = s.scalars(sa.select(models.Device)
                           .where(models.Device.uuid == uuid)).first()
    if device is None:
        raise exception.DeviceNotFound(uuid=uuid)
    return device
