"""Attributes: reads, and the admin's create/delete from the API."""

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cyborg_lite.common import exception
from cyborg_lite.common import uuids
from cyborg_lite.db import models
from cyborg_lite.db.sql import pagination
from cyborg_lite.db.sql import session

FILTERS = ('deployable_id', 'key')
SORT_KEYS = ('created_at', 'uuid', 'key', 'deployable_id')


def list_attributes(filters=None, **page):
    stmt = sa.select(models.Attribute)
    stmt = pagination.apply_filters(stmt, models.Attribute, FILTERS, filters)
    with session.reader() as s:
        rows = pagination.paginate(s, stmt, models.Attribute, **page)
    return [row[0] for row in rows]


def get_attribute(uuid):
    with session.reader() as s:
        attr = s.scalars(sa.select(models.Attribute)
                         .where(models.Attribute.uuid == uuid)).first()
    if attr is None:
        raise exception.AttributeNotFound(uuid=uuid)
    return attr


def create_attribute(deployable_id, key, value):
    """Add one attribute; the deployable must exist (else InvalidField)."""
    try:
        with session.writer() as s:
            if s.get(models.Deployable, deployable_id) is None:
                raise exception.InvalidField(
                    field='deployable_id',
                    reason='no deployable has id %s' % deployable_id)
            attr = models.Attribute(uuid=uuids.new(),
                                    deployable_id=deployable_id, key=key,
                                    value=value)
            s.add(attr)
    except sa_exc.IntegrityError:
        # NOTE: the (deployable_id, key) unique constraint decides, so two
        # concurrent creates cannot both succeed.
        raise exception.AttributeExists(deployable_id=deployable_id, key=key)
    return attr


def delete_attribute(uuid):
    with session.writer() as s:
        result = s.execute(sa.delete(models.Attribute)
                           .where(models.Attribute.uuid == uuid))
        if result.rowcount == 0:
            raise exception.AttributeNotFound(uuid=uuid)
