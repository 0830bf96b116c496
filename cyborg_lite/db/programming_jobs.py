"""Queries of the ``programming_jobs`` table: the job state machine.

Every state change is one conditional UPDATE (``WHERE state IN (...) AND
version = v``): two conductors, or a conductor and a reaper, racing on one
job cannot both win, and the loser gets a Conflict instead of silently
overwriting. "One active job per region" is the unique column
``active_deployable_id`` (set to the region while the job is active,
cleared when it ends), so the database, not memory, enforces it.

``attempts`` counts the tries abandoned so far (reaped after their agent
died); a job has at most ``max_attempts`` tries. ``started_at`` is when the
current try began.
"""
import datetime
import uuid as uuidlib

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cyborg_lite.common import exception
from cyborg_lite.common import states
from cyborg_lite.conf import CONF
from cyborg_lite.db import models
from cyborg_lite.db import session

ACTIVE = states.JOB_ACTIVE
TERMINAL = ('succeeded', 'failed', 'cancelled')
# Allowed moves. Success only follows verification; 'queued' after an
# active state is a retry by the reaper; nothing leaves a terminal state.
# Cancelling is allowed only before any byte may have reached hardware.
NEXT_STATES = {
    'queued': ('downloading', 'failed', 'cancelled', 'queued'),
    'downloading': ('programming', 'failed', 'cancelled', 'queued'),
    'programming': ('verifying', 'failed', 'queued'),
    'verifying': ('succeeded', 'failed', 'queued'),
}
CANCELLABLE = ('queued', 'downloading')
TRANSITION_FIELDS = ('error', 'hostname', 'attempts')
Job = models.ProgrammingJob


def _check_move(from_states, to_state):
    for state in from_states:
        if to_state not in NEXT_STATES.get(state, ()):
            raise exception.Invalid(reason='a programming job cannot go from '
                                    '%s to %s' % (state, to_state))


def _get(s, job_uuid):
    row = s.scalars(sa.select(Job).where(Job.uuid == job_uuid)).one_or_none()
    if row is None:
        raise exception.ProgrammingJobNotFound(uuid=job_uuid)
    return row


def get(job_uuid):
    with session.reader() as s:
        return _get(s, job_uuid)


def get_active_for_region(deployable_id):
    with session.reader() as s:
        return s.scalars(sa.select(Job).where(
            Job.active_deployable_id == deployable_id)).one_or_none()


def list_jobs(deployable_id=None, bitstream_id=None, states=None,
              hostname=None, project_id=None):
    """Jobs matching every given filter, oldest first."""
    query = sa.select(Job).order_by(Job.created_at, Job.id)
    for attr, value in (('deployable_id', deployable_id),
                        ('bitstream_id', bitstream_id),
                        ('hostname', hostname), ('project_id', project_id)):
        if value is not None:
            query = query.where(getattr(Job, attr) == value)
    if states is not None:
        query = query.where(Job.state.in_(states))
    with session.reader() as s:
        return list(s.scalars(query))


def bound_arq_uuid(deployable_id):
    """The uuid of a Bound ARQ holding this region, or None."""
    arq = models.AcceleratorRequest
    with session.reader() as s:
        return s.scalars(sa.select(arq.uuid).where(
            arq.deployable_id == deployable_id,
            arq.state == 'Bound').limit(1)).first()


def _lock_region_and_find_bound(s, deployable_id):
    s.execute(sa.select(models.Deployable.id)
              .where(models.Deployable.id == deployable_id)
              .with_for_update())
    arq = models.AcceleratorRequest
    return s.scalars(sa.select(arq.uuid).where(
        arq.deployable_id == deployable_id,
        arq.state == 'Bound').limit(1)).first()


def _region_label(s, deployable_id):
    dep = s.get(models.Deployable, deployable_id)
    return dep.name if dep is not None else 'id=%s' % deployable_id


def _check_refs(s, deployable_id, bitstream_id, arq_id):
    for model, value in ((models.Deployable, deployable_id),
                         (models.Bitstream, bitstream_id),
                         (models.AcceleratorRequest, arq_id)):
        if value is not None and s.get(model, value) is None:
            raise exception.Invalid(reason='no %s with id %s'
                                    % (model.__tablename__, value))


def create_job(deployable_id, bitstream_id, hostname=None, max_attempts=None,
               force=False, requester_user_id=None, project_id=None,
               arq_id=None):
    """Insert a queued job; RegionBusy if the region has an active one.

    Unless ``force``, a Bound ARQ holding the region is a Conflict, checked
    under the region's row lock that binds take too, so a bind and a job
    cannot both slip past each other's check.
    """
    row = Job(uuid=str(uuidlib.uuid4()), deployable_id=deployable_id,
              bitstream_id=bitstream_id, active_deployable_id=deployable_id,
              state='queued', hostname=hostname, attempts=0,
              max_attempts=max_attempts or CONF.programming.max_attempts,
              force=bool(force), requester_user_id=requester_user_id,
              project_id=project_id, arq_id=arq_id)
    try:
        with session.writer() as s:
            _check_refs(s, deployable_id, bitstream_id, arq_id)
            holder = _lock_region_and_find_bound(s, deployable_id)
            if holder is not None and not force:
                raise exception.Conflict(
                    reason='region %s is in use by Bound accelerator '
                           'request %s' % (_region_label(s, deployable_id),
                                           holder))
            s.add(row)
    except sa_exc.IntegrityError:
        # The references were checked in the same transaction, so this is
        # the unique active_deployable_id: another job holds the region.
        _raise_busy(deployable_id)
    return row


def _raise_busy(deployable_id):
    with session.reader() as s:
        active = s.scalars(sa.select(Job.uuid).where(
            Job.active_deployable_id == deployable_id)).first()
        region = _region_label(s, deployable_id)
    # The other job may have ended between our insert and this read.
    raise exception.RegionBusy(region=region,
                               job=active or '(which just ended)')


def _values_for(to_state, fields, now):
    values = dict(fields, state=to_state, updated_at=now, heartbeat_at=now)
    if to_state in TERMINAL:
        values.update(active_deployable_id=None, finished_at=now)
    if to_state in ('downloading', 'queued'):
        values['started_at'] = now
    return values


def _apply(s, row, from_states, to_state, fields, expected_version=None):
    """The conditional UPDATE; the row is refreshed with the result.

    Without ``expected_version`` the state condition alone decides: a
    heartbeat bumps the version at any time, and it must not make an
    agent's progress report fail as if the job had been taken away.
    """
    if row.state not in from_states:
        raise exception.JobStateConflict(
            uuid=row.uuid, state=row.state, action='moving to ' + to_state,
            expected=', '.join(from_states))
    query = sa.update(Job).where(Job.id == row.id,
                                 Job.state.in_(from_states))
    if expected_version is not None:
        query = query.where(Job.version == expected_version)
    result = s.execute(
        query.values(version=Job.version + 1,
                     **_values_for(to_state, fields, models.utcnow()))
        .execution_options(synchronize_session=False))
    if result.rowcount != 1:
        if expected_version is None:
            # Another writer moved the job between our read and UPDATE.
            s.refresh(row)
            raise exception.JobStateConflict(
                uuid=row.uuid, state=row.state,
                action='moving to ' + to_state,
                expected=', '.join(from_states))
        raise exception.StaleObject(kind='Programming job', uuid=row.uuid)
    s.refresh(row)
    return row


def transition(job_uuid, from_states, to_state, expected_version=None,
               **fields):
    """Move a job from one of ``from_states`` to ``to_state``.

    ``fields`` may set error, hostname, attempts. Raises JobStateConflict
    when the job is in another state and StaleObject when its version is
    not ``expected_version`` (someone changed it since it was read).
    """
    if isinstance(from_states, str):
        from_states = (from_states,)
    from_states = tuple(from_states)
    _check_move(from_states, to_state)
    unknown = sorted(set(fields) - set(TRANSITION_FIELDS))
    if unknown:
        raise exception.Invalid(reason='fields not settable by a transition: '
                                '%s' % ', '.join(unknown))
    with session.writer() as s:
        return _apply(s, _get(s, job_uuid), from_states, to_state, fields,
                      expected_version)


def succeed(job_uuid, function_id, function_name=None):
    """verifying -> succeeded, and record what the region now holds.

    Both in one transaction: a region is never shown with a function that
    no succeeded job loaded, nor a succeeded job with a stale region.
    """
    with session.writer() as s:
        row = _apply(s, _get(s, job_uuid), ('verifying',), 'succeeded', {})
        bitstream = s.get(models.Bitstream, row.bitstream_id)
        dep = s.get(models.Deployable, row.deployable_id)
        dep.bitstream_id = bitstream.uuid
        dep.function_id = function_id
        dep.function_name = function_name or bitstream.function_name
        return row


def cancel(job_uuid, reason='cancelled on request'):
    return transition(job_uuid, CANCELLABLE, 'cancelled', error=reason)


def heartbeat(job_uuid, hostname=None):
    """Mark an active job alive; JobStateConflict if it is no longer active.

    The agent stops when this raises: the job was cancelled or reaped.
    The version bump makes a reaper that read the job before this
    heartbeat fail its conditional update instead of reaping a live job.
    """
    with session.writer() as s:
        row = _get(s, job_uuid)
        query = sa.update(Job).where(Job.id == row.id,
                                     Job.state.in_(ACTIVE))
        if hostname is not None:
            query = query.where(Job.hostname == hostname)
        result = s.execute(
            query.values(heartbeat_at=models.utcnow(),
                         version=Job.version + 1)
            .execution_options(synchronize_session=False))
        if result.rowcount != 1:
            where = ' on host %s' % hostname if hostname else ''
            raise exception.JobStateConflict(
                uuid=job_uuid, state='%s on host %s' % (row.state,
                                                        row.hostname),
                action='a heartbeat', expected=', '.join(ACTIVE) + where)
        s.refresh(row)
        return row


def find_stale(now, heartbeat_timeout, job_timeout=None, hostname=None):
    """Active jobs silent for ``heartbeat_timeout`` seconds, or whose try
    began more than ``job_timeout`` seconds ago."""
    last_seen = sa.func.coalesce(Job.heartbeat_at, Job.updated_at,
                                 Job.created_at)
    stale = last_seen < now - datetime.timedelta(seconds=heartbeat_timeout)
    if job_timeout is not None:
        began = sa.func.coalesce(Job.started_at, Job.created_at)
        stale = sa.or_(stale, began < now - datetime.timedelta(
            seconds=job_timeout))
    query = sa.select(Job).where(Job.state.in_(ACTIVE), stale)
    if hostname is not None:
        query = query.where(Job.hostname == hostname)
    with session.reader() as s:
        return list(s.scalars(query.order_by(Job.id)))


def reap(job_uuid, reason, expected_version=None):
    """End an abandoned try: back to queued while tries remain, else failed.

    Never succeeded: a try whose agent died proved nothing. Pass the
    version seen by ``find_stale`` so a heartbeat that came since wins.
    """
    with session.writer() as s:
        row = _get(s, job_uuid)
        attempts = row.attempts + 1
        if attempts < row.max_attempts:
            error = '%s; retrying (try %d of %d)' % (reason, attempts + 1,
                                                     row.max_attempts)
            to_state = 'queued'
        else:
            error = '%s; no tries left (%d of %d used)' % (
                reason, attempts, row.max_attempts)
            to_state = 'failed'
        return _apply(s, row, ACTIVE, to_state,
                      {'attempts': attempts, 'error': error},
                      expected_version)


def load_region(deployable_uuid):
    """(deployable, device) of a region by the deployable's uuid."""
    with session.reader() as s:
        dep = s.scalars(sa.select(models.Deployable).where(
            models.Deployable.uuid == deployable_uuid)).one_or_none()
        if dep is None:
            raise exception.NotFound(message='Deployable %s could not be '
                                     'found.' % deployable_uuid)
        return dep, s.get(models.Device, dep.device_id)


def load_refs(job_uuid):
    """(job, bitstream, deployable, device) of a job, read together."""
    with session.reader() as s:
        job = _get(s, job_uuid)
        dep = s.get(models.Deployable, job.deployable_id)
        return (job, s.get(models.Bitstream, job.bitstream_id), dep,
                s.get(models.Device, dep.device_id))
