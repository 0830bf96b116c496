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
    pagination.paginate. The devices are read-only rows with the columns
    as attributes (not ORM objects: building 10,000 of those cost twice
    the query itself).
    """
    stmt = sa.select(models.Device.__table__)
    stmt = pagination.apply_filters(stmt, models.Device, FILTERS, filters)
    with session.reader() as s:
        return pagination.paginate(s, stmt, models.Device, **page)


def get_device(uuid):
    with session.reader() as s:
        device = s.scalars(sa.select(models.Device)
                           .where(models.Device.uuid == uuid)).first()
    if device is None:
        raise exception.DeviceNotFound(uuid=uuid)
    return device
