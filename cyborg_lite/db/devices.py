"""Reads of devices: the API's, and everything one host offers
(``load_inventory``: the inventory/views.HostInventory every sink
reads); an operator's maintenance switch (``set_status``); the one call
that records a change of health (``health_changed``). The conductor's
report writes the rest of a device (db/inventory.py), never its
status."""
import collections

import sqlalchemy as sa

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import shared_functions
from cyborg_lite.db import agents
from cyborg_lite.db import attach_handles
from cyborg_lite.db import device_history
from cyborg_lite.db import fleet_kinds
from cyborg_lite.db import host_topology
from cyborg_lite.db import models
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import pagination
from cyborg_lite.db.sql import session
from cyborg_lite.inventory import views
from cyborg_lite.notifications import events as notifications

FILTERS = ('type', 'vendor', 'hostname', 'status')
SORT_KEYS = ('created_at', 'uuid', 'type', 'vendor', 'hostname', 'status')
DEVICE = models.Device
_ATTR = models.Attribute.__table__
_HANDLE = models.AttachHandle.__table__


def _with_agent_state():
    """Every column of devices, plus ``agent_state``: the stored state of
    the host's agent ('up', 'down', or None without a heartbeat yet)."""
    return (sa.select(DEVICE.__table__,
                      models.Agent.state.label('agent_state'))
            .select_from(DEVICE.__table__.outerjoin(
                models.Agent.__table__,
                models.Agent.hostname == DEVICE.hostname)))


def list_device_rows(names, href_prefix, filters=None, **page):
    """Devices matching ``filters`` (exact match on FILTERS), one page, as
    the driver's tuples of ``names`` (pagination.list_columns; also
    ``agent_state``). ``page`` is sort_key, sort_dir, limit and marker for
    pagination.paginate.

    What a long list body needs and no more: no row objects, no
    datetimes (10,000 devices in one page is Cyborg's usual list).
    """
    agent_state = models.Agent.state
    columns = pagination.list_columns(DEVICE, names, href_prefix,
                                      {'agent_state': agent_state})
    stmt = sa.select(*columns).select_from(DEVICE.__table__)
    if 'agent_state' in names:
        stmt = stmt.outerjoin(models.Agent.__table__,
                              models.Agent.hostname == DEVICE.hostname)
    stmt = pagination.apply_filters(stmt, DEVICE, FILTERS, filters)
    with session.core_reader(in_turn=True) as conn:
        return pagination.paginate(conn, stmt, DEVICE, plain=True, **page)


def get_device(uuid):
    """The device as a read-only row (with ``agent_state``)."""
    with session.reader() as s:
        device = s.execute(_with_agent_state()
                           .where(DEVICE.uuid == uuid)).first()
    if device is None:
        raise exception.DeviceNotFound(uuid=uuid)
    return device


def set_status(uuid, status, ctxt=None, refuse_unhealthy=False):
    """An operator's maintenance switch: status 'maintaining' (disabled)
    or 'enabled'. Requests a publish of the host when the status changed;
    returns (hostname, changed). With ``refuse_unhealthy``, enabling an
    unhealthy device raises DeviceUnhealthy and changes nothing (decided
    under the row's lock: a report turning it unhealthy waits, or is
    seen)."""
    if status not in models.DEVICE_STATUSES:
        raise exception.Invalid(reason='device status must be one of %s'
                                % ', '.join(models.DEVICE_STATUSES))
    with session.writer() as s:
        row = s.execute(sa.select(*_EVENT_COLUMNS, DEVICE.health_reason,
                                  DEVICE.health_since)
                        .where(DEVICE.uuid == uuid)
                        .with_for_update()).first()
        if row is None:
            raise exception.DeviceNotFound(uuid=uuid)
        if refuse_unhealthy and status == 'enabled' and \
                row.health == 'unhealthy':
            raise exception.DeviceUnhealthy(
                uuid=uuid, reason=row.health_reason or 'no reason given',
                since=_iso(row.health_since))
        changed = bool(conditional.update(s, DEVICE, DEVICE.id == row.id,
                                          {'status': status},
                                          DEVICE.status != status))
        if changed:
            publish_requests.add(s, row.hostname,
                                 'device %s %s' % (uuid, status))
            device_history.record(s, device_event(
                'device.enable' if status == 'enabled' else
                'device.disable', row, status=status, previous=row.status),
                ctxt)
        return row.hostname, changed


def _iso(when):
    return when.replace(microsecond=0).isoformat() + 'Z' if when \
        else 'an unknown time'


# What a device's notification shows of it (DevicePayload).
_EVENT_COLUMNS = (DEVICE.id, DEVICE.uuid, DEVICE.hostname, DEVICE.type,
                  DEVICE.vendor, DEVICE.driver_name, DEVICE.status,
                  DEVICE.health)


def device_event(event, row, previous=None, reason=None, **changed):
    """The notification of a device's transition: ``row`` has the
    columns of _EVENT_COLUMNS (before it), ``changed`` what it set."""
    data = {key: changed.get(key, getattr(row, key)) for key in (
        'uuid', 'hostname', 'type', 'vendor', 'driver_name', 'status',
        'health')}
    data.update(previous=previous, reason=reason)
    state = changed.get('health') or changed.get('status')
    return notifications.Event(event, data, device_uuid=row.uuid,
                               state=state, reason=reason)


def health_changed(s, device_id, health, reason=None, ctxt=None):
    """The one call for a change of a device's health: the row and the
    notification (device.health_change), in ``s``'s transaction. Call it
    in the transaction that writes the new health, before or after the
    write; a health equal to the stored one records nothing."""
    row = s.connection().execute(sa.select(*_EVENT_COLUMNS).where(
        DEVICE.id == device_id)).first()
    if row is None or row.health == health:
        return False
    device_history.record(s, device_event(
        'device.health_change', row, health=health, previous=row.health,
        reason=reason), ctxt)
    return True


HostRows = collections.namedtuple(
    'HostRows', ['devices', 'deployables', 'attributes', 'handles',
                 'blocked_handles', 'agent_state', 'k8s_claims',
                 'numa_nodes'], defaults=[None])


_READ = object()


def _rows_of(s, devices, deps, hostname, attributes, handles,
             all_of_host=False, agent_state=_READ, numa_nodes=None,
             blocked=None, k8s_claims=None):
    """HostRows of ``devices`` and their ``deps``, given their attributes
    ({deployable id: {key: value}}) and handles ({deployable id: [handle]}
    in id order); ``all_of_host``: every handle of the host is there;
    ``agent_state``: as db/agents stores it, when the caller read it;
    ``numa_nodes``: the host's stored NUMA nodes (JSON text), if read;
    ``blocked`` and ``k8s_claims`` when the caller read them for many
    hosts at once."""
    if blocked is None:
        blocked = attach_handles.blocked(
            s, [h for hs in handles.values() for h in hs], hostname,
            all_of_host=all_of_host)
    if agent_state is _READ:
        agent_state = agents.state_of(s, hostname)
    if k8s_claims is None:
        k8s_claims = _k8s_claims(s, handles)
    return HostRows(list(devices), list(deps), attributes, dict(handles),
                    blocked, agent_state, k8s_claims, numa_nodes)


def _k8s_claims(s, handles):
    """{handle id: claim uid} of the handles a Kubernetes claim holds."""
    held = [h.id for hs in handles.values() for h in hs if h.in_use]
    if not held:
        return {}
    claim = models.KubernetesClaimDevice
    return dict(s.execute(sa.select(claim.attach_handle_id, claim.claim_uid)
                          .where(claim.attach_handle_id.in_(held))).all())


_DEP = models.Deployable.__table__
# What a host's inventory is made of (inventory/views.py), and no
# more: no JSON board info, no versions, no times to parse.
_TOPOLOGY_COLUMNS = ('numa_node', 'local_cpulist', 'socket', 'pcie_root')
_DEVICE_VIEW_COLUMNS = ('id', 'uuid', 'type', 'vendor', 'identity',
                        'pci_address', 'health', 'health_reason', 'status',
                        'rp_uuid', 'model', 'driver_name') + _TOPOLOGY_COLUMNS
_DEPLOYABLE_VIEW_COLUMNS = ('id', 'device_id', 'uuid', 'name',
                            'num_accelerators', 'region_type',
                            'function_id', 'local_memory_mb', 'rp_uuid',
                            'function_name', 'bitstream_id', 'device_state',
                            'pci_bus_id', 'health', 'health_reason') + \
    _TOPOLOGY_COLUMNS
_HANDLE_VIEW_COLUMNS = ('id', 'deployable_id', 'uuid', 'attach_type',
                        'attach_info', 'in_use', 'in_use_function',
                        'awaits_removal')
_HOST_DEVICES = (sa.select(*(DEVICE.__table__.c[n]
                             for n in _DEVICE_VIEW_COLUMNS),
                           models.Agent.state.label('agent_state'))
                 .select_from(DEVICE.__table__.outerjoin(
                     models.Agent.__table__,
                     models.Agent.hostname == DEVICE.hostname))
                 .where(DEVICE.hostname == sa.bindparam('hostname'))
                 .order_by(DEVICE.id))
_HOST_DEVICE_IDS = (sa.select(DEVICE.id)
                    .where(DEVICE.hostname == sa.bindparam('hostname'))
                    .scalar_subquery())
_HOST_DEPLOYABLES = (sa.select(*(_DEP.c[n] for n in _DEPLOYABLE_VIEW_COLUMNS))
                     .where(_DEP.c.device_id.in_(_HOST_DEVICE_IDS))
                     .order_by(_DEP.c.id))
_HOST_HANDLES = (sa.select(*(_HANDLE.c[n] for n in _HANDLE_VIEW_COLUMNS))
                 .join(_DEP, _DEP.c.id == _HANDLE.c.deployable_id)
                 .where(_DEP.c.device_id.in_(_HOST_DEVICE_IDS))
                 .order_by(_HANDLE.c.id))
_HOST_ATTRIBUTES = (sa.select(_ATTR.c.deployable_id, _ATTR.c.key,
                              _ATTR.c.value)
                    .join(_DEP, _DEP.c.id == _ATTR.c.deployable_id)
                    .where(_DEP.c.device_id.in_(_HOST_DEVICE_IDS))
                    .order_by(_ATTR.c.deployable_id, _ATTR.c.key))


def host_rows(hostname, url=None):
    """Everything one host offers, read in one transaction: its devices
    and deployables in id order, {deployable id: {key: value}} of their
    attributes, {deployable id: [attach handle]} in id order, the ids of
    the free handles whose function another handle holds, and the state
    of the host's agent (None when it never sent a heartbeat).

    Rows are plain (columns as attributes), of the columns an inventory is
    made of, read by statements built once: a publish reads its host
    once or twice (placement/sink.py), and ORM objects were most of
    that."""
    params = {'hostname': hostname}
    with session.reader(url) as s:
        conn = s.connection()
        devices = conn.execute(_HOST_DEVICES, params).all()
        deps = conn.execute(_HOST_DEPLOYABLES, params).all() if devices \
            else []
        attributes = collections.defaultdict(dict)
        handles = collections.defaultdict(list)
        if deps:
            for dep_id, key, value in conn.execute(_HOST_ATTRIBUTES, params):
                attributes[dep_id][key] = value
            for handle in conn.execute(_HOST_HANDLES, params):
                handles[handle.deployable_id].append(handle)
        return _rows_of(s, devices, deps, hostname, dict(attributes),
                        handles, all_of_host=True,
                        agent_state=devices[0].agent_state if devices
                        else None,
                        numa_nodes=host_topology.text_of(conn, hostname)
                        if devices else None)


def load_inventory(hostname, url=None, previous=None):
    """The inventory/views.HostInventory of ``hostname`` as the database
    has it now; ``previous`` (an inventory of the same host read before)
    is returned itself when nothing it was built from changed."""
    return views.from_rows(hostname, host_rows(hostname, url), previous)


FleetRows = collections.namedtuple(
    'FleetRows', ['regions', 'attributes', 'handles', 'blocked',
                  'k8s_claims', 'hostnames', 'kind_rows', 'rows_of'],
    defaults=[(), None])
_AGENT = models.Agent.__table__
_ARQ = models.AcceleratorRequest.__table__
_CLAIM = models.KubernetesClaimDevice.__table__
_text = fleet_kinds.stored_text


# An explain reads each table once, in plain scans joined here: the
# three-table join's index look-ups cost more than the scans
# (docs/benchmarks-history.md section 12). A region's row is its
# device's columns, then its own (inventory/views.RegionRow).
_FLEET_AGENTS = sa.select(_AGENT.c.hostname, _text(_AGENT.c.state))
_FLEET_DEVICES = (sa.select(DEVICE.hostname, DEVICE.id, DEVICE.uuid,
                            _text(DEVICE.type), DEVICE.vendor,
                            _text(DEVICE.status),
                            _text(DEVICE.health), DEVICE.numa_node)
                  .order_by(DEVICE.hostname, DEVICE.id))
_FLEET_DEPLOYABLES = (
    sa.select(_DEP.c.device_id, _DEP.c.id, _DEP.c.uuid, _DEP.c.name,
              _DEP.c.num_accelerators, _DEP.c.region_type,
              _DEP.c.function_id, _DEP.c.local_memory_mb,
              _text(_DEP.c.device_state), _text(_DEP.c.health),
              _DEP.c.numa_node)
    .order_by(_DEP.c.id))
_FLEET_HANDLES = (sa.select(_HANDLE.c.id, _HANDLE.c.deployable_id,
                            _HANDLE.c.attach_info, _HANDLE.c.in_use,
                            _HANDLE.c.in_use_function)
                  .order_by(_HANDLE.c.id))
# Only the resource class, the traits and the driver's bind switch.
_FLEET_ATTRIBUTES = (sa.select(_ATTR.c.deployable_id, _ATTR.c.key,
                               _ATTR.c.value)
                     .where(sa.or_(_ATTR.c.key.in_(('rc', 'bind')),
                                   _ATTR.c.key.like('trait%'))))
_FLEET_CLAIMS = sa.select(
    models.KubernetesClaimDevice.attach_handle_id,
    models.KubernetesClaimDevice.claim_uid).where(
        models.KubernetesClaimDevice.attach_handle_id.is_not(None))


def _of_devices(where):
    """The fleet statements narrowed to the rows of the devices ``where``
    (a condition on devices; all of them for None) and their hosts."""
    statements = (_FLEET_AGENTS, _FLEET_DEVICES, _FLEET_DEPLOYABLES,
                  _FLEET_HANDLES, _FLEET_ATTRIBUTES)
    if where is None:
        return statements
    devices = sa.select(DEVICE.id).where(where)
    deps = sa.select(_DEP.c.id).where(_DEP.c.device_id.in_(devices))
    agents_, devices_, deps_, handles, attributes = statements
    return (agents_.where(_AGENT.c.hostname.in_(
                sa.select(DEVICE.hostname).where(where))),
            devices_.where(where),
            deps_.where(_DEP.c.device_id.in_(devices)),
            handles.where(_HANDLE.c.deployable_id.in_(deps)),
            attributes.where(_ATTR.c.deployable_id.in_(deps)))


def _region_rows(agent_rows, device_rows, deployable_rows):
    """Each region as its device's columns (and its host agent's state)
    then its own, by hostname, device and id (views.RegionRow)."""
    state = dict(agent_rows)
    by_device = collections.defaultdict(list)
    for dep in deployable_rows:
        by_device[dep[0]].append(dep[1:])
    regions = []
    make = tuple.__new__     # RegionRow._make without its length check
    for device in device_rows:
        deps = by_device.get(device[1])
        if deps:
            head = (device[0], state.get(device[0])) + device[1:]
            regions.extend([make(views.RegionRow, head + dep)
                            for dep in deps])
    return regions


def fleet_rows(s, where=None):
    """The FleetRows of every region (of the devices ``where``, a
    condition on devices; db/explain.py reads the devices of several
    regions so, and the hosts it shows), read in ``s``'s transaction
    with one statement per table, as plain tuples
    (placement/explain.Fleet), with the ``hostnames`` of the hosts that
    have a device (a whole GPU has no region): an explain asks a few
    columns of thousands of regions (docs/benchmarks-history.md section
    12)."""
    conn = s.connection()
    agents_, devices_, deps, handles, attributes = _of_devices(where)
    device_rows = conn.execute(devices_).all()
    hostnames = sorted({d[0] for d in device_rows})
    regions = _region_rows(conn.execute(agents_).all(), device_rows,
                           conn.execute(deps).all()) if device_rows else []
    if not regions:
        return FleetRows([], {}, {}, {}, {}, hostnames)
    host_of = {r[9]: r[0] for r in regions}
    handles_of = collections.defaultdict(list)
    of_host = collections.defaultdict(list)
    in_use = set()
    for handle in conn.execute(handles).all():
        handles_of[handle[1]].append(handle)
        of_host[host_of[handle[1]]].append(handle)
        if handle[3]:
            in_use.add(handle[0])
    attrs = collections.defaultdict(dict)
    for dep_id, key, value in conn.execute(attributes).all():
        attrs[dep_id][key] = value
    blocked = {}
    if in_use:
        for found in attach_handles.blocked_on_hosts(s, of_host).values():
            blocked.update(found)
    # Every claim's handle, kept for a handle in use (as _k8s_claims):
    # fewer rows than the fleet's handles would be to name.
    claims = {handle_id: uid for handle_id, uid
              in conn.execute(_FLEET_CLAIMS).all() if handle_id in in_use} \
        if in_use else {}
    return FleetRows(regions, dict(attrs), dict(handles_of), blocked,
                     claims, hostnames)


# Who holds a region, as an explain names them: a Bound ARQ's project
# and instance, a Kubernetes claim's project, namespace, name and pods.
_EXPLAIN_ARQS = (sa.select(_DEP.c.uuid, _ARQ.c.project_id,
                           _ARQ.c.instance_uuid)
                 .join(_DEP, _DEP.c.id == _ARQ.c.deployable_id)
                 .where(_ARQ.c.state == 'Bound').order_by(_ARQ.c.id))
_EXPLAIN_CLAIMS = (sa.select(_DEP.c.uuid, _CLAIM.c.project_id,
                             _CLAIM.c.namespace, _CLAIM.c.claim_name,
                             _CLAIM.c.pods)
                   .join(_DEP, _DEP.c.id == _CLAIM.c.deployable_id)
                   .order_by(_CLAIM.c.id))


def holders(s, where=None):
    """{deployable uuid: [holder]} of every deployable (of the devices
    ``where``, a condition on devices)
    held now, in ``s``'s transaction: a Bound ARQ's {'kind': 'arq',
    'project_id', 'instance_uuid'}, a Kubernetes claim's {'kind':
    'kubernetes', 'project_id', 'namespace', 'claim', 'pods'}."""
    conn = s.connection()
    arqs, claims = _EXPLAIN_ARQS, _EXPLAIN_CLAIMS
    if where is not None:
        of_host = _DEP.c.device_id.in_(sa.select(DEVICE.id).where(where))
        arqs, claims = arqs.where(of_host), claims.where(of_host)
    found = collections.defaultdict(list)
    for uuid, project_id, instance_uuid in conn.execute(arqs).all():
        found[uuid].append({'kind': 'arq', 'project_id': project_id,
                            'instance_uuid': instance_uuid})
    for uuid, project_id, namespace, claim, pods in conn.execute(
            claims).all():
        found[uuid].append({
            'kind': 'kubernetes', 'project_id': project_id,
            'namespace': namespace, 'claim': claim, 'pods': _pods(pods)})
    return dict(found)


def _pods(value):
    # Stored comma-separated (models.KubernetesClaimDevice.pods).
    return [p for p in (value or '').split(',') if p]


# One region's rows, read by every bind under its locks: built once.
_REGION_ATTRIBUTES = sa.select(_ATTR.c.key, _ATTR.c.value).where(
    _ATTR.c.deployable_id == sa.bindparam('deployable_id'))
_REGION_HANDLES = (sa.select(_HANDLE)
                   .where(_HANDLE.c.deployable_id ==
                          sa.bindparam('deployable_id'))
                   .order_by(_HANDLE.c.id))


# The deployables of the region's device whose handles name one of its
# functions, and their handles: attaching it would hand them over too.
_SIBLINGS_SHARING = (
    sa.select(*(_DEP.c[n] for n in _DEPLOYABLE_VIEW_COLUMNS)).distinct()
    .join(_HANDLE, _HANDLE.c.deployable_id == _DEP.c.id)
    .where(_DEP.c.device_id == sa.bindparam('device_id'),
           _DEP.c.id != sa.bindparam('deployable_id'),
           _HANDLE.c.attach_info.in_(sa.bindparam('infos', expanding=True)))
    .order_by(_DEP.c.id))
_HANDLES_OF = (sa.select(_HANDLE)
               .where(_HANDLE.c.deployable_id.in_(
                   sa.bindparam('ids', expanding=True)))
               .order_by(_HANDLE.c.id))


def makes_instance(rows, deployable_id):
    """Whether the deployable of HostRows ``rows`` is one whose bind makes
    the instance (device_records.MAKES_INSTANCE: a vGPU type, each handle
    a VF of its own, held by one claim or ARQ each)."""
    key, value = device_records.MAKES_INSTANCE
    return rows.attributes.get(deployable_id, {}).get(key) == value


def region_rows(s, device, deployable):
    """The HostRows of one region of ``device``, read in the caller's
    transaction (a bind deciding under its locks): the region first, then
    the siblings behind any of its functions (their states decide too);
    handles are plain rows, in id order, with their ``version``."""
    conn = s.connection()
    params = {'deployable_id': deployable.id}
    attributes = dict(conn.execute(_REGION_ATTRIBUTES, params).all())
    handles = {}
    own = conn.execute(_REGION_HANDLES, params).all()
    if own:
        handles[deployable.id] = own
    siblings = conn.execute(_SIBLINGS_SHARING, {
        'device_id': device.id, 'deployable_id': deployable.id,
        'infos': sorted({h.attach_info for h in own})}).all() if own else []
    side, side_attributes = _whole_card_side(conn, device, deployable,
                                             attributes)
    siblings += [d for d in side if d.id not in {x.id for x in siblings}]
    if siblings:
        for handle in conn.execute(_HANDLES_OF, {
                'ids': [d.id for d in siblings]}):
            handles.setdefault(handle.deployable_id, []).append(handle)
    if attributes:
        side_attributes[deployable.id] = attributes
    return _rows_of(s, [device], [deployable] + siblings, device.hostname,
                    side_attributes, handles)


# A whole card and its regions are one choice (common/shared_functions.py).
_WHOLE_CARDS = (sa.select(_DEP.c.id)
                .join(_ATTR, _ATTR.c.deployable_id == _DEP.c.id)
                .where(_DEP.c.device_id == sa.bindparam('device_id'),
                       _ATTR.c.key.like('trait%'),
                       _ATTR.c.value == shared_functions.WHOLE_CARD_TRAIT))
_CARDS_LOCKED = (sa.select(*(_DEP.c[n] for n in _DEPLOYABLE_VIEW_COLUMNS))
                 .where(_DEP.c.id.in_(sa.bindparam('ids', expanding=True)))
                 .order_by(_DEP.c.id).with_for_update())
_OTHERS_OF_DEVICE = (
    sa.select(*(_DEP.c[n] for n in _DEPLOYABLE_VIEW_COLUMNS))
    .where(_DEP.c.device_id == sa.bindparam('device_id'),
           _DEP.c.id != sa.bindparam('deployable_id'))
    .order_by(_DEP.c.id))
_ATTRIBUTES_OF = sa.select(_ATTR.c.deployable_id, _ATTR.c.key,
                           _ATTR.c.value).where(
    _ATTR.c.deployable_id.in_(sa.bindparam('ids', expanding=True)))


def _whole_card_side(conn, device, deployable, attributes):
    """(rows, {id: attributes}) of what a bind of ``deployable`` must find
    free besides itself: a whole card's regions, a region's whole card;
    nothing, and no query, for any other deployable. A region's bind
    locks the card's row after its own, which the card's bind holds: of a
    card and a region bound at once, the second sees the first's claim."""
    traits = [v for k, v in attributes.items() if k.startswith('trait')]
    params = {'device_id': device.id, 'deployable_id': deployable.id}
    if shared_functions.is_whole_card(traits):
        rows = conn.execute(_OTHERS_OF_DEVICE, params).all()
    elif attributes.get(shared_functions.WHOLE_CARD_ATTRIBUTE):
        ids = list(conn.execute(_WHOLE_CARDS, params).scalars())
        rows = conn.execute(_CARDS_LOCKED, {'ids': ids}).all() if ids \
            else []
    else:
        return [], {}
    found = {}
    for dep_id, key, value in conn.execute(
            _ATTRIBUTES_OF, {'ids': [r.id for r in rows]}) if rows else ():
        found.setdefault(dep_id, {})[key] = value
    return rows, found


# --- what the metrics show (api/device_metrics.py) ----------------------

MetricRows = collections.namedtuple(
    'MetricRows', ['devices', 'regions', 'holders', 'agents'])
_METRIC_DEVICES = (
    sa.select(DEVICE.uuid, DEVICE.hostname, DEVICE.type, DEVICE.vendor,
              DEVICE.identity, DEVICE.driver_name, DEVICE.status,
              DEVICE.health, models.Agent.state.label('agent_state'))
    .select_from(DEVICE.__table__.outerjoin(
        models.Agent.__table__, models.Agent.hostname == DEVICE.hostname))
    .order_by(DEVICE.id))
_METRIC_REGIONS = (
    sa.select(DEVICE.uuid.label('device_uuid'), _DEP.c.uuid, _DEP.c.name,
              DEVICE.hostname, _DEP.c.device_state, _DEP.c.health,
              sa.select(sa.func.count(_HANDLE.c.id))
              .where(_HANDLE.c.deployable_id == _DEP.c.id,
                     _HANDLE.c.in_use.is_(True))
              .scalar_subquery().label('handles_in_use'))
    .join(DEVICE.__table__, DEVICE.id == _DEP.c.device_id)
    .order_by(_DEP.c.id))
_HOLDER_ARQS = (
    sa.select(DEVICE.uuid.label('device_uuid'), _DEP.c.uuid,
              DEVICE.hostname, _ARQ.c.project_id, _ARQ.c.instance_uuid)
    .join(_DEP, _DEP.c.id == _ARQ.c.deployable_id)
    .join(DEVICE.__table__, DEVICE.id == _DEP.c.device_id)
    .where(_ARQ.c.state == 'Bound').order_by(_ARQ.c.id))
_HOLDER_CLAIMS = (
    sa.select(DEVICE.uuid.label('device_uuid'), _DEP.c.uuid,
              DEVICE.hostname, _CLAIM.c.project_id, _CLAIM.c.namespace,
              _CLAIM.c.claim_name, _CLAIM.c.pods)
    .join(_DEP, _DEP.c.id == _CLAIM.c.deployable_id)
    .join(DEVICE.__table__, DEVICE.id == _DEP.c.device_id)
    .order_by(_CLAIM.c.id))
_METRIC_AGENTS = sa.select(models.Agent.hostname, models.Agent.state)


def metric_rows():
    """Every device, region, holder and agent, as plain rows, read in one
    transaction (a scrape sees one moment): MetricRows. A holder row is
    (device_uuid, uuid (the region's), hostname, project_id, then
    instance_uuid for an ARQ, or namespace, claim_name and pods (comma-
    separated, or None) for a Kubernetes claim)."""
    with session.core_reader(in_turn=True) as conn:
        holders = [('nova',) + tuple(r) for r in conn.execute(_HOLDER_ARQS)]
        holders += [('kubernetes',) + tuple(r)
                    for r in conn.execute(_HOLDER_CLAIMS)]
        return MetricRows(conn.execute(_METRIC_DEVICES).all(),
                          conn.execute(_METRIC_REGIONS).all(), holders,
                          conn.execute(_METRIC_AGENTS).all())
