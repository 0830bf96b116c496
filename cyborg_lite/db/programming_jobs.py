"""Programming jobs: every query and transaction of the table.

The conductor creates jobs and moves them through the job state machine
of common/states.py; the API lists and shows them (``page_jobs``,
``get_visible``: with the uuids of their region and bitstream, limited to
what the caller may see).

Every state change is one conditional UPDATE (db/sql/conditional.py:
``WHERE state IN (...) [AND version = v]``): two conductors, or a
conductor and a reaper, racing on one job cannot both win, and the loser
gets a Conflict instead of silently overwriting. "One active job per
region" is the unique column ``active_deployable_id`` (set to the region
while the job is active, cleared when it ends), so the database, not
memory, enforces it. A job's times are the database's clock
(db/sql/clock.py), which the reaper compares them with: the conductors that
stamp a heartbeat and reap a job may run on different hosts.

A try begins when an agent takes the job (its ``downloading`` report,
from ``queued``): ``attempts`` is the number of tries begun, which is the
number of the latest try, and a row of programming_job_tries records each
one (host, start, end, outcome, error). A try ends with the job
(succeeded, failed, cancelled) or is ``abandoned`` by the reaper when its
agent goes silent or restarts; the job is then queued for a next try
while it has fewer than ``max_attempts``. An agent's reports and
heartbeats name their try: one of an earlier try (an agent that was slow,
not dead) is refused, so two tries never run the job at once. A job that
is queued again has the previous try's error in ``error``, labelled with
its number; success clears it (the tries keep it). ``started_at`` is when
the current try began (or the job was queued again).
"""
import datetime

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cyborg_lite.common import exception
from cyborg_lite.common import states
from cyborg_lite.common import uuids
from cyborg_lite.conf import CONF
from cyborg_lite.db import cleaning
from cyborg_lite.db import deployables
from cyborg_lite.db import device_history
from cyborg_lite.db import models
from cyborg_lite.db.sql import clock
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import pagination
from cyborg_lite.db.sql import session
from cyborg_lite.notifications import events as notifications

TRANSITION_FIELDS = ('error', 'hostname')
SORT_KEYS = ('created_at', 'uuid', 'state')
Job = models.ProgrammingJob
Try = models.ProgrammingJobTry
# How a job's end ends its running try.
_TRY_OUTCOME = {'succeeded': 'succeeded', 'failed': 'failed',
                'cancelled': 'cancelled'}


def _check_move(from_states, to_state):
    for state in from_states:
        if not states.JOB.allows(state, to_state):
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


def _check_refs(s, deployable_id, bitstream_id, arq_id):
    for model, value in ((models.Deployable, deployable_id),
                         (models.Bitstream, bitstream_id),
                         (models.AcceleratorRequest, arq_id)):
        if value is not None and s.get(model, value) is None:
            raise exception.Invalid(reason='no %s with id %s'
                                    % (model.__tablename__, value))


def create_job(deployable_id, bitstream_id, hostname=None, max_attempts=None,
               force=False, requester_user_id=None, project_id=None,
               arq_id=None, except_holder=None, namespace=None):
    """Insert a queued job; RegionBusy if the region has an active one.
    ``namespace``: the Kubernetes claim's that the job loads the region
    for (accounted with the project, ``seconds_by_project``).

    A region waiting for or under its clean between tenants is a Conflict;
    unless ``force``, so is an ARQ or a Kubernetes claim holding the
    region, or a sibling behind its PCI function (db/deployables.
    bound_arq_on; other than ``except_holder``), checked under the locks
    of the region and those siblings that binds take too
    (deployables.lock_function), so a bind and a job cannot both slip
    past each other's check.
    """
    row = Job(uuid=uuids.new(), deployable_id=deployable_id,
              bitstream_id=bitstream_id, active_deployable_id=deployable_id,
              state='queued', hostname=hostname, attempts=0,
              max_attempts=max_attempts or CONF.programming.max_attempts,
              force=bool(force), requester_user_id=requester_user_id,
              project_id=project_id, namespace=namespace, arq_id=arq_id,
              # The database's clock, which the reaper compares with.
              created_at=clock.utc_now())
    try:
        with session.writer() as s:
            _check_refs(s, deployable_id, bitstream_id, arq_id)
            deployables.lock_function(s, deployable_id)
            refusal = cleaning.programming_refusal(
                s, deployable_id, deployables.region_label(s, deployable_id))
            if refusal is not None:
                raise exception.Conflict(reason=refusal)
            holder = deployables.bound_arq_on(s, deployable_id,
                                              except_holder)
            if holder is not None and not force:
                raise exception.Conflict(
                    reason='region %s is in use by %s' % (
                        deployables.region_label(s, deployable_id),
                        deployables.holder_label(holder)))
            s.add(row)
            s.flush()
            s.refresh(row)
            _record(s, row, 'programming_job.program.start')
    except sa_exc.IntegrityError:
        # The references were checked in the same transaction, so this is
        # the unique active_deployable_id: another job holds the region.
        _raise_busy(deployable_id)
    return row


def _raise_busy(deployable_id):
    with session.reader() as s:
        active = s.scalars(sa.select(Job.uuid).where(
            Job.active_deployable_id == deployable_id)).first()
        region = deployables.region_label(s, deployable_id)
    # The other job may have ended between our insert and this read.
    raise exception.RegionBusy(region=region,
                               job=active or '(which just ended)')


def _values_for(to_state, fields):
    now = clock.utc_now()
    values = dict(fields, state=to_state, updated_at=now, heartbeat_at=now)
    if to_state in states.JOB_TERMINAL:
        values.update(active_deployable_id=None, finished_at=now)
    if to_state in ('downloading', 'queued'):
        values['started_at'] = now
    return values


def _check_try(row, try_number):
    """A report of try ``try_number`` must be of the try that runs (or, for
    a queued job, of the next one, which it begins); None: an agent that
    does not say (older than RPC 1.3), taken as the running try."""
    if try_number is None:
        return
    expected = row.attempts + (1 if row.state == 'queued' else 0)
    if try_number != expected:
        raise exception.JobStateConflict(
            uuid=row.uuid, state='%s in try %d' % (row.state, row.attempts),
            action='a report of try %d' % try_number,
            expected='a report of try %d' % expected)


def _start_try(s, row):
    s.add(Try(job_id=row.id, number=row.attempts, hostname=row.hostname,
              outcome='running', started_at=clock.utc_now()))


def _end_try(s, row, outcome, error=None):
    """End the running try of ``row``, if one runs (a queued job has
    none)."""
    s.execute(sa.update(Try)
              .where(Try.job_id == row.id, Try.number == row.attempts,
                     Try.outcome == 'running')
              .values(outcome=outcome, error=error,
                      ended_at=clock.utc_now()))


def _begins_try(row, to_state, try_number):
    """An agent takes a queued job: its first report (``downloading``, or
    ``failed`` from a job it could not even start)."""
    return row.state == 'queued' and (
        to_state == 'downloading' or
        (to_state == 'failed' and try_number is not None))


def _apply(s, row, from_states, to_state, fields, expected_version=None,
           try_number=None, try_end=None):
    """The conditional UPDATE, and the try it begins or ends (``try_end``:
    (outcome, error) to end it otherwise than ``to_state`` says); the row
    is refreshed with the result. The job's row is always written before
    its try's, so two writers lock them in one order (no deadlock).

    Without ``expected_version`` the state condition alone decides: a
    heartbeat bumps the version at any time, and it must not make an
    agent's progress report fail as if the job had been taken away.
    """
    if row.state not in from_states:
        raise exception.JobStateConflict(
            uuid=row.uuid, state=row.state, action='moving to ' + to_state,
            expected=', '.join(from_states))
    conditions = [Job.state.in_(from_states), Job.attempts == row.attempts]
    if expected_version is not None:
        conditions.append(Job.version == expected_version)
    begins_try = _begins_try(row, to_state, try_number)
    if begins_try:
        fields = dict(fields, attempts=row.attempts + 1)
    if not conditional.update(s, Job, Job.id == row.id,
                              _values_for(to_state, fields), *conditions):
        if expected_version is None:
            # Another writer moved the job between our read and UPDATE.
            s.refresh(row)
            raise exception.JobStateConflict(
                uuid=row.uuid, state=row.state,
                action='moving to ' + to_state,
                expected=', '.join(from_states))
        raise exception.StaleObject(kind='Programming job', uuid=row.uuid)
    s.refresh(row)
    _record(s, row)
    if begins_try:
        _start_try(s, row)
    if try_end is not None:
        _end_try(s, row, *try_end)
    elif to_state in _TRY_OUTCOME:
        _end_try(s, row, _TRY_OUTCOME[to_state], fields.get('error'))
    return row


# The notification of a job's move to each state.
_EVENTS = {'queued': 'programming_job.update',
           'downloading': 'programming_job.update',
           'programming': 'programming_job.update',
           'verifying': 'programming_job.update',
           'succeeded': 'programming_job.program.end',
           'failed': 'programming_job.program.error',
           'cancelled': 'programming_job.cancel'}


def _record(s, row, event=None):
    """Record the job's move to the state ``row`` (refreshed) is in."""
    event = event or _EVENTS[row.state]
    place = device_history.place_of_region(s, row.deployable_id)
    bitstream = s.scalar(sa.select(models.Bitstream.uuid).where(
        models.Bitstream.id == row.bitstream_id))
    arq_uuid = None if row.arq_id is None else s.scalar(
        sa.select(models.AcceleratorRequest.uuid).where(
            models.AcceleratorRequest.id == row.arq_id))
    device_history.record(s, notifications.Event(event, {
        'uuid': row.uuid, 'state': row.state,
        'device_uuid': place.device_uuid,
        'deployable_uuid': place.deployable_uuid,
        'bitstream_uuid': bitstream, 'hostname': row.hostname,
        'attempts': row.attempts, 'max_attempts': row.max_attempts,
        'arq_uuid': arq_uuid, 'project_id': row.project_id,
        'namespace': row.namespace, 'seconds': seconds_of(row),
        'error': row.error},
        device_uuid=place.device_uuid,
        deployable_uuid=place.deployable_uuid, state=row.state,
        object_uuid=row.uuid, reason=row.error))


def seconds_of(job):
    """The seconds an ended job took, from its creation to its end (what
    its workload waited); None while it is active."""
    if job.state not in states.JOB_TERMINAL or job.finished_at is None:
        return None
    return max(0.0, (job.finished_at - job.created_at).total_seconds())


def transition(job_uuid, from_states, to_state, expected_version=None,
               try_number=None, **fields):
    """Move a job from one of ``from_states`` to ``to_state``.

    ``fields`` may set error, hostname. ``try_number`` is the try an
    agent's report is of (see ``_check_try``). Raises JobStateConflict
    when the job is in another state or try, and StaleObject when its
    version is not ``expected_version`` (someone changed it since it was
    read).
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
        row = _get(s, job_uuid)
        _check_try(row, try_number)
        return _apply(s, row, from_states, to_state, fields,
                      expected_version, try_number)


def succeed(job_uuid, function_id, function_name=None, try_number=None):
    """verifying -> succeeded, and record what the region now holds.

    Both in one transaction: a region is never shown with a function that
    no succeeded job loaded, nor a succeeded job with a stale region. An
    earlier try's error is cleared (its try keeps it).

    The region is locked before the job is written, as create_job locks
    it before inserting: the other order deadlocks with a new job's
    insert waiting on this job's active_deployable_id.
    """
    with session.writer() as s:
        row = _get(s, job_uuid)
        _check_try(row, try_number)
        deployables.lock_region(s, row.deployable_id)
        row = _apply(s, row, ('verifying',), 'succeeded', {'error': None})
        bitstream = s.get(models.Bitstream, row.bitstream_id)
        deployables.record_loaded(s, row.deployable_id, bitstream.uuid,
                                  function_id,
                                  function_name or bitstream.function_name)
        return row


def cancel(job_uuid, reason='cancelled on request'):
    return transition(job_uuid, states.JOB_CANCELLABLE, 'cancelled',
                      error=reason)


def heartbeat(job_uuid, hostname=None, try_number=None):
    """Mark an active job alive; JobStateConflict if it is no longer active
    (on that host, in that try).

    The agent stops when this raises: the job was cancelled or reaped.
    The version bump makes a reaper that read the job before this
    heartbeat fail its conditional update instead of reaping a live job;
    an earlier try's beats cannot keep the current try alive.
    """
    with session.writer() as s:
        row = _get(s, job_uuid)
        conditions = [Job.state.in_(states.JOB_ACTIVE)]
        if hostname is not None:
            conditions.append(Job.hostname == hostname)
        if try_number is not None:
            conditions.append(Job.attempts == try_number)
        if not conditional.update(s, Job, Job.id == row.id,
                                  {'heartbeat_at': clock.utc_now()},
                                  *conditions):
            where = ' on host %s' % hostname if hostname else ''
            if try_number is not None:
                where += ' in try %d' % try_number
            raise exception.JobStateConflict(
                uuid=job_uuid, state='%s on host %s in try %d' % (
                    row.state, row.hostname, row.attempts),
                action='a heartbeat',
                expected=', '.join(states.JOB_ACTIVE) + where)
        s.refresh(row)
        return row


def find_stale(now=None, heartbeat_timeout=None, job_timeout=None,
               hostname=None):
    """Active jobs silent for ``heartbeat_timeout`` seconds, or whose try
    began more than ``job_timeout`` seconds ago, at ``now`` (default: the
    database's clock)."""
    with session.reader() as s:
        now = now or clock.now(s)
        last_seen = sa.func.coalesce(Job.heartbeat_at, Job.updated_at,
                                     Job.created_at)
        stale = last_seen < now - datetime.timedelta(
            seconds=heartbeat_timeout)
        if job_timeout is not None:
            began = sa.func.coalesce(Job.started_at, Job.created_at)
            stale = sa.or_(stale, began < now - datetime.timedelta(
                seconds=job_timeout))
        query = sa.select(Job).where(Job.state.in_(states.JOB_ACTIVE), stale)
        if hostname is not None:
            query = query.where(Job.hostname == hostname)
        return list(s.scalars(query.order_by(Job.id)))


def _reap_queued(s, row, job_timeout, expected_version, now):
    """A queued job nobody took: its cast was lost or its agent is down.
    No try began, so none is counted: queued again (to be sent again), or
    failed once it waited ``job_timeout`` seconds."""
    waited = (now or clock.now(s)) - (row.started_at or row.created_at)
    if job_timeout is not None and waited > datetime.timedelta(
            seconds=job_timeout):
        return _apply(s, row, ('queued',), 'failed', {
            'error': 'no agent on %s took the job within %d s'
                     % (row.hostname, job_timeout)}, expected_version)
    # NOTE: started_at stays: the job_timeout counts from the queueing.
    if not conditional.update(s, Job, Job.id == row.id,
                              {'heartbeat_at': clock.utc_now()},
                              Job.state == 'queued',
                              Job.version == (expected_version or
                                              row.version)):
        raise exception.StaleObject(kind='Programming job', uuid=row.uuid)
    s.refresh(row)
    return row


def _abandon_try(s, row, reason, expected_version):
    """End the running try as abandoned: queued for the next while tries
    remain, else failed. Never succeeded: a try whose agent died proved
    nothing."""
    label = 'try %d abandoned: %s' % (row.attempts, reason)
    if row.attempts < row.max_attempts:
        error = '%s; retrying (try %d of %d)' % (label, row.attempts + 1,
                                                 row.max_attempts)
        to_state = 'queued'
    else:
        error = '%s; no tries left (%d of %d used)' % (
            label, row.attempts, row.max_attempts)
        to_state = 'failed'
    return _apply(s, row, states.JOB_STARTED, to_state, {'error': error},
                  expected_version, try_end=('abandoned', reason))


def reap(job_uuid, reason, expected_version=None, job_timeout=None,
         now=None):
    """Deal with a job whose agent went silent (or restarted).

    A started job's try is abandoned (see ``_abandon_try``); a queued one
    stays queued, to be sent again, until ``job_timeout`` seconds after
    it was queued, at ``now`` (the database's clock by default; see
    ``_reap_queued``). Returns the job; the caller sends a queued one
    again. Pass the version seen by ``find_stale`` so a heartbeat that
    came since wins.
    """
    with session.writer() as s:
        row = _get(s, job_uuid)
        if row.state == 'queued':
            return _reap_queued(s, row, job_timeout, expected_version, now)
        return _abandon_try(s, row, reason, expected_version)


def tries_of(job_ids):
    """{job id: [ProgrammingJobTry, ...] by number} of those jobs."""
    found = {job_id: [] for job_id in job_ids}
    if not found:
        return found
    with session.reader() as s:
        for row in s.scalars(sa.select(Try).where(Try.job_id.in_(job_ids))
                             .order_by(Try.job_id, Try.number)):
            found[row.job_id].append(row)
    return found


def load_refs(job_uuid):
    """(job, bitstream, deployable, device) of a job, read together."""
    with session.reader() as s:
        job = _get(s, job_uuid)
        dep = s.get(models.Deployable, job.deployable_id)
        return (job, s.get(models.Bitstream, job.bitstream_id), dep,
                s.get(models.Device, dep.device_id))


# --- The API's reads (/v2/programs) -----------------------------------------

def _select_visible(viewer):
    stmt = (sa.select(Job, models.Deployable.uuid, models.Bitstream.uuid)
            .join(models.Deployable, Job.deployable_id == models.Deployable.id)
            .join(models.Bitstream, Job.bitstream_id == models.Bitstream.id))
    if viewer is pagination.ALL:
        return stmt
    # NOTE: a caller without a project sees nothing rather than every job
    # whose project is NULL (those the conductor started on its own).
    if viewer is None:
        return stmt.where(sa.false())
    return stmt.where(Job.project_id == viewer)


def _filtered(stmt, deployable_uuid=None, bitstream_uuid=None, state=None,
              hostname=None):
    for column, value in ((models.Deployable.uuid, deployable_uuid),
                          (models.Bitstream.uuid, bitstream_uuid),
                          (Job.state, state), (Job.hostname, hostname)):
        if value is not None:
            stmt = stmt.where(column == value)
    return stmt


def _with_tries(rows):
    tries = tries_of([row[0].id for row in rows])
    return [tuple(row) + (tries[row[0].id],) for row in rows]


def page_jobs(viewer, filters=None, **page):
    """[(job, deployable uuid, bitstream uuid, [tries]), ...] of one page
    of what ``viewer`` (pagination.ALL, a project id, or None) may see."""
    stmt = _filtered(_select_visible(viewer), **(filters or {}))
    with session.reader() as s:
        rows = pagination.paginate(s, stmt, Job, **page)
    return _with_tries(rows)


def get_visible(viewer, job_uuid):
    """(job, deployable uuid, bitstream uuid, [tries]);
    ProgrammingJobNotFound when it does not exist or belongs to a project
    the viewer is not in."""
    with session.reader() as s:
        row = s.execute(_select_visible(viewer)
                        .where(Job.uuid == job_uuid)).first()
    if row is None:
        raise exception.ProgrammingJobNotFound(uuid=job_uuid)
    return _with_tries([row])[0]


# --- Accounting (/v2/programs/stats) ----------------------------------------

def seconds_by_project(viewer, project_id=None):
    """[{project_id, namespace, jobs, seconds}] of the ended jobs that
    ``viewer`` (pagination.ALL, a project id, or None) may see, summed by
    project and namespace (``seconds_of`` each), in that order;
    ``project_id``: only that project's. Summed here, not in SQL: a
    difference of timestamps is spelled three ways by three databases."""
    stmt = sa.select(Job.project_id, Job.namespace, Job.state,
                     Job.created_at, Job.finished_at).where(
        Job.state.in_(states.JOB_TERMINAL))
    if viewer is not pagination.ALL:
        stmt = stmt.where(Job.project_id == viewer if viewer is not None
                          else sa.false())
    if project_id is not None:
        stmt = stmt.where(Job.project_id == project_id)
    sums = {}
    with session.reader() as s:
        for row in s.execute(stmt):
            key = (row.project_id, row.namespace)
            jobs, seconds = sums.get(key, (0, 0.0))
            sums[key] = (jobs + 1, seconds + (seconds_of(row) or 0.0))
    return [{'project_id': project, 'namespace': namespace, 'jobs': jobs,
             'seconds': seconds}
            for (project, namespace), (jobs, seconds) in sorted(
                sums.items(), key=lambda item: (item[0][0] or '',
                                                item[0][1] or ''))]


def fill_history_seconds(max_count):
    """Online data migration (db/online_migrations.py): the history rows
    of jobs that ended before revision 0016 (their end events) get the
    job's ``seconds_of``, from the job's row; a row whose job was deleted
    keeps NULL (unknown) and is not counted. (found, done): the rows
    still to fill before this call, those filled by it (at most
    ``max_count``)."""
    history = models.DeviceHistory
    todo = sa.select(history.id, Job).join(
        Job, Job.uuid == history.object_uuid).where(
        history.event.in_({_EVENTS[state]
                           for state in states.JOB_TERMINAL}),
        history.seconds.is_(None), Job.state.in_(states.JOB_TERMINAL),
        Job.finished_at.is_not(None))
    with session.writer() as s:
        found = s.scalar(sa.select(sa.func.count()).select_from(
            todo.subquery()))
        done = 0
        for row_id, job in s.execute(todo.order_by(history.id)
                                     .limit(max_count)).all():
            device_history.set_seconds(s, row_id, seconds_of(job))
            done += 1
    return found, done
