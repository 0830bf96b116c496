"""Reads of deployables (with their attributes) for the API."""
import collections

import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.db import models
from cyborg_lite.db import pagination
from cyborg_lite.db import session

FILTERS = ('name', 'device_id', 'rp_uuid', 'driver_name', 'region_type',
           'function_id')
SORT_KEYS = ('created_at', 'uuid', 'name', 'driver_name')


def _attributes_by_deployable(s, deployable_ids):
    """{deployable id: [(key, value), ...]} in key order."""
    result = collections.defaultdict(list)
    if not deployable_ids:
        return result
    rows = s.execute(sa.select(models.Attribute.deployable_id,
                               models.Attribute.key, models.Attribute.value)
                     .where(models.Attribute.deployable_id.in_(deployable_ids))
                     .order_by(models.Attribute.key))
    for dep_id, key, value in rows:
        result[dep_id].append((key, value))
    return result


def list_deployables(filters=None, **page):
    """[(deployable, [(key, value), ...]), ...] for one page."""
    stmt = sa.select(models.Deployable)
    stmt = pagination.apply_filters(stmt, models.Deployable, FILTERS, filters)
    with session.reader() as s:
        deps = [row[0] for row in
                pagination.paginate(s, stmt, models.Deployable, **page)]
        attrs = _attributes_by_deployable(s, [d.id for d in deps])
    return [(d, attrs[d.id]) for d in deps]


def get_deployable(uuid):
    """(deployable, [(key, value), ...]) or DeployableNotFound."""
    with session.reader() as s:
        dep = s.scalars(sa.select(models.Deployable)
                        .where(models.Deployable.uuid == uuid)).first()
        if dep is None:
            raise exception.DeployableNotFound(uuid=uuid)
        return dep, _attributes_by_deployable(s, [dep.id])[dep.id]
