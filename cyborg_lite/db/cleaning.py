"""Secure cleanup between tenants: every query and transaction of the
deployables' ``device_state`` columns (the machine is common/states.DEVICE).

Who moves a region, and with what:

- a bind, under the region lock (db/arq_binds.finish_bind): ``mark_allocated``,
  once the one availability predicate
  (inventory/views.unavailable_reasons, whose reasons include the
  cleaning states) found the region bindable;
- a release, in the transaction that frees the attach handle (db/arqs:
  unbind, BindFailed after Bound, delete; db/k8s_claims): ``release`` ->
  pending_cleaning, the region and every idle region behind the
  handle's function (whoever had a card's PF could reach them all);
- a programming job's creation, under the region lock
  (db/programming_jobs.create_job): ``programming_refusal``;
- the conductor's flow (conductor/cleaning.py): ``ready``, ``begin`` (a new
  try, -> cleaning), ``skip`` (no driver cleans it, -> available),
  ``beat``, ``finish`` (-> available | error) and ``abandon`` (a silent
  agent's try, -> pending_cleaning, or error once no tries are left);
- an operator: ``reclean`` (available | error -> pending_cleaning).

A region kept while its host's report no longer lists it (db/inventory.py
notes it with the attribute UNREPORTED: its function is out of the host
driver's view, e.g. a VF still bound to vfio-pci after its guest) is held
by whoever has that function: it waits, pending_cleaning, and no try is
begun (``ready``, ``begin``); its history and ``cleaning_error`` say why
(``note_wait``). A report that lists it again drops the attribute and
the conductor starts its clean. A try that failed while the region was
out of view goes back to waiting, not to error (``finish``).

Each move is one conditional UPDATE (db/sql/conditional.py) on the state it
was decided on and, for a try, on its ``cleaning_uuid``: of two
conductors, or of an agent's late report and a reaper, exactly one wins,
and a report of an older try never makes a region available. A move that
offers a hidden region again requests a publish of its host in the same
transaction (db/publish_requests.py). Times are
the database's clock (db/sql/clock.py). ``version`` is left alone (see
models.Deployable): the states themselves are the guard.
"""
import collections
import datetime
import logging

import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.common import states
from cyborg_lite.common import uuids
from cyborg_lite.db import deployables
from cyborg_lite.db import device_history
from cyborg_lite.db import models
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import clock
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import session
from cyborg_lite.notifications import events as notifications

LOG = logging.getLogger(__name__)

DEP = models.Deployable
DEVICE = models.Device
HANDLE = models.AttachHandle
JOB = models.ProgrammingJob
ATTR = models.Attribute

# The attribute db/inventory.py writes on a kept region its host's report
# no longer lists (value: since when, by the database's clock); reported
# again, the report drops it. An attribute rather than a column: a
# conductor of the previous release drops it too (it deletes whatever
# attribute a report leaves out), so none is ever left behind.
UNREPORTED = 'unreported_since'
WAIT_REASON = ("its function is out of its host driver's view (bound to "
               "another driver, e.g. vfio-pci after a guest); wiped once "
               "the host reports it again")

# A region as the cleaning flow needs it: the deployable, its device's
# host, identity and driver, and its cleaning columns.
Region = collections.namedtuple('Region', [
    'id', 'uuid', 'name', 'hostname', 'identity', 'driver_name',
    'device_state', 'cleaning_uuid', 'cleaning_attempts', 'cleaning_error',
    'device_uuid', 'cleaning_started_at'])
_REGION_COLUMNS = (DEP.id, DEP.uuid, DEP.name, DEVICE.hostname,
                   DEVICE.identity, DEVICE.driver_name, DEP.device_state,
                   DEP.cleaning_uuid, DEP.cleaning_attempts,
                   DEP.cleaning_error, DEVICE.uuid, DEP.cleaning_started_at)


def _select_regions():
    return (sa.select(*_REGION_COLUMNS)
            .join(DEVICE, DEVICE.id == DEP.device_id))


# The hot paths' statements are built once (a release, a clean's start):
# building these joins and EXISTS per call cost more than running them.
_REGION_BY = {column: _select_regions().where(
    getattr(DEP, column) == sa.bindparam('value'))
    for column in ('id', 'uuid')}


def _region(s, **where):
    """The Region whose ``id`` or ``uuid`` is given; None if none."""
    (column, value), = where.items()
    row = s.execute(_REGION_BY[column], {'value': value}).first()
    return Region(*row) if row is not None else None


# A clean from scratch: no try, none abandoned, no error. (The try's
# start is set only while an agent runs it.)
_NEW_CLEAN = {'cleaning_uuid': None, 'cleaning_started_at': None,
              'cleaning_attempts': 0, 'cleaning_error': None}


def _move(s, deployable_id, from_states, to_state, *conditions, **values):
    """The conditional UPDATE of one region's state; True if it won.
    (The hot paths build theirs once: ``_move_statement``.)"""
    return _run_move(s, _move_statement(from_states, to_state, *conditions,
                                        **values), deployable_id)


def _offers_again(from_states, to_state):
    """Whether a move from one of ``from_states`` to ``to_state`` may offer
    a hidden region again: then its host's publish is requested with the
    move. (A move that hides one needs no request: the regions waiting
    for a clean are published by every ``start`` of the cleaning flow,
    which its periodic task runs.)"""
    return to_state in states.DEVICE_SCHEDULABLE and any(
        state not in states.DEVICE_SCHEDULABLE for state in from_states)


def _unreported(deployable_id=DEP.id):
    """SQL: the region's host no longer reports it (UNREPORTED)."""
    return (sa.select(ATTR.id)
            .where(ATTR.deployable_id == deployable_id,
                   ATTR.key == UNREPORTED)
            .exists())


def _holder_exists():
    """SQL: a handle of the region is in use, a job is active on it, or
    its function is out of its host driver's view (another driver has
    it: never wiped under its holder, at most one holder)."""
    handle = (sa.select(HANDLE.id)
              .where(HANDLE.deployable_id == DEP.id, HANDLE.in_use.is_(True))
              .exists())
    job = sa.select(JOB.id).where(JOB.active_deployable_id == DEP.id).exists()
    return sa.or_(handle, job, _unreported())


# The notification of a region's move to each state, by what moved it.
_EVENTS = {'cleaning': 'deployable.clean.start',
           'available': 'deployable.clean.end',
           'error': 'deployable.clean.error'}


def _record(s, deployable_id, event=None, reason=None):
    """Record the move the region just made, read back as it is now."""
    region = _region(s, id=deployable_id)
    event = event or _EVENTS[region.device_state]
    device_history.record(s, notifications.Event(
        event, {'deployable_uuid': region.uuid,
                'device_uuid': region.device_uuid,
                'hostname': region.hostname,
                'device_state': region.device_state,
                'cleaning_uuid': region.cleaning_uuid,
                'attempts': region.cleaning_attempts,
                'error': region.cleaning_error},
        device_uuid=region.device_uuid, deployable_uuid=region.uuid,
        state=region.device_state, object_uuid=region.cleaning_uuid,
        reason=reason or region.cleaning_error))
    return region


# --- binds, releases, programming jobs (their transactions) -----------------

def note_wait(s, deployable_id):
    """The pending_cleaning region's function is out of its host
    driver's view: say why it waits (``cleaning_error``, its history).
    Called with the move or note that made it wait."""
    conditional.update(s, DEP, DEP.id == deployable_id,
                       {'cleaning_error': WAIT_REASON},
                       DEP.device_state == 'pending_cleaning',
                       bump_version=False)
    LOG.info('Deployable id=%s waits for its clean: %s', deployable_id,
             WAIT_REASON)
    _record(s, deployable_id, 'deployable.clean.wait', reason=WAIT_REASON)


_WAITS = sa.select(_unreported(sa.bindparam('deployable_id')))


def _waits(s, deployable_id):
    """Whether the region now pending_cleaning is out of view."""
    return s.scalar(_WAITS, {'deployable_id': deployable_id})


_Move = collections.namedtuple('_Move', ['statement', 'from_states',
                                         'to_state'])


def _move_statement(from_states, to_state, *conditions, **values):
    """A region's move as a statement (the hot paths' built once at
    import), run by ``_run_move``: its parameters are ``deployable_id``
    and those of the ``sa.bindparam`` values."""
    for state in from_states:
        if not states.DEVICE.allows(state, to_state):
            raise exception.Invalid(reason='a deployable cannot go from %s '
                                    'to %s' % (state, to_state))
    values = dict(values, device_state=to_state,
                  device_state_at=clock.utc_now())
    return _Move(conditional.statement(
        DEP, DEP.id == sa.bindparam('deployable_id'), values,
        DEP.device_state.in_(from_states), *conditions, bump_version=False),
        tuple(from_states), to_state)


def _run_move(s, move, deployable_id, **params):
    """Run a ``_move_statement``; True if it won. A move that may offer
    a hidden region again requests its host's publish with it."""
    moved = bool(conditional.run(s, move.statement, dict(
        params, deployable_id=deployable_id)))
    if moved and _offers_again(move.from_states, move.to_state):
        publish_requests.add_for_deployable(s, deployable_id,
                                            'region now %s' % move.to_state)
    return moved


_ALLOCATE = _move_statement(('available',), 'allocated')
_RELEASE = _move_statement(states.DEVICE_RELEASABLE, 'pending_cleaning',
                           **_NEW_CLEAN)
_BEGIN = _move_statement(('pending_cleaning',), 'cleaning',
                         ~_holder_exists(),
                         cleaning_uuid=sa.bindparam('try_uuid'),
                         cleaning_started_at=None)
_REGION_OF_HANDLE = sa.select(HANDLE.deployable_id).where(
    HANDLE.id == sa.bindparam('handle_id'))


# Only a deployable whose bind makes the instance (each VF's removal is
# its wipe), and none of whose handles is in use.
_IDLE = _move_statement(
    ('allocated',), 'available', deployables.makes_instance(DEP.id),
    ~sa.select(HANDLE.id).where(HANDLE.deployable_id == DEP.id,
                                HANDLE.in_use.is_(True)).exists())


def idle(s, deployable_id):
    """A deployable whose instances are removed one by one (a vGPU type,
    db/instance_removals.py) had its last one removed: allocated ->
    available, if no handle of it is in use; True if it moved."""
    return _run_move(s, _IDLE, deployable_id)


def mark_allocated(s, deployable_id, current_state=None):
    """A handle of the region was claimed: available -> allocated.

    ``current_state``: the region's state as the caller read it under the
    region's lock (no other writer can have moved it since), when it did;
    only 'available' then needs the UPDATE."""
    if current_state in (None, 'available'):
        _run_move(s, _ALLOCATE, deployable_id)


def release(s, handle_id):
    """A handle of a region was freed: the region must be wiped before the
    next tenant, and so must every idle region behind the handle's
    function, or held by the whole card released (``_wipe_with``). The
    region's hostname while any of them waits for its clean (to dispatch
    it), else None."""
    deployable_id = s.scalar(_REGION_OF_HANDLE, {'handle_id': handle_id})
    if deployable_id is None:
        return None
    moved, with_it = False, False
    # NOTE: in id order, as every writer of several regions locks them.
    # A whole card's holder had every region of it (its PF): each is
    # wiped as one behind a shared function is.
    for region_id in sorted({deployable_id, *deployables.behind_function(
            s, handle_id), *deployables.regions_of_whole_card(
            s, deployable_id)}):
        if region_id == deployable_id:
            moved = _run_move(s, _RELEASE, region_id)
        else:
            with_it |= _wipe_with(s, region_id, deployable_id)
    region = _region(s, id=deployable_id)
    if moved or with_it:
        # Capacity taken away: the schedulers must see it before the
        # release's caller answers (it publishes this request at once).
        publish_requests.add(s, region.hostname,
                             'released: waits for its wipe')
    if moved:
        LOG.info('Deployable id=%s released: pending_cleaning',
                 deployable_id)
        if _waits(s, deployable_id):
            note_wait(s, deployable_id)
    if region.device_state != 'pending_cleaning' and not with_it:
        return None
    return region.hostname


def _wipe_with(s, region_id, released_id):
    """A region behind the function of a released one's handle (a card
    without SR-IOV: its PF reaches every region, common/
    shared_functions.py): whoever had the function could write it too,
    so an idle one (available) waits for its own wipe as well; True if
    it moved. The released region's siblings are then offered again
    only once every one of them is wiped (inventory/views's
    shared_function_unclean keeps each back while another is not)."""
    if not _move(s, region_id, ('available',), 'pending_cleaning',
                 **_NEW_CLEAN):
        return False
    released = _region(s, id=released_id)
    LOG.info('Deployable id=%s behind the function released with %s: '
             'pending_cleaning', region_id, released.name)
    _record(s, region_id, 'deployable.clean.shared',
            reason='its PCI function was handed over with region %s'
            % released.name)
    if _waits(s, region_id):
        note_wait(s, region_id)
    return True


def programming_refusal(s, deployable_id, label):
    """Why no programming job may start on the region now, or None: a
    clean is due or running (they exclude each other)."""
    state = s.scalar(sa.select(DEP.device_state)
                     .where(DEP.id == deployable_id))
    if state not in ('pending_cleaning', 'cleaning'):
        return None
    return ('region %s is %s (%s); program it once it is available'
            % (label, state, states.DEVICE_UNSCHEDULABLE_WHY[state]))


# --- the conductor's flow ---------------------------------------------------

def any_under_way():
    """Whether any region is pending_cleaning or cleaning: the cleaning
    reaper looks at those only, and an idle cloud has none (one read per
    tick instead of a writer transaction and a read)."""
    with session.reader() as s:
        return s.scalar(sa.select(DEP.id).where(DEP.device_state.in_(
            ('pending_cleaning', 'cleaning'))).limit(1)) is not None


def ready(hostnames=None):
    """[Region] pending_cleaning that nothing holds any more (no handle in
    use, no active job), of these hosts (None: of every host)."""
    params = {} if hostnames is None else {'hostnames': list(hostnames)}
    with session.reader() as s:
        return [Region(*row) for row in s.execute(
            _READY if hostnames is None else _READY_ON_HOSTS, params)]


_READY = (_select_regions()
          .where(DEP.device_state == 'pending_cleaning', ~_holder_exists())
          .order_by(DEP.id))
_READY_ON_HOSTS = _READY.where(
    DEVICE.hostname.in_(sa.bindparam('hostnames', expanding=True)))


def begin(deployable_id):
    """pending_cleaning -> cleaning, a new try; the Region with its try's
    cleaning_uuid, or None when another conductor began it first or a
    holder came back."""
    try_uuid = uuids.new()
    with session.writer() as s:
        deployables.lock_region(s, deployable_id)
        if not _run_move(s, _BEGIN, deployable_id, try_uuid=try_uuid):
            return None
        return _record(s, deployable_id)


def skip(deployable_id):
    """pending_cleaning -> available: no driver can clean the region, so
    there is nothing to run. True if this call moved it."""
    with session.writer() as s:
        moved = _move(s, deployable_id, ('pending_cleaning',), 'available',
                      **_NEW_CLEAN)
        if moved:
            _record(s, deployable_id, reason='its driver cleans nothing')
        return moved


def _not_current(s, deployable_uuid, try_uuid, action):
    region = _region(s, uuid=deployable_uuid)
    if region is None:
        return exception.DeployableNotFound(uuid=deployable_uuid)
    return exception.CleaningConflict(
        uuid=deployable_uuid, try_uuid=try_uuid, action=action,
        state='%s (try %s)' % (region.device_state, region.cleaning_uuid))


def beat(deployable_uuid, try_uuid):
    """The agent still cleans: stamp the try alive. CleaningConflict when
    it is no longer the region's current try (reaped, or done)."""
    now = clock.utc_now()
    with session.writer() as s:
        if not conditional.update(
                s, DEP, DEP.uuid == deployable_uuid,
                {'device_state_at': now,
                 # The first beat: the try reached a live agent.
                 'cleaning_started_at': sa.func.coalesce(
                     DEP.cleaning_started_at, now)},
                DEP.device_state == 'cleaning',
                DEP.cleaning_uuid == try_uuid, bump_version=False):
            raise _not_current(s, deployable_uuid, try_uuid, 'a heartbeat')


def finish(deployable_uuid, try_uuid, error=None):
    """The try ended: cleaning -> available, or error with ``error``
    (pending_cleaning, waiting, when the region is out of its host
    driver's view: ``_wait_again``).

    Returns the Region after the move, with the try's
    ``cleaning_started_at`` (its first heartbeat, None without one). The
    same report twice is harmless (an RPC retry); a report of any other
    try is a CleaningConflict and changes nothing.
    """
    target = 'available' if error is None else 'error'
    with session.writer() as s:
        region = _region(s, uuid=deployable_uuid)
        if region is None:
            raise exception.DeployableNotFound(uuid=deployable_uuid)
        if region.device_state == target and \
                region.cleaning_uuid == try_uuid:
            return region
        if error is not None and _waits(s, region.id):
            return _wait_again(s, region, try_uuid)
        # NOTE: cleaning_attempts stays: how many tries this clean took.
        if not _move(s, region.id, ('cleaning',), target,
                     DEP.cleaning_uuid == try_uuid, cleaning_error=error,
                     cleaning_started_at=None):
            raise _not_current(s, deployable_uuid, try_uuid,
                               'ending it as %s' % target)
        return _record(s, region.id)._replace(
            cleaning_started_at=region.cleaning_started_at)


def _wait_again(s, region, try_uuid):
    """A try failed while the region is out of its host driver's view
    (its agent found it gone, and said so in a report first): nothing
    was wiped and nothing is broken; it waits again, the try not
    counted."""
    if not _move(s, region.id, ('cleaning',), 'pending_cleaning',
                 DEP.cleaning_uuid == try_uuid, cleaning_uuid=None,
                 cleaning_started_at=None):
        raise _not_current(s, region.uuid, try_uuid,
                           'ending it as pending_cleaning')
    note_wait(s, region.id)
    return _region(s, id=region.id)


def _silent_tries(s, hostname, silent_for):
    query = (sa.select(DEP.id, DEP.uuid, DEP.cleaning_uuid,
                       DEP.cleaning_attempts, DEP.cleaning_started_at,
                       DEVICE.hostname)
             .join(DEVICE, DEVICE.id == DEP.device_id)
             .where(DEP.device_state == 'cleaning')
             .order_by(DEP.id))
    if hostname is not None:
        query = query.where(DEVICE.hostname == hostname)
    if silent_for is not None:
        cutoff = clock.now(s) - datetime.timedelta(seconds=silent_for)
        query = query.where(sa.func.coalesce(DEP.device_state_at,
                                             DEP.updated_at,
                                             DEP.created_at) < cutoff)
    if conditional.skip_locked(s):
        # NOTE: two conductors' reapers split the work instead of waiting.
        query = query.with_for_update(skip_locked=True, of=DEP)
    return s.execute(query).all()


def abandon(reason, max_attempts, hostname=None, silent_for=None):
    """End the tries whose agent died: cleaning -> pending_cleaning (to be
    cleaned again), or error once ``max_attempts`` tries were abandoned.

    ``hostname``: every try on that host (its agent restarted);
    ``silent_for``: tries without a heartbeat for that many seconds. A try
    that never reached a live agent (no heartbeat: the agent was down, or
    the conductor died before sending it) is sent again without counting.
    Returns [(deployable uuid, hostname, new state)] of those this call
    moved.
    """
    moved = []
    with session.writer() as s:
        for dep_id, dep_uuid, try_uuid, attempts, started, host in \
                _silent_tries(s, hostname, silent_for):
            target, values = 'pending_cleaning', {}
            if started is not None:
                attempts += 1
                if attempts >= max_attempts:
                    target = 'error'
                    values['cleaning_error'] = (
                        '%s; no tries left (%d of %d used)'
                        % (reason, attempts, max_attempts))
                else:
                    values['cleaning_error'] = (
                        '%s; cleaning again (try %d of %d)'
                        % (reason, attempts + 1, max_attempts))
            if _move(s, dep_id, ('cleaning',), target,
                     DEP.cleaning_uuid == try_uuid, cleaning_uuid=None,
                     cleaning_started_at=None, cleaning_attempts=attempts,
                     **values):
                moved.append((dep_uuid, host, target))
                _record(s, dep_id, 'deployable.clean.retry'
                        if target == 'pending_cleaning' else None,
                        reason=values.get('cleaning_error') or reason)
    return moved


# --- operators --------------------------------------------------------------

def reclean(deployable_uuid):
    """An operator asks for a clean (a retry after an error, or of an idle
    region): -> pending_cleaning. Returns the Region; Conflict with the
    reason from any other state."""
    with session.writer() as s:
        region = _region(s, uuid=deployable_uuid)
        if region is None:
            raise exception.DeployableNotFound(uuid=deployable_uuid)
        if not _move(s, region.id, states.DEVICE_RECLEANABLE,
                     'pending_cleaning', **_NEW_CLEAN):
            why = ('it is in use by a bound accelerator request'
                   if region.device_state == 'allocated' else
                   'a clean is already due or running')
            raise exception.Conflict(
                reason='deployable %s is %s: %s; a clean can be asked for '
                       'from %s only' % (deployable_uuid,
                                         region.device_state, why,
                                         ' or '.join(
                                             states.DEVICE_RECLEANABLE)))
        # An idle region taken away until wiped: published before the
        # request answers.
        publish_requests.add(s, region.hostname, 'a clean asked for')
        asked = _record(s, region.id, 'deployable.clean.request',
                        reason='asked for by an operator')
        if _waits(s, region.id):
            note_wait(s, region.id)
            return _region(s, id=region.id)
        return asked
