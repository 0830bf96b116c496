"""The regions of one-region devices an explain counts, grouped in SQL.

An explain's funnel (placement/explain.py) reads a region only through
the facts that decide its offer and its availability; regions that share
them all are one kind, counted once. For a device with one region those
facts are columns of its own rows: the device's, its host agent's state,
the region's, its ``rc``, ``trait*`` and ``bind`` attributes and, of its
attach handles, whether there is one, whether one is free and whether a
Kubernetes claim holds one in use (a look-up by the region's id each).
The database groups them (``rows``): a few dozen rows for thousands of
regions, with their number and hosts.

What is read region by region instead (db/devices.fleet_rows, with
``MULTI_REGION``): a device of several regions, whose regions share
functions and exclude a whole card (what the Python of the views
decides). A free handle of a one-region device is never counted as held
through another device's handle: a function is shared by the regions of
one device (common/shared_functions.py).
"""
import sqlalchemy as sa

from cyborg_lite.db import models

_AGENT = models.Agent.__table__
_DEVICE = models.Device.__table__
_DEP = models.Deployable.__table__
_ATTR = models.Attribute.__table__
_HANDLE = models.AttachHandle.__table__
_CLAIM = models.KubernetesClaimDevice.__table__
# Traits and resource classes are Placement names ([A-Z0-9_]), hostnames
# DNS names: none holds a comma.
SEPARATOR = ','


def stored_text(column):
    """``column`` as the text it stores: an enum's result processor (a
    call per value) is most of a plain read of thousands of rows."""
    return sa.type_coerce(column, sa.String()).label(column.name)


# The devices with more than one region.
MULTI_REGION = (sa.select(_DEP.c.device_id).group_by(_DEP.c.device_id)
                .having(sa.func.count() > 1))


# What a region's attributes, handles and claims tell, one look-up each
# (by the region's id, indexed): the attributes the funnel reads as
# ``key=value`` (SEPARATOR between, in no order); whether every handle
# is in use (1), one is free (0) or there is none (NULL); whether a
# Kubernetes claim holds one of its handles in use.
_ATTRIBUTES = (
    sa.select(sa.func.aggregate_strings(
        _ATTR.c.key + '=' + _ATTR.c.value, SEPARATOR))
    .where(_ATTR.c.deployable_id == _DEP.c.id,
           sa.or_(_ATTR.c.key.in_(('rc', 'bind')),
                  _ATTR.c.key.like('trait%')))
    .scalar_subquery())
_ALL_IN_USE = (
    sa.select(sa.func.min(sa.case((_HANDLE.c.in_use == sa.true(), 1),
                                  else_=0)))
    .where(_HANDLE.c.deployable_id == _DEP.c.id).scalar_subquery())
_CLAIMED = sa.exists().where(
    _CLAIM.c.deployable_id == _DEP.c.id,
    _HANDLE.c.id == _CLAIM.c.attach_handle_id,
    _HANDLE.c.deployable_id == _DEP.c.id, _HANDLE.c.in_use == sa.true())
# One row a region: the columns of placement/explain.KindRow but its
# count and hosts, then its hostname.
_REGION_FACTS = sa.select(
    stored_text(_AGENT.c.state).label('agent_state'),
    stored_text(_DEVICE.c.type).label('device_type'), _DEVICE.c.vendor,
    stored_text(_DEVICE.c.status).label('status'),
    stored_text(_DEVICE.c.health).label('device_health'),
    _DEVICE.c.numa_node.label('device_numa_node'),
    _DEP.c.num_accelerators, _DEP.c.region_type, _DEP.c.function_id,
    _DEP.c.local_memory_mb, stored_text(_DEP.c.device_state),
    stored_text(_DEP.c.health), _DEP.c.numa_node,
    _ATTRIBUTES.label('attributes'), _ALL_IN_USE.label('all_in_use'),
    _CLAIMED.label('claimed'), _DEVICE.c.hostname,
).select_from(_DEP.join(_DEVICE, _DEVICE.c.id == _DEP.c.device_id)
              .outerjoin(_AGENT, _AGENT.c.hostname == _DEVICE.c.hostname))


def _grouped(where):
    facts = _REGION_FACTS.where(where).subquery()
    keys = [c for c in facts.c if c.name != 'hostname']
    return sa.select(*keys, sa.func.count().label('regions'),
                     sa.func.aggregate_strings(facts.c.hostname, SEPARATOR)
                     .label('hosts')).group_by(*keys)


# Built once (every explain reads one of them).
_OF_FLEET = _grouped(_DEP.c.device_id.not_in(MULTI_REGION))
_OF_HOST = _grouped(sa.and_(_DEP.c.device_id.not_in(MULTI_REGION),
                            _DEVICE.c.hostname == sa.bindparam('hostname')))


def rows(s, hostname=None):
    """The kinds of the one-region devices' regions (of ``hostname``
    alone), read in ``s``'s transaction: tuples of the columns of
    placement/explain.KindRow, ``hosts`` a string of one hostname a
    region (SEPARATOR between)."""
    conn = s.connection()
    if conn.dialect.name == 'mysql':
        # GROUP_CONCAT cuts its result at this length (1 MB by default):
        # a hostname a region of a large fleet is longer.
        conn.exec_driver_sql('SET SESSION group_concat_max_len = 1073741824')
    if hostname is None:
        return conn.execute(_OF_FLEET).all()
    return conn.execute(_OF_HOST, {'hostname': hostname}).all()


def hostnames(s, hostname=None):
    """The hosts that have a device (of ``hostname`` alone), sorted."""
    statement = sa.select(_DEVICE.c.hostname).distinct()
    if hostname is not None:
        statement = statement.where(_DEVICE.c.hostname == hostname)
    return sorted(h for (h,) in s.connection().execute(statement))
