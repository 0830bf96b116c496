"""Accelerator requests (ARQs): creation, lists, reads, state moves.

The table's other transactions are beside it: its binds and their
reaper (db/arq_binds.py), its releases, delete and unbind
(db/arq_releases.py); they share this module's row helpers (``_get``,
``_transition``, ``_update_state``, ``_event``, ...). The API creates,
reads and deletes ARQs and records a bind request
(``arq_binds.start_binds``) before casting it; the conductor's bind
workflow (conductor/bind.py) moves ARQs through common/states.ARQ, never
seeing a session. No write trusts an earlier read: each state change is
a conditional UPDATE (db/sql/conditional.py) on the state and version it
was decided on. Writers
lock ARQ, then region, then attach handle, so PostgreSQL never deadlocks
on them. Unbinding or deleting a bound ARQ frees its handle in the same
transaction. A bind's start is stamped with the database's clock
(db/sql/clock.py), which the reaper compares with.

``visible_to`` is pagination.ALL (an admin) or the caller's project id: an
ARQ is seen only by its own project.
"""
import collections
import functools
import logging

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cyborg_lite.common import exception
from cyborg_lite.common import resources
from cyborg_lite.common import states
from cyborg_lite.common import uuids
from cyborg_lite.db import device_history
from cyborg_lite.db import device_profiles
from cyborg_lite.db import instance_removals
from cyborg_lite.db import models
from cyborg_lite.db.sql import clock
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import direct_statement
from cyborg_lite.db.sql import pagination
from cyborg_lite.db.sql import session
from cyborg_lite.notifications import events as notifications

LOG = logging.getLogger(__name__)

ALL = pagination.ALL
ARQ = models.AcceleratorRequest
SORT_KEYS = ('created_at', 'uuid', 'state', 'device_profile_group_id')

# ``waits_for``: the uuid of the region its bind waits for
# (conductor/bind_wait.py), where the read asked for it.
ARQView = collections.namedtuple(
    'ARQView', ['arq', 'device_profile_name', 'handle', 'waits_for'],
    defaults=[None])
# The uuid of the region an ARQ's bind waits for, or NULL (its own
# alias: the statements it joins read the handle's region too).
_WAITED = models.Deployable.__table__.alias('waited')
_WAITS_FOR = (sa.select(_WAITED.c.uuid)
              .where(_WAITED.c.id == ARQ.bind_waits_for_id)
              .correlate_except(_WAITED).scalar_subquery())


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
    text), ``attach_handle_numa_node`` (its region's NUMA node)) and
    ``bind_waits_for`` (the uuid of the region its bind waits for)."""
    handle = models.AttachHandle
    dep = models.Deployable
    extra = {'device_profile_name': models.DeviceProfile.name,
             'attach_handle_type': sa.func.coalesce(handle.attach_type, ''),
             'attach_handle_uuid': handle.uuid,
             'attach_handle_info': handle.attach_info,
             'attach_handle_numa_node': dep.numa_node,
             'bind_waits_for': _WAITS_FOR}
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
                      dep.c.numa_node.label('handle_numa_node'),
                      _WAITS_FOR.label('waits_for'))
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
    return ARQView(row, row.profile_name, handle, row.waits_for)


def get_arqs(visible_to, uuids):
    """ARQViews in the order of ``uuids``, read-only rows (the ARQ's
    columns; the handle's uuid, attach_type, attach_info; the region its
    bind waits for); ARQNotFound for any not seen."""
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
    and leave its region to be wiped before the next tenant (or the
    instance its bind made to be removed: db/instance_removals.py)."""
    if not instance_removals.release_handle(s, handle_id,
                                            holder='ARQ %s' % arq_uuid):
        LOG.debug('ARQ %s let go of attach handle %s: nothing to wipe',
                  arq_uuid, handle_id)


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
