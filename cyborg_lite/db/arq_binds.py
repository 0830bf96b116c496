"""ARQ binds: the API's record of a bind request (``start_binds``), the
conductor's transactions of its bind workflow (conductor/bind.py), and
the reaper of the binds left behind.

Each move is a conditional UPDATE on the (state, version) it was decided
on; writers lock ARQ, then region, then attach handle. A bind's start is
stamped with the database's clock (db/sql/clock.py), which the reaper
compares with.
"""
import collections
import datetime
import json
import logging

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import states
from cyborg_lite.db import attach_handles
from cyborg_lite.db import cleaning
from cyborg_lite.db import deployables
from cyborg_lite.db import device_history
from cyborg_lite.db import device_profiles
from cyborg_lite.db import devices
from cyborg_lite.db import models
from cyborg_lite.db import publish_requests
# NOTE: the table's row helpers, shared by its modules.
from cyborg_lite.db.arqs import ARQ, NOW, _event, _get, _place_of, \
    _release_handle, _state_conflict, _transition, _update_state
from cyborg_lite.db.sql import clock
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import session
from cyborg_lite.inventory import views as host_inventory

LOG = logging.getLogger(__name__)

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
                       bind_waits_for_id=None,
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
# ``instance``: what the agent must make before it is Bound (a
# deployable of device_records.MAKES_INSTANCE), else None.
Claimed = collections.namedtuple('Claimed', ['publish_hosts', 'version',
                                             'handle_id', 'deployable_id',
                                             'instance'],
                                 defaults=[None])


def _instance(device, region, rows, handle_id):
    """What an agent makes for a bind of ``region`` through its handle
    ``handle_id`` (agent RPC make_instance), or None when a bind of it
    makes nothing."""
    if not devices.makes_instance(rows, region.id):
        return None
    [info] = [h.attach_info for h in rows.handles[region.id]
              if h.id == handle_id]
    return {'driver': device.driver_name, 'identity': device.identity,
            'deployable_name': device_records.region_name_of(region, device),
            'attach_info': json.loads(info)}


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


def _refused(s, device, region):
    return host_inventory.region_refusal(
        devices.region_rows(s, device, region))


def finish_bind(started, deployable_id, deployable_uuid, device_id=None):
    """Claim a handle of the region and make the ARQ Bound, in one
    transaction; a Claimed.

    When the claim changes what a scheduler is offered beyond Placement's
    own count of the allocation (a Kubernetes host: the region's and its
    siblings' taints), the ARQ stays BindStarted with its handle and the
    Claimed carries the hosts to publish and the version to make it Bound
    with afterwards (``mark_bound``): the schedulers have the change
    before the ARQ is Bound and Nova told. A region whose instance is
    made at bind (device_records.MAKES_INSTANCE: a vGPU type) is held so
    too, ``Claimed.instance`` saying what its agent must make first: the
    handle's row is the lock of its function before anything is written.

    ARQStateConflict when the ARQ left (BindStarted, started.version)
    meanwhile (an unbind or the reaper won); ArqBindFailed with the reason
    when the region is gone (or is no longer on ``device_id``, its device
    when the caller read it), when an active programming job holds it or
    a sibling behind its PCI function, when inventory/views.region_refusal
    of its rows (db/devices.region_rows, read under the device and region
    locks; the predicate every inventory sink uses) says why the region
    may not be bound now (its cleaning among the reasons),
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
            why = deployables.sibling_programming(s, rows) or \
                host_inventory.region_refusal(rows)
            if why:
                raise _bind_failed(started.uuid, why)
            claimed = attach_handles.claim_in_region(
                s, device.hostname, rows.handles.get(deployable_id, ()),
                rows.blocked_handles)
            if claimed is None:
                # NOTE: asked again: a racing bind of a sibling region may
                # have taken the shared function since.
                raise _bind_failed(started.uuid, _refused(
                    s, device, region) or 'no free attach handle '
                    'on deployable %s' % deployable_uuid)
            handle_id, _key = claimed
            cleaning.mark_allocated(s, deployable_id, region.device_state)
            attach_handles.request_publish_if_offer_changed(
                s, handle_id, 'attach handle claimed',
                hostname=device.hostname)
            hosts = publish_requests.requested_in(s)
            instance = _instance(device, region, rows, handle_id)
            if not hosts and instance is None:
                _mark_bound(s, started, arq_id, handle_id, deployable_id)
                device_history.record(s, _bound_event(
                    started, project_id, device_history.Place(
                        device.uuid, region.uuid, device.hostname)))
                return Claimed(hosts, None, handle_id, deployable_id)
            _mark_bound(s, started, arq_id, handle_id, deployable_id,
                        statement=_HOLD)
            return Claimed(hosts, started.version + 1, handle_id,
                           deployable_id, instance)
    except sa_exc.IntegrityError:
        # NOTE: the UNIQUE attach_handle_id caught a double use that the
        # claim should have prevented; the rollback undid the claim.
        LOG.error('Attach handle of deployable %s refused for ARQ %s',
                  deployable_uuid, started.uuid)
        raise _bind_failed(started.uuid,
                           'the attach handle was taken by another ARQ')


def _bound_event(started, project_id, place):
    """The notification of a bind's end: ``place`` where it is Bound."""
    return _event('arq.bind.end', {
        'uuid': started.uuid, 'state': 'Bound', 'project_id': project_id,
        'instance_uuid': started.instance_uuid,
        'hostname': started.hostname,
        'device_rp_uuid': started.device_rp_uuid,
        'device_profile_group_id': started.group_id}, place)


# What a resumed bind reads of the job it waited for.
JobEnd = collections.namedtuple('JobEnd', ['uuid', 'state', 'error',
                                           'deployable_uuid'])
_JOB = models.ProgrammingJob


def _waits_for_ended_job():
    """The ARQ's bind, taken by a conductor, started the job (created
    since the bind was taken, by the database's clock: a job of an earlier
    bind of the ARQ is not this one's), and the job ended; no resume holds
    a handle for it yet (finish_bind's hold until its publish: that resume
    finishes the bind)."""
    return (ARQ.state == 'BindStarted', ARQ.bind_taken_at.is_not(None),
            ARQ.attach_handle_id.is_(None),
            _JOB.arq_id == ARQ.id, _JOB.created_at >= ARQ.bind_taken_at,
            _JOB.state.in_(states.JOB_TERMINAL))


def _started_of(arq):
    return Started(arq.uuid, arq.version, arq.instance_uuid, arq.hostname,
                   arq.device_rp_uuid, arq.device_profile_id,
                   arq.device_profile_group_id, arq.project_id)


def bind_waiting_on(job_uuid):
    """(Started, JobEnd) of the bind that waits for programming job
    ``job_uuid``, which ended; None when none does (the job was no
    bind's, or its bind moved on). The Started carries the version the
    ARQ has now: the bind finishes on it (finish_bind), so of two
    resumes of the same ARQ one wins."""
    with session.reader() as s:
        row = s.execute(
            sa.select(ARQ, _JOB.uuid, _JOB.state, _JOB.error,
                      models.Deployable.uuid)
            .join(models.Deployable,
                  models.Deployable.id == _JOB.deployable_id)
            .where(_JOB.uuid == job_uuid, *_waits_for_ended_job())).first()
        if row is None:
            return None
        return _started_of(row[0]), JobEnd(*row[1:])


def any_started():
    """Whether any ARQ is BindStarted: every step of the bind reaper looks
    at those only, and an idle cloud has none (one read per tick instead
    of a writer transaction and four reads)."""
    with session.reader() as s:
        return s.scalar(sa.select(ARQ.id).where(ARQ.state == 'BindStarted')
                        .limit(1)) is not None


def ended_jobs_of_binds(limit=100):
    """Uuids of the ended programming jobs binds still wait for (the
    conductor that took the job's end died before resuming its bind)."""
    with session.reader() as s:
        return list(s.scalars(sa.select(_JOB.uuid)
                              .where(*_waits_for_ended_job())
                              .order_by(_JOB.id).limit(limit)))


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


def _waited(s, arq):
    """What a reaped bind that waited for a busy region adds to its
    error (db/arq_waits.py)."""
    if arq.bind_waits_for_id is None:
        return ''
    return '; it waited for region %s, which was not freed in time' % (
        s.scalar(sa.select(models.Deployable.uuid).where(
            models.Deployable.id == arq.bind_waits_for_id)))


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
                error = reason(arq.bind_taken_by) + _waited(s, arq)
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
