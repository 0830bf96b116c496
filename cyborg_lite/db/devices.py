"""Reads of devices: the API's, and everything one host offers (for
objects/host_inventory.py). The conductor's report writes devices
(db/inventory.py)."""
import collections

import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.db import deployables
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


HostRows = collections.namedtuple(
    'HostRows', ['devices', 'deployables', 'attributes', 'handles'])


def host_rows(hostname, url=None):
    """Everything one host offers, read in one transaction: its devices
    and deployables in id order, {deployable id: {key: value}} of their
    attributes and {deployable id: [attach handle]} in id order."""
    with session.reader(url) as s:
        devices = s.scalars(sa.select(models.Device)
                            .where(models.Device.hostname == hostname)
                            .order_by(models.Device.id)).all()
        deps = s.scalars(sa.select(models.Deployable)
                         .where(models.Deployable.device_id.in_(
                             [d.id for d in devices]))
                         .order_by(models.Deployable.id)).all()
        dep_ids = [d.id for d in deps]
        attributes = {dep_id: dict(pairs) for dep_id, pairs in
                      deployables.attributes_of(s, dep_ids).items()}
        handles = collections.defaultdict(list)
        if dep_ids:
            for handle in s.scalars(
                    sa.select(models.AttachHandle)
                    .where(models.AttachHandle.deployable_id.in_(dep_ids))
                    .order_by(models.AttachHandle.id)):
                handles[handle.deployable_id].append(handle)
        return HostRows(list(devices), list(deps), attributes, dict(handles))
