"""All SQL of the ARQ bind workflow: the state matrix and its
transitions, attach handle claims and frees, the stale-bind lookup.

Every function takes an open session from ``session.writer()`` or
``session.reader()``; the caller decides what one transaction holds.
Several conductors run these at once, so no write trusts an earlier read:
each UPDATE repeats, in its WHERE clause, the state and row version it was
decided on, and reports whether it matched (``rowcount == 1``). Writers
lock rows in one order, ARQ before attach handle, so two transactions
cannot deadlock on PostgreSQL.
"""
import json
import logging

import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.db import models
from cyborg_lite.db import session

LOG = logging.getLogger(__name__)

ARQ = models.AcceleratorRequest
HANDLE = models.AttachHandle

# Backends where SELECT ... FOR UPDATE SKIP LOCKED exists; on SQLite the
# writer's BEGIN IMMEDIATE already serialises every writer.
_SKIP_LOCKED_DIALECTS = ('postgresql', 'mysql')


def _skip_locked(s):
    return s.get_bind().dialect.name in _SKIP_LOCKED_DIALECTS


def get_arq(s, arq_uuid):
    return s.scalars(sa.select(ARQ).where(ARQ.uuid == arq_uuid)).first()


def get_arqs(s, arq_uuids):
    return list(s.scalars(sa.select(ARQ).where(ARQ.uuid.in_(arq_uuids))))


def update_arq_state(s, arq_id, expected_state, expected_version, new_state,
                     **values):
    """Move one ARQ from (expected_state, expected_version) to new_state.

    Returns the new row version, or None when the row was no longer in that
    state at that version (someone else moved it first).
    """
    result = s.execute(
        sa.update(ARQ)
        .where(ARQ.id == arq_id, ARQ.state == expected_state,
               ARQ.version == expected_version)
        .values(state=new_state, version=ARQ.version + 1, **values)
        .execution_options(synchronize_session=False))
    return expected_version + 1 if result.rowcount == 1 else None


# Cyborg's ARQ_STATES_TRANSFORM_MATRIX: target <- states it may come from.
ARQ_STATES_TRANSFORM_MATRIX = {
    'BindStarted': ('Initial', 'Unbound'),
    'Bound': ('BindStarted',),
    'Unbound': ('Initial', 'BindStarted', 'Bound', 'BindFailed'),
    'BindFailed': ('BindStarted', 'Bound'),
    'Deleting': tuple(s for s in models.ARQ_STATES if s != 'UnbindFailed'),
}
# Leaving Bound for one of these gives the attach handle back.
_RELEASING_STATES = ('Unbound', 'BindFailed', 'Deleting')


def state_conflict(arq_uuid, state, target):
    return exception.ARQStateConflict(
        uuid=arq_uuid, state=state, action='moving it to %s' % target,
        expected=', '.join(ARQ_STATES_TRANSFORM_MATRIX.get(target, ())))


def check_transition(arq_uuid, current, target):
    if current not in ARQ_STATES_TRANSFORM_MATRIX.get(target, ()):
        raise state_conflict(arq_uuid, current, target)


def transition(s, arq_uuid, target, expected_version=None, **values):
    """Move one ARQ to ``target`` if the matrix allows; return its version.

    ``expected_version`` also requires that nobody changed the ARQ since.
    Leaving Bound frees the attach handle in the same transaction.
    """
    arq = get_arq(s, arq_uuid)
    if arq is None:
        raise exception.ARQNotFound(uuid=arq_uuid)
    changed = '%s (changed meanwhile)' % arq.state
    if expected_version not in (None, arq.version):
        raise state_conflict(arq_uuid, changed, target)
    check_transition(arq_uuid, arq.state, target)
    handle_id = arq.attach_handle_id
    release = target in _RELEASING_STATES and handle_id is not None
    if release:
        values['attach_handle_id'] = None
    version = update_arq_state(s, arq.id, arq.state, arq.version, target,
                               **values)
    if version is None:
        raise state_conflict(arq_uuid, changed, target)
    if release and not free_handle(s, handle_id):
        LOG.warning('Attach handle %s of ARQ %s was already free',
                    handle_id, arq_uuid)
    return version


BIND_KEYS = ('hostname', 'device_rp_uuid', 'instance_uuid')


def binding_values(arq_uuid, binding):
    """The columns a bind request sets; Invalid if it lacks one."""
    missing = [k for k in BIND_KEYS if not binding.get(k)]
    if missing:
        raise exception.Invalid(reason='the binding of ARQ %s lacks %s'
                                % (arq_uuid, ', '.join(missing)))
    values = {k: binding[k] for k in BIND_KEYS}
    if binding.get('project_id'):
        values['project_id'] = binding['project_id']
    return values


def start_bind(s, arq_uuid, binding):
    """Record a bind request: the ARQ becomes BindStarted with its binding
    and bind_started_at. Returns the new version."""
    return transition(s, arq_uuid, 'BindStarted',
                      bind_started_at=models.utcnow(), error=None,
                      **binding_values(arq_uuid, binding))


def start_binds(bindings):
    """start_bind for every ARQ of one request, all or nothing.

    The API calls this before it casts the request to a conductor: a cast
    taken by a conductor that dies before doing anything would otherwise be
    lost with the ARQs still Initial; recorded as BindStarted, the reaper
    ends them.
    """
    with session.writer() as s:
        for arq_uuid, binding in bindings.items():
            start_bind(s, arq_uuid, binding)


def already_started(arq, binding):
    """True if ``arq`` is BindStarted with exactly this binding (the API
    recorded it before casting)."""
    return arq.state == 'BindStarted' and all(
        getattr(arq, k) == binding.get(k) for k in BIND_KEYS)


def lock_arq(s, arq_id, expected_state, expected_version):
    """Lock the ARQ row if it is still (state, version); True when it is.

    Taken before any attach handle lock to keep the ARQ-then-handle order.
    """
    found = s.execute(
        sa.select(ARQ.id)
        .where(ARQ.id == arq_id, ARQ.state == expected_state,
               ARQ.version == expected_version)
        .with_for_update()).first()
    return found is not None


def lock_region_for_bind(s, deployable_id, arq_id):
    """Lock the region's row (as job creation does) and return the uuid of
    an active programming job on it that is not this ARQ's own, or None."""
    s.execute(sa.select(models.Deployable.id)
              .where(models.Deployable.id == deployable_id)
              .with_for_update())
    job = models.ProgrammingJob
    return s.scalars(sa.select(job.uuid).where(
        job.active_deployable_id == deployable_id,
        sa.or_(job.arq_id.is_(None), job.arq_id != arq_id)).limit(1)).first()


def find_deployable_by_rp(s, rp_uuid):
    """(deployable, device) whose resource provider is rp_uuid, or None.

    A region RP is its deployable's rp_uuid. A whole-device RP (a PGPU) is
    the device's rp_uuid: the deployable is then the device's one whose
    resource class attribute is a whole-device class, or its only one.
    """
    row = s.execute(
        sa.select(models.Deployable, models.Device)
        .join(models.Device, models.Device.id == models.Deployable.device_id)
        .where(models.Deployable.rp_uuid == rp_uuid)
        .order_by(models.Deployable.id)).first()
    if row is not None:
        return tuple(row)
    device = s.scalars(sa.select(models.Device)
                       .where(models.Device.rp_uuid == rp_uuid)).first()
    if device is None:
        return None
    deployables = list(s.scalars(
        sa.select(models.Deployable)
        .where(models.Deployable.device_id == device.id)
        .order_by(models.Deployable.id)))
    whole = [d for d in deployables
             if _resource_class(s, d.id) in _WHOLE_DEVICE_RCS]
    chosen = whole or (deployables if len(deployables) == 1 else [])
    return (chosen[0], device) if chosen else None


_WHOLE_DEVICE_RCS = ('PGPU',)


def _resource_class(s, deployable_id):
    return s.scalar(sa.select(models.Attribute.value).where(
        models.Attribute.deployable_id == deployable_id,
        models.Attribute.key == 'rc'))


def get_deployable(s, deployable_id):
    return s.get(models.Deployable, deployable_id)


def get_profile_group(s, device_profile_id, group_id):
    """The ARQ's request group as a dict, or None when it does not exist."""
    profile = s.get(models.DeviceProfile, device_profile_id)
    if profile is None:
        return None
    groups = json.loads(profile.profile_json or '[]')
    if not 0 <= group_id < len(groups):
        return None
    return groups[group_id]


def claim_free_handle(s, deployable_id):
    """Mark one free attach handle of the deployable in use; return it.

    Returns None when no handle is free. A conditional UPDATE on
    (in_use=false, version) decides: a handle that another transaction
    claimed meanwhile no longer matches, and the next candidate is tried.
    """
    query = (sa.select(HANDLE.id, HANDLE.version)
             .where(HANDLE.deployable_id == deployable_id,
                    HANDLE.in_use.is_(False))
             .order_by(HANDLE.id))
    if _skip_locked(s):
        # NOTE: concurrent binds to one region then skip each other's
        # handle instead of queueing behind it.
        query = query.with_for_update(skip_locked=True)
    for handle_id, version in s.execute(query).all():
        result = s.execute(
            sa.update(HANDLE)
            .where(HANDLE.id == handle_id, HANDLE.version == version,
                   HANDLE.in_use.is_(False))
            .values(in_use=True, version=HANDLE.version + 1)
            .execution_options(synchronize_session=False))
        if result.rowcount == 1:
            return s.get(HANDLE, handle_id, populate_existing=True)
    return None


def free_handle(s, handle_id):
    """Mark the handle free; False if it was not in use (already freed)."""
    result = s.execute(
        sa.update(HANDLE)
        .where(HANDLE.id == handle_id, HANDLE.in_use.is_(True))
        .values(in_use=False, version=HANDLE.version + 1)
        .execution_options(synchronize_session=False))
    return result.rowcount == 1


def find_stale_binds(s, started_before, limit=100):
    """BindStarted ARQs begun before ``started_before``, locked for reaping.

    An ARQ whose region an active programming job is loading is left out:
    that job has its own timeout, and the bind ends when it does.
    """
    active_job = (sa.select(models.ProgrammingJob.id)
                  .where(models.ProgrammingJob.arq_id == ARQ.id,
                         models.ProgrammingJob.state.in_(
                             models.JOB_ACTIVE_STATES))
                  .exists())
    query = (sa.select(ARQ)
             .where(ARQ.state == 'BindStarted',
                    ARQ.bind_started_at < started_before,
                    ~active_job)
             .order_by(ARQ.bind_started_at)
             .limit(limit))
    if _skip_locked(s):
        # NOTE: two conductors' reapers split the work instead of waiting.
        query = query.with_for_update(skip_locked=True, of=ARQ)
    return list(s.scalars(query))

