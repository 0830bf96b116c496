"""Accelerator requests (ARQs): every query and transaction of the table.

The API creates, reads and deletes ARQs and records a bind request
(``start_binds``) before casting it; the conductor's bind workflow
(conductor/bind.py) moves ARQs through common/states.ARQ with the
functions under "Binding", never seeing a session. No write trusts an
earlier read: each state change is a conditional UPDATE
(db/sql/conditional.py) on the state and version it was decided on. Writers
lock ARQ, then region, then attach handle, so PostgreSQL never deadlocks
on them. Unbinding or deleting a bound ARQ frees its handle in the same
transaction. A bind's start is stamped with the database's clock
(db/sql/clock.py), which the reaper compares with.

``visible_to`` is pagination.ALL (an admin) or the caller's project id: an
ARQ is seen only by its own project.
"""
import collections
import datetime
import functools
import logging
import time

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import exc as orm_exc

from cyborg_lite.common import exception
from cyborg_lite.common import resources
from cyborg_lite.common import states
from cyborg_lite.common import uuids
from cyborg_lite.db import attach_handles
from cyborg_lite.db import cleaning
from cyborg_lite.db import deployables
from cyborg_lite.db import device_history
from cyborg_lite.db import device_profiles
from cyborg_lite.db import devices
from cyborg_lite.db import models
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import clock
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import direct_statement
from cyborg_lite.db.sql import pagination
from cyborg_lite.db.sql import session
from cyborg_lite.metrics import counted as metrics
from cyborg_lite.notifications import events as notifications

LOG = logging.getLogger(__name__)

ALL = pagination.ALL
ARQ = models.AcceleratorRequest
SORT_KEYS = ('created_at', 'uuid', 'state', 'device_profile_group_id')

ARQView = collections.namedtuple('ARQView',
                                 ['arq', 'device_profile_name', 'handle'])


def _select():
    handle = models.AttachHandle
    return (sa.select(ARQ, models.DeviceProfile.name, handle)
            .join(models.DeviceProfile,
                  models.DeviceProfile.id == ARQ.device_profile_id)
            .outerjoin(handle, handle.id == ARQ.attach_handle_id))


def _visible(stmt, visible_to):
    if visible_to is ALL:
        return stmt
    return stmt.where(ARQ.project_id == visible_to)


def create_arqs(visible_to, profile_name, project_id, group_id=None):
    """One Initial ARQ per accelerator of the profile's groups (of group
    ``group_id`` only, when given): [ARQView].

    The profile is looked up, as ``visible_to`` sees it, then the ARQs
    inserted, in one transaction except on SQLite, where the INSERT's
    foreign key checks again that the profile is there (a profile is
    never changed, only deleted; session.statement_writer).
    DeviceProfileNotFound, or InvalidField for a group the profile does
    not have; nothing is written then.
    """
    with session.statement_writer() as conn:
        profile = device_profiles.find(conn, visible_to, name=profile_name,
                                       columns=_PROFILE_COLUMNS)
        groups = device_profiles.groups_of(profile)
        rows = _new_arq_rows(profile, groups, project_id,
                             _group_ids(profile, groups, group_id))
        try:
            # NOTE: not through the ORM, whose unit of work for these new
            # rows was a third of the request's time (see direct_statement).
            _INSERT.rows(conn, rows)
        except sa_exc.IntegrityError:
            # NOTE: the profile's foreign key, the one constraint new rows
            # can break: the profile was deleted since it was read.
            raise exception.DeviceProfileNotFound(ident=profile_name)
    if notifications.enabled():
        # NOTE: no device yet, so no history row; sent after the INSERT
        # (its own transaction on SQLite, see statement_writer). The new
        # row is the payload's data as it is (the payload takes its
        # fields, None for those an Initial ARQ lacks): nothing more on
        # the request's way than the event.
        notifications.emit_all([notifications.Event('arq.create', row)
                                for row in rows])
    return [ARQView(_NewARQ(**row), profile.name, None) for row in rows]


_ARQ_FIELDS = ('uuid', 'state', 'project_id', 'instance_uuid', 'hostname',
               'device_rp_uuid', 'device_profile_group_id', 'error')


def _event(event, arq, place=device_history.Place(None, None, None),
           **changed):
    """The notification of an ARQ's transition: ``arq`` a dict or a row
    of its columns, ``changed`` the columns the transition set."""
    get = arq.get if isinstance(arq, dict) else \
        (lambda key: getattr(arq, key, None))
    data = {key: changed[key] if key in changed else get(key)
            for key in _ARQ_FIELDS}
    data.update(device_uuid=place.device_uuid,
                deployable_uuid=place.deployable_uuid)
    return notifications.Event(
        event, data, device_uuid=place.device_uuid,
        deployable_uuid=place.deployable_uuid, state=data['state'],
        object_uuid=data['uuid'], reason=data['error'])


def _place_of(s, arq, rp_uuid=None):
    """Where ``arq`` is, or is to be, bound: its region once Bound,
    else the region of its (or the binding's) resource provider."""
    if arq.deployable_id is not None:
        return device_history.place_of_region(s, arq.deployable_id)
    return device_history.place_of_rp(s, rp_uuid or arq.device_rp_uuid)


_NewARQ = models.new_row_type(ARQ)
# What create_arqs reads of the profile (its times would be parsed).
_PROFILE_COLUMNS = ('id', 'name', 'profile_json')
# The columns _new_arq_rows sets.
_INSERT = direct_statement.DirectStatement(sa.insert(ARQ.__table__).values(
    {key: sa.bindparam(key) for key in (
        'uuid', 'project_id', 'state', 'device_profile_id',
        'device_profile_group_id', 'version', 'created_at')}))


def _group_ids(profile, groups, group_id):
    if group_id is None:
        return range(len(groups))
    if group_id >= len(groups):
        raise exception.InvalidField(
            field='body.device_profile_group_id',
            reason='profile %s has %d group(s)' % (profile.name, len(groups)))
    return [group_id]


def _new_arq_rows(profile, groups, project_id, group_ids):
    # Sizes such as CUSTOM_FPGA_LOCAL_MEMORY_MB qualify an accelerator,
    # they are not one (common/resources.py).
    counts = [resources.accelerator_count(group) for group in groups]
    now = models.utcnow()
    return [{'uuid': uuids.new(), 'project_id': project_id,
             'state': 'Initial', 'device_profile_id': profile.id,
             'device_profile_group_id': group_id, 'version': 1,
             'created_at': now}
            for group_id in group_ids for _ in range(counts[group_id])]


def _listing(stmt, visible_to, instance_uuid, states, page, plain=False):
    stmt = _visible(stmt, visible_to)
    if instance_uuid is not None:
        stmt = stmt.where(ARQ.instance_uuid == instance_uuid)
    if states is not None:
        stmt = stmt.where(ARQ.state.in_(states))
    if plain:
        with session.core_reader(in_turn=True) as conn:
            return pagination.paginate(conn, stmt, ARQ, plain=True, **page)
    with session.reader() as s:
        return pagination.paginate(s, stmt, ARQ, **page)


def list_arqs(visible_to, instance_uuid=None, states=None, **page):
    return [ARQView(*row) for row in
            _listing(_select(), visible_to, instance_uuid, states, page)]


def list_arq_rows(names, href_prefix, visible_to, instance_uuid=None,
                  states=None, **page):
    """list_arqs' page as the driver's tuples of ``names``
    (pagination.list_columns; also ``device_profile_name`` and the attach
    handle's ``attach_handle_type`` ('' while unbound, as Cyborg shows
    it), ``attach_handle_uuid``, ``attach_handle_info`` (its JSON
    text) and ``attach_handle_numa_node`` (its region's NUMA node))."""
    handle = models.AttachHandle
    dep = models.Deployable
    extra = {'device_profile_name': models.DeviceProfile.name,
             'attach_handle_type': sa.func.coalesce(handle.attach_type, ''),
             'attach_handle_uuid': handle.uuid,
             'attach_handle_info': handle.attach_info,
             'attach_handle_numa_node': dep.numa_node}
    stmt = (sa.select(*pagination.list_columns(ARQ, names, href_prefix,
                                               extra))
            .select_from(ARQ)
            .join(models.DeviceProfile,
                  models.DeviceProfile.id == ARQ.device_profile_id)
            .outerjoin(handle, handle.id == ARQ.attach_handle_id)
            .outerjoin(dep, dep.id == handle.deployable_id))
    return _listing(stmt, visible_to, instance_uuid, states, page,
                    plain=True)


# What a handle of an ARQView shows (get_arqs' plain rows).
HandleView = collections.namedtuple(
    'HandleView', ['uuid', 'attach_type', 'attach_info', 'numa_node'],
    defaults=[None])


def _get_arqs_statement():
    """get_arqs' SELECT, built once: the ARQs' columns, their profile's
    name and their handle's columns (``handle_*``), plain rows."""
    handle = models.AttachHandle.__table__
    profile = models.DeviceProfile.__table__
    dep = models.Deployable.__table__
    return (sa.select(ARQ.__table__, profile.c.name.label('profile_name'),
                      handle.c.uuid.label('handle_uuid'),
                      handle.c.attach_type.label('handle_attach_type'),
                      handle.c.attach_info.label('handle_attach_info'),
                      dep.c.numa_node.label('handle_numa_node'))
            .join(profile, profile.c.id == ARQ.device_profile_id)
            .outerjoin(handle, handle.c.id == ARQ.attach_handle_id)
            .outerjoin(dep, dep.c.id == handle.c.deployable_id)
            .where(ARQ.uuid.in_(sa.bindparam('uuids', expanding=True))))


# NOTE: the API's GET of one ARQ (Nova polls it until Bound) and its
# PATCH read these; the ORM's three entities per row were 0.65 ms.
_GET_ARQS = {True: _get_arqs_statement(),
             False: _get_arqs_statement().where(
                 ARQ.project_id == sa.bindparam('project_id'))}


def _view(row):
    handle = (HandleView(row.handle_uuid, row.handle_attach_type,
                         row.handle_attach_info, row.handle_numa_node)
              if row.handle_uuid is not None else None)
    return ARQView(row, row.profile_name, handle)


def get_arqs(visible_to, uuids):
    """ARQViews in the order of ``uuids``, read-only rows (the ARQ's
    columns; the handle's uuid, attach_type, attach_info); ARQNotFound
    for any not seen."""
    params = {'uuids': list(uuids)}
    if visible_to is not ALL:
        params['project_id'] = visible_to
    with session.reader() as s:
        found = {row.uuid: _view(row) for row in s.connection().execute(
            _GET_ARQS[visible_to is ALL], params)}
    for uuid in uuids:
        if uuid not in found:
            raise exception.ARQNotFound(uuid=uuid)
    return [found[uuid] for uuid in uuids]


_INSTANCE_HAS_ARQS = sa.select(ARQ.id).where(
    ARQ.instance_uuid == sa.bindparam('instance_uuid'),
    ARQ.project_id.is_not_distinct_from(sa.bindparam('project_id'))
).limit(1)


def instance_has_arqs(instance_uuid, project_id):
    """Whether an ARQ of ``project_id`` (None: of no project) names the
    instance: another project's ARQs are not the instance's, whatever
    uuid they name."""
    with session.reader() as s:
        return s.connection().execute(
            _INSTANCE_HAS_ARQS, {'instance_uuid': instance_uuid,
                                 'project_id': project_id}).first() \
            is not None


# What deleting or unbinding ARQs left for a conductor: hosts whose
# released regions wait for their clean, hosts whose publish it requested
# (every release takes capacity away until the wipe ends).
Released = collections.namedtuple('Released',
                                  ['clean_hosts', 'publish_hosts'])


def _deleted(s, arqs):
    """Delete the rows; what a conductor must be told (Released)."""
    hosts = set()
    for arq in arqs:
        place = _place_of(s, arq)
        if arq.attach_handle_id:
            attach_handles.free(s, arq.attach_handle_id)
            hosts.add(cleaning.release(s, arq.attach_handle_id))
        s.delete(arq)
        device_history.record(s, _event('arq.delete', arq, place))
    hosts.discard(None)
    return Released(hosts, publish_requests.requested_in(s))


def _conflict_on_stale(func):
    """A row the conductor changed while we deleted it: 409, retry."""
    def wrapper(visible_to, *args, **kwargs):
        try:
            return func(visible_to, *args, **kwargs)
        except orm_exc.StaleDataError:
            raise exception.Conflict(
                reason='accelerator requests changed while being deleted; '
                       'retry')
    wrapper.__doc__ = func.__doc__
    return wrapper


@_conflict_on_stale
def delete_by_uuids(visible_to, uuids, may_delete=None):
    """Delete exactly these ARQs, or none of them.

    Refuses (409) an ARQ whose bind is in flight; ``may_delete(arq)`` is
    the caller's policy check, run on each row before anything changes.
    Returns Released: the hosts whose regions now wait for their clean,
    and those whose publish this requested.
    """
    with session.writer() as s:
        stmt = _visible(sa.select(ARQ), visible_to)
        rows = {a.uuid: a for a in s.scalars(
            stmt.where(ARQ.uuid.in_(uuids)))}
        for uuid in uuids:
            arq = rows.get(uuid)
            if arq is None:
                raise exception.ARQNotFound(uuid=uuid)
            if arq.state in states.ARQ_BUSY:
                raise exception.ARQStateConflict(
                    uuid=uuid, state=arq.state, action='delete',
                    expected='any state but %s'
                    % ', '.join(states.ARQ_BUSY))
            if may_delete is not None:
                may_delete(arq)
        return _deleted(s, list(rows.values()))


@_conflict_on_stale
def delete_by_instance(visible_to, instance_uuid):
    """Delete every ARQ of an instance; none is not an error (Nova calls
    this again on every teardown retry). Returns Released, as
    delete_by_uuids."""
    with session.writer() as s:
        stmt = _visible(sa.select(ARQ), visible_to)
        return _deleted(s, list(s.scalars(stmt.where(
            ARQ.instance_uuid == instance_uuid))))


# --- Binding (the conductor's bind workflow, and the API's start_binds) -----

BIND_KEYS = ('hostname', 'device_rp_uuid', 'instance_uuid')
# What a bind decided on when it moved the ARQ to BindStarted;
# ``project_id``: the ARQ's project (the bind's, when it names one).
Started = collections.namedtuple('Started', [
    'uuid', 'version', 'instance_uuid', 'hostname', 'device_rp_uuid',
    'device_profile_id', 'group_id', 'project_id'])
# Where a bind may go: the deployables its resource provider offers (one,
# or the siblings behind one function; none when unknown) and their
# device (None when unknown), and its profile group (None if gone).
BindTarget = collections.namedtuple('BindTarget',
                                    ['deployables', 'device', 'group'])


_GET = sa.select(ARQ.__table__).where(ARQ.uuid == sa.bindparam('arq_uuid'))


def _get(s, arq_uuid):
    """The ARQ as a read-only row (its columns), or None; built once: the
    bind's steps and the API's PATCH read it."""
    return s.connection().execute(_GET, {'arq_uuid': arq_uuid}).first()


def get(arq_uuid):
    """The ARQ as a read-only row; ARQNotFound when there is none."""
    with session.reader() as s:
        arq = _get(s, arq_uuid)
    if arq is None:
        raise exception.ARQNotFound(uuid=arq_uuid)
    return arq


def state_of(arq_uuid):
    """The ARQ's state now, or None when it does not exist."""
    with session.reader() as s:
        return s.scalar(sa.select(ARQ.state).where(ARQ.uuid == arq_uuid))


# The database's clock, as the value of a column an ARQ's move stamps.
NOW = clock.utc_now()


@functools.lru_cache(maxsize=64)
def _state_update(columns, now_columns):
    """The conditional UPDATE of an ARQ's state and ``columns`` (set from
    ``new_<column>``; ``now_columns`` to NOW) on the state and version it
    was read with, built once per set of columns."""
    values = {c: sa.bindparam('new_' + c) for c in columns}
    values.update((c, NOW) for c in now_columns)
    values['state'] = sa.bindparam('new_state')
    return conditional.statement(
        ARQ, ARQ.id == sa.bindparam('arq_id'), values,
        ARQ.state == sa.bindparam('old_state'),
        ARQ.version == sa.bindparam('old_version'))


def _update_state(s, arq, new_state, **values):
    """Move ``arq`` from the state and version it was read with; the new
    version, or None when someone else moved it first. A value is a
    plain value, or NOW."""
    now_columns = tuple(sorted(k for k, v in values.items() if v is NOW))
    columns = tuple(sorted(k for k in values if k not in now_columns))
    params = {'new_' + c: values[c] for c in columns}
    params.update(arq_id=arq.id, new_state=new_state, old_state=arq.state,
                  old_version=arq.version)
    won = conditional.run(s, _state_update(columns, now_columns), params)
    return arq.version + 1 if won else None


def _state_conflict(arq_uuid, state, target):
    return exception.ARQStateConflict(
        uuid=arq_uuid, state=state, action='moving it to %s' % target,
        expected=', '.join(states.ARQ.sources(target)))


def _transition(s, arq_uuid, target, expected_version=None, **values):
    arq = _get(s, arq_uuid)
    if arq is None:
        raise exception.ARQNotFound(uuid=arq_uuid)
    changed = '%s (changed meanwhile)' % arq.state
    if expected_version not in (None, arq.version):
        raise _state_conflict(arq_uuid, changed, target)
    if not states.ARQ.allows(arq.state, target):
        raise _state_conflict(arq_uuid, arq.state, target)
    handle_id = arq.attach_handle_id
    release = target in states.ARQ_RELEASING and handle_id is not None
    if release:
        values['attach_handle_id'] = None
    place = _place_of(s, arq, values.get('device_rp_uuid'))
    version = _update_state(s, arq, target, **values)
    if version is None:
        raise _state_conflict(arq_uuid, changed, target)
    event = _TRANSITION_EVENTS.get(target)
    if event is not None:
        # NOTE: an unbind clears the binding; the event names whom the
        # ARQ was bound to.
        shown = {k: v for k, v in values.items() if k in _ARQ_FIELDS
                 and v is not NOW and (v is not None or k == 'error')}
        device_history.record(s, _event(event, arq, place, state=target,
                                        **shown))
    if release:
        _release_handle(s, arq_uuid, handle_id)
    return version


def _release_handle(s, arq_uuid, handle_id):
    """The ARQ let go of its handle (its row no longer names it): free it
    and leave its region to be wiped before the next tenant."""
    if not attach_handles.free(s, handle_id):
        LOG.warning('Attach handle %s of ARQ %s was already free',
                    handle_id, arq_uuid)
    # A tenant had it (or a bind was about to): db/cleaning.py.
    cleaning.release(s, handle_id)


# The notification of a move to each state (Bound: finish_bind's).
_TRANSITION_EVENTS = {'BindStarted': 'arq.bind.start',
                      'BindFailed': 'arq.bind.error',
                      'Unbound': 'arq.unbind'}


def transition(arq_uuid, target, expected_version=None, **values):
    """Move one ARQ to ``target`` if the state machine allows; return its
    new version.

    ``expected_version`` also requires that nobody changed the ARQ since.
    Leaving Bound frees the attach handle in the same transaction.
    """
    with session.writer() as s:
        return _transition(s, arq_uuid, target, expected_version, **values)


def _binding_values(arq_uuid, binding):
    """The columns a bind request sets; Invalid if it lacks one."""
    missing = [k for k in BIND_KEYS if not binding.get(k)]
    if missing:
        raise exception.Invalid(reason='the binding of ARQ %s lacks %s'
                                % (arq_uuid, ', '.join(missing)))
    values = {k: binding[k] for k in BIND_KEYS}
    if binding.get('project_id'):
        values['project_id'] = binding['project_id']
    return values


def _start_bind(s, arq_uuid, binding, taken_by=None):
    """BindStarted with the binding, stamped with the database's clock
    (taken by conductor ``taken_by`` already, or by none yet); the new
    version."""
    return _transition(s, arq_uuid, 'BindStarted', bind_started_at=NOW,
                       bind_dispatched_at=NOW,
                       bind_taken_at=NOW if taken_by else None,
                       bind_taken_by=taken_by, error=None,
                       **_binding_values(arq_uuid, binding))


def start_binds(bindings):
    """Record a bind request: every ARQ BindStarted, all or nothing.

    The API calls this before it casts the request to a conductor: a cast
    lost on its way (a broker restart) or taken by a conductor that dies
    before doing anything would otherwise leave the ARQs Initial; recorded
    as BindStarted and taken by no conductor, the reaper sends them again.
    """
    with session.writer() as s:
        for arq_uuid, binding in bindings.items():
            _start_bind(s, arq_uuid, binding)


def _take_bind(s, arq, conductor):
    """Mark the bind the API recorded as taken by ``conductor``; the new
    version. Only one conductor takes a bind: a copy of the cast (the
    reaper sent it again while the first was still queued) is refused."""
    if arq.bind_taken_by is not None:
        raise exception.ARQStateConflict(
            uuid=arq.uuid, state='BindStarted, taken by conductor %s'
            % arq.bind_taken_by, action='taking its bind',
            expected='a bind no conductor took yet')
    version = _update_state(s, arq, 'BindStarted', bind_taken_at=NOW,
                            bind_taken_by=conductor)
    if version is None:
        raise _state_conflict(arq.uuid, 'BindStarted (changed meanwhile)',
                              'BindStarted')
    return version


def _begin_bind(s, arq_uuid, binding, conductor):
    arq = _get(s, arq_uuid)
    values = _binding_values(arq_uuid, binding)
    if arq is not None and arq.state == 'BindStarted' and all(
            getattr(arq, k) == values.get(k) for k in BIND_KEYS):
        version = _take_bind(s, arq, conductor)  # recorded by the API
    else:
        version = _start_bind(s, arq_uuid, binding, taken_by=conductor)
    return Started(arq_uuid, version, values['instance_uuid'],
                   values['hostname'], values['device_rp_uuid'],
                   arq.device_profile_id, arq.device_profile_group_id,
                   values.get('project_id') or arq.project_id)


def begin_binds(bindings, conductor):
    """Conductor ``conductor``'s start of a bind request, in one
    transaction.

    Every ARQ that can is BindStarted (or already was, with exactly this
    binding, recorded by the API) and marked taken by ``conductor``, so a
    conductor killed half way leaves each ARQ untouched, or BindStarted
    and taken, which the reaper fails. Returns ([Started], {arq_uuid:
    (its state or None, the refusal)}) for those that cannot start
    (unknown, wrong state, incomplete binding, taken by a conductor
    already).
    """
    started, refused = [], {}
    with session.writer() as s:
        for arq_uuid, binding in bindings.items():
            try:
                started.append(_begin_bind(s, arq_uuid, binding, conductor))
            except exception.CyborgLiteException as exc:
                arq = _get(s, arq_uuid)
                refused[arq_uuid] = (arq.state if arq is not None else None,
                                     exc)
    return started, refused


def bind_target(started):
    """The BindTarget of a started bind, read in one transaction."""
    with session.reader() as s:
        found = deployables.find_by_rp(s, started.device_rp_uuid)
        device, offered = found if found is not None else (None, [])
        return BindTarget(offered, device, device_profiles.group(
            s, started.device_profile_id, started.group_id))


_TABLE = ARQ.__table__
# A bind's own ARQ statements, built once (its transaction is the hot path
# of the API's bind): the lock of the ARQ it started, and its move to
# Bound on the state and version it was started with.
_LOCK_STARTED = (sa.select(_TABLE.c.id, _TABLE.c.project_id)
                 .where(_TABLE.c.uuid == sa.bindparam('arq_uuid'),
                        _TABLE.c.state == 'BindStarted',
                        _TABLE.c.version == sa.bindparam('started_version'))
                 .with_for_update())


def _bind_move(source, target, values):
    if not states.ARQ.allows(source, target):
        raise ValueError('an ARQ cannot go from %s to %s' % (source, target))
    return conditional.statement(
        ARQ, ARQ.id == sa.bindparam('arq_id'), dict(values, state=target),
        ARQ.state == source,
        ARQ.version == sa.bindparam('started_version'))


_BOUND = _bind_move('BindStarted', 'Bound', {
    'attach_handle_id': sa.bindparam('handle_id'),
    'deployable_id': sa.bindparam('region_id'), 'error': None})
# A claim held until the schedulers have it: still BindStarted, with its
# handle (every way out of BindStarted gives a handle back).
_HOLD = conditional.statement(
    ARQ, ARQ.id == sa.bindparam('arq_id'), {
        'attach_handle_id': sa.bindparam('handle_id'),
        'deployable_id': sa.bindparam('region_id')},
    ARQ.state == 'BindStarted',
    ARQ.version == sa.bindparam('started_version'))
# The end of a held claim: Bound on the version the hold left.
_BOUND_AFTER_HOLD = (sa.select(ARQ.id)
                     .where(ARQ.uuid == sa.bindparam('arq_uuid')))

# What finish_bind claimed: the hosts whose publish it requested, and,
# when there are any, the ARQ's version while its claim is held (Bound
# only after they are published: ``mark_bound``); None when it is Bound.
Claimed = collections.namedtuple('Claimed', ['publish_hosts', 'version',
                                             'handle_id', 'deployable_id'])


def _lock_started(s, started):
    """Lock the ARQ row (before any region or handle lock) if it is still
    (BindStarted, started.version); (its id, its project), or
    ARQStateConflict."""
    locked = s.connection().execute(_LOCK_STARTED, {
        'arq_uuid': started.uuid,
        'started_version': started.version}).first()
    if locked is None:
        raise _state_conflict(started.uuid, 'no longer BindStarted', 'Bound')
    return locked


def _mark_bound(s, started, arq_id, handle_id, deployable_id,
                version=None, statement=_BOUND):
    if not conditional.run(s, statement, {
            'arq_id': arq_id, 'handle_id': handle_id,
            'region_id': deployable_id,
            'started_version': started.version if version is None
            else version}):
        raise _state_conflict(started.uuid, 'BindStarted (changed '
                              'meanwhile)', 'Bound')


def mark_bound(started, claimed):
    """Bound, after the hosts of a held claim (finish_bind's Claimed with
    a version) were published; ARQStateConflict when an unbind or the
    reaper moved it meanwhile (they gave its handle back)."""
    with session.writer() as s:
        arq_id = s.connection().execute(
            _BOUND_AFTER_HOLD, {'arq_uuid': started.uuid}).scalar()
        if arq_id is None:
            # NOTE: deleted with its instance meanwhile (its handle too).
            raise _state_conflict(started.uuid, 'deleted', 'Bound')
        _mark_bound(s, started, arq_id, claimed.handle_id,
                    claimed.deployable_id, version=claimed.version)
        device_history.record(s, _bound_event(
            started, s.scalar(sa.select(ARQ.project_id).where(
                ARQ.id == arq_id)),
            device_history.place_of_region(s, claimed.deployable_id)))


def _bind_failed(arq_uuid, reason):
    return exception.ArqBindFailed(uuid=arq_uuid, reason=reason)


def _refused(s, refusal, device, region):
    if refusal is None:
        return None
    return refusal(devices.region_rows(s, device, region))


def finish_bind(started, deployable_id, deployable_uuid, refusal=None,
                device_id=None):
    """Claim a handle of the region and make the ARQ Bound, in one
    transaction; a Claimed.

    When the claim changes what a scheduler is offered beyond Placement's
    own count of the allocation (a Kubernetes host: the region's and its
    siblings' taints), the ARQ stays BindStarted with its handle and the
    Claimed carries the hosts to publish and the version to make it Bound
    with afterwards (``mark_bound``): the schedulers have the change
    before the ARQ is Bound and Nova told.

    ARQStateConflict when the ARQ left (BindStarted, started.version)
    meanwhile (an unbind or the reaper won); ArqBindFailed with the reason
    when the region is gone (or is no longer on ``device_id``, its device
    when the caller read it), when an active programming job holds it or
    a sibling behind its PCI function, when ``refusal(rows)`` (rows:
    db/devices.region_rows, read under the device and region locks) says
    why the region may not be bound now (its cleaning among the reasons),
    or when no handle is free.
    """
    try:
        with session.writer() as s:
            arq_id, project_id = _lock_started(s, started)
            locked = deployables.lock_for_bind(s, deployable_id, device_id)
            if locked is None:
                raise _bind_failed(started.uuid, 'deployable %s is gone'
                                   % deployable_uuid)
            device, region = locked
            job = deployables.active_job_on(s, deployable_id,
                                            except_arq_id=arq_id)
            if job is not None:
                raise _bind_failed(started.uuid, 'region %s is being '
                                   'programmed by job %s'
                                   % (deployable_uuid, job))
            rows = devices.region_rows(s, device, region)
            why = deployables.sibling_programming(s, rows) or (
                refusal(rows) if refusal is not None else None)
            if why:
                raise _bind_failed(started.uuid, why)
            claimed = attach_handles.claim_in_region(
                s, device.hostname, rows.handles.get(deployable_id, ()),
                rows.blocked_handles)
            if claimed is None:
                # NOTE: asked again: a racing bind of a sibling region may
                # have taken the shared function since.
                raise _bind_failed(started.uuid, _refused(
                    s, refusal, device, region) or 'no free attach handle '
                    'on deployable %s' % deployable_uuid)
            handle_id, _key = claimed
            cleaning.mark_allocated(s, deployable_id, region.device_state)
            attach_handles.request_publish_if_offer_changed(
                s, handle_id, 'attach handle claimed',
                hostname=device.hostname)
            hosts = publish_requests.requested_in(s)
            if not hosts:
                _mark_bound(s, started, arq_id, handle_id, deployable_id)
                device_history.record(s, _bound_event(
                    started, project_id, device_history.Place(
                        device.uuid, region.uuid, device.hostname)))
                return Claimed(hosts, None, handle_id, deployable_id)
            _mark_bound(s, started, arq_id, handle_id, deployable_id,
                        statement=_HOLD)
            return Claimed(hosts, started.version + 1, handle_id,
                           deployable_id)
    except sa_exc.IntegrityError:
        # NOTE: the UNIQUE attach_handle_id caught a double use that the
        # claim should have prevented; the rollback undid the claim.
        LOG.error('Attach handle of deployable %s refused for ARQ %s',
                  deployable_uuid, started.uuid)
        raise _bind_failed(started.uuid,
                           'the attach handle was taken by another ARQ')


def _unbind(s, arq_uuid):
    """Unbound, with its binding cleared and its attach handle freed (its
    region left to be wiped, with a publish request of its host)."""
    arq = _get(s, arq_uuid)
    if arq is not None and arq.state != 'Unbound':
        _transition(s, arq_uuid, 'Unbound', hostname=None,
                    device_rp_uuid=None, instance_uuid=None,
                    deployable_id=None, bind_started_at=None,
                    bind_dispatched_at=None, bind_taken_at=None,
                    bind_taken_by=None, error=None)


def _bound_event(started, project_id, place):
    """The notification of a bind's end: ``place`` where it is Bound."""
    return _event('arq.bind.end', {
        'uuid': started.uuid, 'state': 'Bound', 'project_id': project_id,
        'instance_uuid': started.instance_uuid,
        'hostname': started.hostname,
        'device_rp_uuid': started.device_rp_uuid,
        'device_profile_group_id': started.group_id}, place)


def unbind_all(visible_to, uuids):
    """Unbind exactly these ARQs (those Unbound already are left), or none
    of them: ARQNotFound, or ARQStateConflict when one moved meanwhile.
    Returns Released, as delete_by_uuids (a released region's host is
    among those to publish; the clean is started for each of them)."""
    began, outcome = time.monotonic(), 'refused'
    try:
        with session.writer() as s:
            found = set(s.scalars(_visible(sa.select(ARQ.uuid), visible_to)
                                  .where(ARQ.uuid.in_(uuids))))
            for arq_uuid in uuids:
                if arq_uuid not in found:
                    raise exception.ARQNotFound(uuid=arq_uuid)
                _unbind(s, arq_uuid)
            hosts = publish_requests.requested_in(s)
        outcome = 'unbound'
        return Released(hosts, hosts)
    finally:
        # NOTE: per ARQ, as the conductor counted its unbinds before the
        # API made them.
        took = (time.monotonic() - began) / max(len(uuids), 1)
        for _arq in uuids:
            metrics.observe(metrics.UNBIND_DURATION, took, outcome)


def _no_active_job():
    """The ARQ's region is not being loaded by an active programming job
    linked to it: that job has its own timeout, and the bind ends when it
    does."""
    job = models.ProgrammingJob
    return ~(sa.select(job.id)
             .where(job.arq_id == ARQ.id, job.state.in_(states.JOB_ACTIVE))
             .exists())


def _locked_for_reaping(s, query):
    if conditional.skip_locked(s):
        # NOTE: two conductors' reapers split the work instead of waiting.
        query = query.with_for_update(skip_locked=True, of=ARQ)
    return list(s.scalars(query))


def _find_stale_binds(s, cutoff, limit):
    """BindStarted ARQs locked for reaping: taken by a conductor at or
    before ``cutoff`` (it left them), or requested at or before it and
    taken by none (every copy of the cast was lost)."""
    taken_long_ago = sa.and_(ARQ.bind_taken_at.is_not(None),
                             ARQ.bind_taken_at <= cutoff)
    never_taken = sa.and_(ARQ.bind_taken_at.is_(None),
                          ARQ.bind_started_at <= cutoff)
    return _locked_for_reaping(s, (
        sa.select(ARQ)
        .where(ARQ.state == 'BindStarted',
               sa.or_(taken_long_ago, never_taken), _no_active_job())
        .order_by(ARQ.bind_started_at)
        .limit(limit)))


def reap_stale_binds(timeout, reason, batch=100):
    """BindStarted ARQs a conductor took ``timeout`` seconds ago or more,
    or that no conductor took within ``timeout`` seconds of the request
    (by the database's clock) -> BindFailed with ``reason(taken_by)``
    (``taken_by`` the conductor's name, or None).

    Returns [(arq uuid, instance uuid)] of those this call moved; one
    transaction per ``batch`` of them.
    """
    reaped = []
    while True:
        with session.writer() as s:
            cutoff = clock.now(s) - datetime.timedelta(seconds=timeout)
            stale = _find_stale_binds(s, cutoff, batch)
            for arq in stale:
                # NOTE: a bind that died between claiming its handle and
                # Bound (finish_bind) lets go of it here.
                error = reason(arq.bind_taken_by)
                if _update_state(s, arq, 'BindFailed', error=error,
                                 attach_handle_id=None,
                                 deployable_id=None):
                    if arq.attach_handle_id is not None:
                        _release_handle(s, arq.uuid, arq.attach_handle_id)
                    reaped.append((arq.uuid, arq.instance_uuid))
                    device_history.record(s, _event(
                        'arq.bind.error', arq, _place_of(s, arq),
                        state='BindFailed', error=error))
        if len(stale) < batch:
            return reaped


def _binding_of(arq):
    return {key: getattr(arq, key) for key in BIND_KEYS}


def resend_untaken_binds(after, batch=100):
    """BindStarted ARQs that no conductor took, last sent ``after``
    seconds ago or more: stamped as sent now, and returned as [(arq uuid,
    binding)] for the caller to cast again.

    Their cast was lost (a broker restart dropped it, or a conductor took
    it and died before marking the ARQ); sending it again is safe, as
    only one conductor can take a bind (``begin_binds``).
    """
    due = []
    with session.writer() as s:
        cutoff = clock.now(s) - datetime.timedelta(seconds=after)
        untaken = _locked_for_reaping(s, (
            sa.select(ARQ)
            .where(ARQ.state == 'BindStarted', ARQ.bind_taken_at.is_(None),
                   sa.func.coalesce(ARQ.bind_dispatched_at,
                                    ARQ.bind_started_at) <= cutoff)
            .order_by(ARQ.bind_started_at)
            .limit(batch)))
        for arq in untaken:
            if _update_state(s, arq, 'BindStarted',
                             bind_dispatched_at=NOW):
                due.append((arq.uuid, _binding_of(arq)))
    return due
