"""Deployables: the API's reads, and the region lock and lookups that
binds and programming jobs share (a region is a deployable)."""
import collections

import sqlalchemy as sa

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import resources
from cyborg_lite.common import shared_functions
from cyborg_lite.db import attach_handles
from cyborg_lite.db import models
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import pagination
from cyborg_lite.db.sql import session

FILTERS = ('name', 'device_id', 'rp_uuid', 'driver_name', 'region_type',
           'function_id')
SORT_KEYS = ('created_at', 'uuid', 'name', 'driver_name')


def attributes_of(s, deployable_ids):
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


def list_deployable_rows(names, href_prefix, filters=None, **page):
    """Deployables matching ``filters``, one page, as the driver's tuples
    of ``names`` (pagination.list_columns), and {deployable id: [(key,
    value), ...]} of their attributes in key order (``names`` must end
    with ``id``). ``page`` is for pagination.paginate."""
    if names[-1] != 'id':
        raise ValueError('the last column must be the id')
    dep = models.Deployable
    stmt = pagination.apply_filters(
        sa.select(*pagination.list_columns(dep, names, href_prefix)), dep,
        FILTERS, filters)
    with session.core_reader(in_turn=True) as conn:
        page_stmt = pagination.page_statement(conn, stmt, dep, **page)
        rows = pagination.driver_rows(conn, page_stmt)
        attributes = collections.defaultdict(list)
        # NOTE: the page's ids by subquery, not as 10,000 bound values.
        for dep_id, key, value in pagination.driver_rows(conn, sa.select(
                models.Attribute.deployable_id, models.Attribute.key,
                models.Attribute.value)
                .where(models.Attribute.deployable_id.in_(
                    pagination.ids_of_page(page_stmt, dep)))
                .order_by(models.Attribute.deployable_id,
                          models.Attribute.key)):
            attributes[dep_id].append((key, value))
        return rows, attributes


def get_deployable(uuid):
    """(deployable, [(key, value), ...]) or DeployableNotFound."""
    with session.reader() as s:
        dep = s.scalars(sa.select(models.Deployable)
                        .where(models.Deployable.uuid == uuid)).first()
        if dep is None:
            raise exception.DeployableNotFound(uuid=uuid)
        return dep, attributes_of(s, [dep.id])[dep.id]


# --- regions: what binds and programming jobs share -------------------------
#
# A region (a deployable) is held by at most one of: a Bound ARQ, an active
# programming job. A bind and a job creation both lock the region's row
# first (lock_region), then look for the other kind of holder, so neither
# can slip past the other's check. Regions behind one PCI function (a card
# without SR-IOV) are one accelerator: a job locks every one of them
# (lock_function) and asks about their holders, a bind or a Kubernetes
# claim locks its region and asks about their jobs (sibling_programming).
# Locks are taken ARQ, then device, then region (several in id order),
# then attach handle, by every writer (a report locks devices before it
# writes their regions and handles), so PostgreSQL never deadlocks on
# them.

def lock_region(s, deployable_id):
    """Lock the region's row until the transaction ends (SQLite: the
    writer already holds the database lock)."""
    s.execute(_LOCK_REGION, {'deployable_id': deployable_id})


_LOCK_REGION = (sa.select(models.Deployable.id)
                .where(models.Deployable.id == sa.bindparam('deployable_id'))
                .with_for_update())


_DEVICE_TABLE = models.Device.__table__
_REGION_TABLE = models.Deployable.__table__
_JOB = models.ProgrammingJob
# The statements of a bind's locks and checks, built once (the bind's
# transaction is the hot path of the API's bind, see docs/benchmarks.md).
_DEVICE_OF = sa.select(_REGION_TABLE.c.device_id).where(
    _REGION_TABLE.c.id == sa.bindparam('deployable_id'))
# NOTE: the device alone, by id: a shared lock taken through a join would
# cover the region's row too on MariaDB (no FOR SHARE OF), and two binds
# of one region upgrading it would deadlock.
_DEVICE_SHARED = (sa.select(_DEVICE_TABLE)
                  .where(_DEVICE_TABLE.c.id == sa.bindparam('device_id'))
                  .with_for_update(read=True))
_REGION_LOCKED = (sa.select(_REGION_TABLE)
                  .where(_REGION_TABLE.c.id == sa.bindparam('deployable_id'),
                         _REGION_TABLE.c.device_id ==
                         sa.bindparam('device_id'))
                  .with_for_update())
_ACTIVE_JOB = (sa.select(_JOB.uuid)
               .where(_JOB.active_deployable_id ==
                      sa.bindparam('deployable_id'))
               .limit(1))
_ACTIVE_JOB_OF_ANOTHER = _ACTIVE_JOB.where(sa.or_(
    _JOB.arq_id.is_(None), _JOB.arq_id != sa.bindparam('arq_id')))


def makes_instance(deployable_id):
    """SQL: the deployable of id ``deployable_id`` (a column or value) is
    one whose bind makes the instance (device_records.MAKES_INSTANCE: a
    vGPU type, each handle a VF of its own)."""
    key, value = device_records.MAKES_INSTANCE
    attr = models.Attribute
    return sa.select(attr.id).where(attr.deployable_id == deployable_id,
                                    attr.key == key,
                                    attr.value == value).exists()


def lock_for_bind(s, deployable_id, device_id=None):
    """(device, deployable) of a region as plain rows, locked for a bind:
    the device row shared (sibling regions bind side by side, but a
    maintenance switch or a report waits for the bind, and the bind reads
    their committed result), then the region's row. None when the region
    is gone (or is not on ``device_id``, when the caller knows it)."""
    conn = s.connection()
    if device_id is None:
        device_id = conn.execute(
            _DEVICE_OF, {'deployable_id': deployable_id}).scalar()
    device = conn.execute(_DEVICE_SHARED, {'device_id': device_id}).first()
    if device is None:
        return None
    region = conn.execute(_REGION_LOCKED, {'deployable_id': deployable_id,
                                           'device_id': device_id}).first()
    return (device, region) if region is not None else None


_HANDLE_TABLE = models.AttachHandle.__table__
_OWN_HANDLE = _HANDLE_TABLE.alias('own_handle')
# The regions of a device whose handles name a function of the region's
# (canonical attach_info: common/shared_functions.py).
_BEHIND_ITS_FUNCTIONS = (
    sa.select(_HANDLE_TABLE.c.deployable_id).distinct()
    .join(_REGION_TABLE, _REGION_TABLE.c.id == _HANDLE_TABLE.c.deployable_id)
    .where(_REGION_TABLE.c.device_id == sa.bindparam('device_id'),
           _HANDLE_TABLE.c.attach_info.in_(
               sa.select(_OWN_HANDLE.c.attach_info).where(
                   _OWN_HANDLE.c.deployable_id ==
                   sa.bindparam('deployable_id')))))
_HANDLE_OF = _HANDLE_TABLE.alias('handle_of')
_REGION_OF = _REGION_TABLE.alias('region_of')
# The regions of the device of a handle's region whose handles name the
# handle's function (the handle's own region among them).
_BEHIND_HANDLE = (
    sa.select(_HANDLE_TABLE.c.deployable_id).distinct()
    .select_from(_HANDLE_OF)
    .join(_REGION_OF, _REGION_OF.c.id == _HANDLE_OF.c.deployable_id)
    .join(_REGION_TABLE,
          _REGION_TABLE.c.device_id == _REGION_OF.c.device_id)
    .join(_HANDLE_TABLE, sa.and_(
        _HANDLE_TABLE.c.deployable_id == _REGION_TABLE.c.id,
        _HANDLE_TABLE.c.attach_info == _HANDLE_OF.c.attach_info))
    .where(_HANDLE_OF.c.id == sa.bindparam('handle_id'))
    .order_by(_HANDLE_TABLE.c.deployable_id))
_REGIONS_LOCKED = (sa.select(_REGION_TABLE.c.id)
                   .where(_REGION_TABLE.c.id.in_(
                       sa.bindparam('ids', expanding=True)))
                   .order_by(_REGION_TABLE.c.id).with_for_update())


def lock_function(s, deployable_id):
    """Lock a region for a programming job with every region behind one
    of its functions: the device row shared (a report, which changes who
    is behind them, waits), then the regions in id order, then the whole
    card of a region offered with one, as a region's bind locks them
    (db/devices.region_rows). A bind or a Kubernetes claim of any of
    them, which locks its region (a whole card's bind, the card), then
    waits for the job's creation and sees its job, or is seen by it."""
    conn = s.connection()
    params = {'deployable_id': deployable_id}
    device_id = conn.execute(_DEVICE_OF, params).scalar()
    if device_id is None:
        return
    params['device_id'] = device_id
    conn.execute(_DEVICE_SHARED, params)
    behind = conn.execute(_BEHIND_ITS_FUNCTIONS, params).scalars()
    conn.execute(_REGIONS_LOCKED,
                 {'ids': sorted({deployable_id, *behind})})
    cards = conn.execute(_WHOLE_CARDS_OF_REGION, params).scalars().all()
    if cards:
        conn.execute(_REGIONS_LOCKED, {'ids': cards})


def behind_function(s, handle_id):
    """The ids of the regions behind the function handle ``handle_id``
    names, its own region among them, in id order: what a holder of the
    function reached (a card without SR-IOV: every region behind its
    PF, common/shared_functions.py)."""
    return list(s.connection().execute(
        _BEHIND_HANDLE, {'handle_id': handle_id}).scalars())


_ATTR_TABLE = models.Attribute.__table__


def _is_whole_card(deployable):
    return sa.select(_ATTR_TABLE.c.id).where(
        _ATTR_TABLE.c.deployable_id == deployable.c.id,
        _ATTR_TABLE.c.key.like('trait%'),
        _ATTR_TABLE.c.value == shared_functions.WHOLE_CARD_TRAIT).exists()


_ASKED = _REGION_TABLE.alias('asked')
_OTHER = _REGION_TABLE.alias('other')


def _others_of_its_device(*conditions, columns=(_OTHER.c.id,)):
    """SELECT ``columns`` of the other deployables (``_OTHER``) of the
    device of deployable ``:deployable_id`` (``_ASKED``) that meet
    ``conditions``, in id order."""
    return (sa.select(*columns)
            .join(_ASKED, _ASKED.c.device_id == _OTHER.c.device_id)
            .where(_ASKED.c.id == sa.bindparam('deployable_id'),
                   _OTHER.c.id != _ASKED.c.id, *conditions)
            .order_by(_OTHER.c.id))


# The whole cards of the device of a region that is not one itself.
_WHOLE_CARDS_OF_REGION = _others_of_its_device(_is_whole_card(_OTHER),
                                               ~_is_whole_card(_ASKED))
_OTHERS_IF_WHOLE_CARD = _others_of_its_device(_is_whole_card(_ASKED))


def regions_of_whole_card(s, deployable_id):
    """The ids of the regions a whole card holds (every other deployable
    of its device: common/shared_functions.py), in id order; none when
    ``deployable_id`` is not a whole card."""
    return list(s.connection().execute(
        _OTHERS_IF_WHOLE_CARD, {'deployable_id': deployable_id}).scalars())


_ACTIVE_JOB_ON_ANY = (sa.select(_JOB.uuid, _REGION_TABLE.c.name)
                      .join(_REGION_TABLE,
                            _REGION_TABLE.c.id == _JOB.active_deployable_id)
                      .where(_JOB.active_deployable_id.in_(
                          sa.bindparam('ids', expanding=True)))
                      .order_by(_JOB.id).limit(1))


def sibling_programming(s, rows):
    """Why the region of ``rows`` (db/devices.region_rows: the region,
    then the siblings behind its functions) may not be handed out while a
    job programs a sibling (attaching the function would hand that
    sibling over mid-write), as a sentence; None when none does, with no
    query for a region that shares no function. (A bind's own job loads
    the region it binds: active_job_on.)"""
    region, siblings = rows.deployables[0], rows.deployables[1:]
    if not siblings:
        return None
    found = s.connection().execute(
        _ACTIVE_JOB_ON_ANY, {'ids': [d.id for d in siblings]}).first()
    if found is None:
        return None
    return ('region %s shares its PCI function with region %s, which job '
            '%s is programming' % (region.uuid, found.name, found.uuid))


def active_job_on(s, deployable_id, except_arq_id=None):
    """The uuid of the active programming job on the region, or None;
    ``except_arq_id``: not counting the job loading it for that ARQ."""
    if except_arq_id is None:
        return s.connection().execute(
            _ACTIVE_JOB, {'deployable_id': deployable_id}).scalar()
    return s.connection().execute(
        _ACTIVE_JOB_OF_ANOTHER, {'deployable_id': deployable_id,
                                 'arq_id': except_arq_id}).scalar()


RegionHolder = collections.namedtuple('RegionHolder',
                                      ['name', 'through', 'card'],
                                      defaults=[False])
RegionHolder.__doc__ = """Who holds a region (bound_arq_on): ``name``, an
ARQ's uuid or ``k8s:<claim uid>``; ``through``, the name of the sibling
region it holds behind one of the region's functions (``card`` False) or
of the whole card or region the region is one choice with (``card``
True), or None when it holds the region itself."""


def bound_arq_on(s, deployable_id, except_holder=None):
    """Who holds the region, a RegionHolder, or None: an ARQ holding one
    of its attach handles (Bound, or still BindStarted while a Kubernetes
    host is published with its claim: db/arq_binds.finish_bind), a Kubernetes
    claim (db/k8s_claims.py), or either holding a sibling behind one of
    its functions (a card without SR-IOV: attaching its PF hands over
    every region, common/shared_functions.py), or holding the whole card
    of a region, or a region of a whole card (one choice, the same
    module). ``except_holder`` (a name) is not counted: a claim
    programming the region it holds."""
    arq = models.AcceleratorRequest
    # NOTE: by the handle too, not the state alone: a claim held while
    # it is published is the instance's region already, though not yet
    # Bound.
    found = s.scalars(sa.select(arq.uuid).where(
        arq.deployable_id == deployable_id,
        sa.or_(arq.state == 'Bound',
               arq.attach_handle_id.is_not(None))).limit(1)).first()
    if found is None:
        claim = models.KubernetesClaimDevice
        uid = s.scalars(sa.select(claim.claim_uid).where(
            claim.deployable_id == deployable_id).limit(1)).first()
        found = 'k8s:' + uid if uid is not None else None
    if found is not None and found != except_holder:
        return RegionHolder(found, None)
    return _holder_through_sibling(s, deployable_id, except_holder) or \
        _holder_through_card(s, deployable_id, except_holder)


_ARQ_TABLE = models.AcceleratorRequest.__table__
_CLAIM_TABLE = models.KubernetesClaimDevice.__table__
# Who holds a deployable a region is one choice with: every other
# deployable of its device when it is a whole card; its whole card
# otherwise (common/shared_functions.py). An ARQ as bound_arq_on counts
# one, then a Kubernetes claim.
_ONE_CHOICE_WITH = _others_of_its_device(
    sa.or_(_is_whole_card(_ASKED), _is_whole_card(_OTHER)),
    columns=(_OTHER.c.id, _OTHER.c.name)).subquery()
_HOLDERS_OF_ONE_CHOICE = sa.union_all(
    sa.select(_ONE_CHOICE_WITH.c.name, _ARQ_TABLE.c.uuid.label('holder'),
              sa.literal(0).label('kind'))
    .join(_ARQ_TABLE, _ARQ_TABLE.c.deployable_id == _ONE_CHOICE_WITH.c.id)
    .where(sa.or_(_ARQ_TABLE.c.state == 'Bound',
                  _ARQ_TABLE.c.attach_handle_id.is_not(None))),
    sa.select(_ONE_CHOICE_WITH.c.name,
              (sa.literal('k8s:') + _CLAIM_TABLE.c.claim_uid).label(
                  'holder'), sa.literal(1).label('kind'))
    .join(_CLAIM_TABLE,
          _CLAIM_TABLE.c.deployable_id == _ONE_CHOICE_WITH.c.id))


def _holder_through_card(s, deployable_id, except_holder):
    """Who holds the whole card of the region, or a region of the whole
    card ``deployable_id`` (not ``except_holder``), or None; no holder
    for a deployable of a card not offered whole."""
    found = sorted((kind, name, holder) for name, holder, kind in
                   s.connection().execute(_HOLDERS_OF_ONE_CHOICE,
                                          {'deployable_id': deployable_id})
                   if holder != except_holder)
    if not found:
        return None
    _kind, name, holder = found[0]
    return RegionHolder(holder, name, card=True)


_FUNCTIONS_OF = (sa.select(models.AttachHandle.attach_info,
                           _DEVICE_TABLE.c.hostname)
                 .join(_REGION_TABLE, _REGION_TABLE.c.id ==
                       models.AttachHandle.deployable_id)
                 .join(_DEVICE_TABLE, _DEVICE_TABLE.c.id ==
                       _REGION_TABLE.c.device_id)
                 .where(models.AttachHandle.deployable_id ==
                        sa.bindparam('deployable_id')))


def _holder_through_sibling(s, deployable_id, except_holder):
    """Who holds a function the region's handles name, through another
    region's handle (one holding the region's own was found already):
    asked as a bind and a Kubernetes prepare ask it
    (db/attach_handles.holders, by the functions' keys)."""
    held = attach_handles.holders(s, {
        attach_handles.function_key(row.hostname, row.attach_info)
        for row in s.connection().execute(
            _FUNCTIONS_OF, {'deployable_id': deployable_id})})
    # NOTE: a flag with no holder (an older release's interrupted unbind)
    # holds nothing here, as on the region itself.
    others = sorted((h.deployable_name, h.arq_uuid) for h in held.values()
                    if h.arq_uuid not in (None, except_holder))
    return RegionHolder(others[0][1], others[0][0]) if others else None


Holder = collections.namedtuple(
    'Holder', ['device_id', 'deployable_id', 'device_uuid', 'identity',
               'hostname', 'deployable_uuid', 'deployable_name', 'arq_uuid',
               'instance_uuid', 'claim_uid', 'namespace', 'claim_name',
               'pods'])


def holders(device_ids=(), deployable_ids=()):
    """Every Bound ARQ and Kubernetes claim on the regions of
    ``device_ids`` and on ``deployable_ids``, as Holders (an ARQ's claim
    fields None, a claim's ARQ fields None), in region order."""
    if not device_ids and not deployable_ids:
        return []
    dep, dev = models.Deployable, models.Device
    arq, claim = models.AcceleratorRequest, models.KubernetesClaimDevice
    which = sa.or_(dep.device_id.in_(list(device_ids)),
                   dep.id.in_(list(deployable_ids)))
    region = (dev.id, dep.id, dev.uuid, dev.identity, dev.hostname,
              dep.uuid, dep.name)
    arqs = (sa.select(*region, arq.uuid, arq.instance_uuid,
                      sa.null(), sa.null(), sa.null(), sa.null())
            .join(dep, dep.device_id == dev.id)
            .join(arq, sa.and_(arq.deployable_id == dep.id,
                               arq.state == 'Bound')).where(which))
    claims = (sa.select(*region, sa.null(), sa.null(), claim.claim_uid,
                        claim.namespace, claim.claim_name, claim.pods)
              .join(dep, dep.device_id == dev.id)
              .join(claim, claim.deployable_id == dep.id).where(which))
    with session.reader() as s:
        rows = s.execute(sa.union_all(arqs, claims)).all()
    return sorted((Holder(*row) for row in rows),
                  key=lambda h: (h.deployable_id, str(h.arq_uuid)))


def region_label(s, deployable_id):
    dep = s.get(models.Deployable, deployable_id)
    return dep.name if dep is not None else 'id=%s' % deployable_id


def load_region(deployable_uuid):
    """(deployable, device) of a region by the deployable's uuid."""
    with session.reader() as s:
        dep = s.scalars(sa.select(models.Deployable).where(
            models.Deployable.uuid == deployable_uuid)).one_or_none()
        if dep is None:
            raise exception.NotFound(message='Deployable %s could not be '
                                     'found.' % deployable_uuid)
        return dep, s.get(models.Device, dep.device_id)


def holder_label(holder):
    """A RegionHolder from bound_arq_on, for people."""
    name = holder.name
    if name.startswith('k8s:'):
        label = 'Kubernetes ResourceClaim %s' % name[len('k8s:'):]
    else:
        label = 'accelerator request %s' % name
    if holder.through is None:
        return label
    if holder.card:
        return '%s, which holds %s, one choice with it (a whole card and ' \
            'its regions)' % (label, holder.through)
    return '%s, which holds region %s behind the same PCI function' % (
        label, holder.through)


def region_bound_arq(deployable_id, except_holder=None):
    """bound_arq_on in a transaction of its own (pre-flight checks)."""
    with session.reader() as s:
        return bound_arq_on(s, deployable_id, except_holder)


def record_loaded(s, deployable_id, bitstream_uuid, function_id,
                  function_name):
    """What a succeeded programming job left in the region; the host's
    publish is requested in the same transaction (its traits change).

    The caller holds the region's lock (lock_region) from before this
    read: a report of the host changing the row between a plain read and
    the UPDATE would make it match no row (StaleDataError) and fail a
    job whose region was programmed.
    """
    dep = s.get(models.Deployable, deployable_id)
    dep.bitstream_id = bitstream_uuid
    dep.function_id = function_id
    dep.function_name = function_name
    publish_requests.add_for_deployable(s, deployable_id,
                                        'function %s loaded' % function_id)


# Every bind resolves its resource provider: built once, plain rows.
_REGIONS_OF_RP = (sa.select(_REGION_TABLE)
                  .where(_REGION_TABLE.c.rp_uuid == sa.bindparam('rp_uuid'))
                  .order_by(_REGION_TABLE.c.id))
_DEVICE = sa.select(_DEVICE_TABLE).where(
    _DEVICE_TABLE.c.id == sa.bindparam('device_id'))


def find_by_rp(s, rp_uuid):
    """(device, [deployables]) that resource provider rp_uuid offers, or
    None.

    A region RP offers its deployable; the provider of siblings behind
    one function (common/shared_functions.py) offers each of them, which
    all store its uuid. A whole-device RP (a PGPU) is the device's
    rp_uuid: it then offers the device's deployable whose resource class
    attribute is a whole-device class, or its only one.
    """
    conn = s.connection()
    regions = conn.execute(_REGIONS_OF_RP, {'rp_uuid': rp_uuid}).all()
    if regions:
        device = conn.execute(_DEVICE, {'device_id': regions[0].device_id})
        device = device.first()
        return (device, regions) if device is not None else None
    device = s.scalars(sa.select(models.Device)
                       .where(models.Device.rp_uuid == rp_uuid)).first()
    if device is None:
        return None
    deployables = list(s.scalars(
        sa.select(models.Deployable)
        .where(models.Deployable.device_id == device.id)
        .order_by(models.Deployable.id)))
    whole = [d for d in deployables
             if _resource_class(s, d.id) in
             resources.WHOLE_DEVICE_RESOURCE_CLASSES]
    chosen = whole or (deployables if len(deployables) == 1 else [])
    return (device, chosen[:1]) if chosen else None


def _resource_class(s, deployable_id):
    return s.scalar(sa.select(models.Attribute.value).where(
        models.Attribute.deployable_id == deployable_id,
        models.Attribute.key == 'rc'))
