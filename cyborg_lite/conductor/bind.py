"""The ARQ bind state machine, run by any conductor.

Initial --bind--> BindStarted --> Bound | BindFailed;  unbind --> Unbound.

No conductor owns an ARQ: correctness comes from the database. Each
transition is a conditional UPDATE on the (state, version) it was decided
on; the attach handle is claimed and written on the ARQ in the transaction
that makes it Bound, and the UNIQUE attach_handle_id column refuses a
handle on two ARQs whatever else goes wrong. A conductor that dies after
BindStarted leaves the ARQ to ``reap_stale_binds``; one that dies inside a
transaction leaves nothing, the database rolls it back.
"""
import collections
import datetime
import logging

from sqlalchemy import exc as sa_exc

from cyborg_lite.common import context as cl_context
from cyborg_lite.common import exception
from cyborg_lite.conductor import notifier as notifier_mod
from cyborg_lite.conf import CONF
from cyborg_lite.db import arq_binding as db
from cyborg_lite.db import models
from cyborg_lite.db import session

LOG = logging.getLogger(__name__)

ARQ_STATES_TRANSFORM_MATRIX = db.ARQ_STATES_TRANSFORM_MATRIX

# What a bind decided on when it moved the ARQ to BindStarted.
Started = collections.namedtuple('Started', [
    'uuid', 'version', 'instance_uuid', 'hostname', 'device_rp_uuid',
    'device_profile_id', 'group_id'])
# The region a bind aims at and the profile group it must satisfy.
Target = collections.namedtuple('Target', [
    'deployable_id', 'deployable_uuid', 'bitstream_id', 'function_id',
    'group'])

_program_before_bind = None


def set_program_before_bind(program):
    """Plug in the programmer: ``program(ctxt, arq_uuid=, deployable_uuid=,
    bitstream_id= | function_id=)`` loads the region and returns when done,
    or raises. None removes it: a bind that needs programming then fails
    with a clear reason."""
    global _program_before_bind
    _program_before_bind = program


def transition(arq_uuid, target, expected_version=None, **values):
    """Move one ARQ to ``target`` if the matrix allows; return its version.

    ``expected_version`` also requires that nobody changed the ARQ since.
    Leaving Bound frees the attach handle in the same transaction.
    """
    with session.writer() as s:
        return db.transition(s, arq_uuid, target, expected_version, **values)


def bind_arqs(ctxt, bindings, notifier=None, program_before_bind=None):
    """Bind each ARQ as asked; returns {arq_uuid: state it ended in}.

    bindings: {arq_uuid: {'hostname', 'device_rp_uuid', 'instance_uuid',
    'project_id' (optional)}}. An ARQ that cannot start binding (unknown,
    wrong state, incomplete binding) is logged and left as it is (None
    for an unknown one). Bound and BindFailed ones are notified together.
    """
    program = program_before_bind or _program_before_bind
    started, results = _start_binds(bindings)
    events = []
    for item in started:
        state = _bind_started(ctxt, item, program)
        results[item.uuid] = state
        if state in ('Bound', 'BindFailed'):
            events.append(notifier_mod.make_event(
                item.uuid, item.instance_uuid, state == 'Bound'))
    notifier_mod.notify_safely(ctxt, events, notifier)
    return results


def _start_binds(bindings):
    """Move every ARQ of the request to BindStarted in one transaction.

    Recording them all before binding any means a conductor killed half
    way leaves each ARQ either untouched or BindStarted, which the reaper
    ends; none is left Initial by a request that was half done.
    """
    started, refused = [], {}
    with session.writer() as s:
        for arq_uuid, binding in bindings.items():
            try:
                started.append(_start_bind(s, arq_uuid, binding))
            except exception.CyborgLiteException as exc:
                LOG.warning('Not binding ARQ %s: %s', arq_uuid, exc)
                arq = db.get_arq(s, arq_uuid)
                refused[arq_uuid] = arq.state if arq is not None else None
    return started, refused


def _start_bind(s, arq_uuid, binding):
    arq = db.get_arq(s, arq_uuid)
    values = db.binding_values(arq_uuid, binding)
    if arq is not None and db.already_started(arq, values):
        version = arq.version   # the API recorded it before casting
    else:
        version = db.start_bind(s, arq_uuid, binding)
    return Started(arq_uuid, version, values['instance_uuid'],
                   values['hostname'], values['device_rp_uuid'],
                   arq.device_profile_id, arq.device_profile_group_id)


def _bind_started(ctxt, started, program):
    """BindStarted -> Bound or BindFailed; returns the state reached."""
    try:
        target = _ensure_programmed(ctxt, started, _resolve(started),
                                    program)
        return _finish_bind(started, target)
    except exception.ArqBindFailed as exc:
        return _fail_bind(started, exc.kwargs['reason'])
    except exception.ARQStateConflict as exc:
        # NOTE: an unbind or the reaper moved it first; theirs stands.
        LOG.info('Bind of ARQ %s superseded: %s', started.uuid, exc)
        return _current_state(started.uuid)
    except Exception as exc:
        LOG.exception('Bind of ARQ %s failed unexpectedly', started.uuid)
        return _fail_bind(started, 'internal error: %s' % exc)


def _failed(started, reason):
    return exception.ArqBindFailed(uuid=started.uuid, reason=reason)


def _resolve(started):
    rp = started.device_rp_uuid
    with session.reader() as s:
        found = db.find_deployable_by_rp(s, rp)
        if found is None:
            raise _failed(started, 'no deployable has resource provider %s'
                          % rp)
        deployable, device = found
        if device.hostname != started.hostname:
            raise _failed(started, 'resource provider %s is on host %s, not '
                          'on %s' % (rp, device.hostname, started.hostname))
        group = db.get_profile_group(s, started.device_profile_id,
                                     started.group_id)
        if group is None:
            raise _failed(started, 'device profile group %s does not exist'
                          % started.group_id)
        return Target(deployable.id, deployable.uuid, deployable.bitstream_id,
                      deployable.function_id, group)


def programming_needed(group, bitstream_id, function_id):
    """{'bitstream_id'|'function_id': wanted} the region lacks, or None."""
    wanted_bs = (group.get('accel:bitstream_id') or '').strip()
    wanted_fn = (group.get('accel:function_id') or '').strip()
    if wanted_bs and wanted_fn:
        raise exception.Invalid(reason='accel:bitstream_id and '
                                'accel:function_id are mutually exclusive')
    if wanted_bs and not _same_id(wanted_bs, bitstream_id):
        return {'bitstream_id': wanted_bs}
    if wanted_fn and not _same_id(wanted_fn, function_id):
        return {'function_id': wanted_fn}
    return None


def _same_id(wanted, loaded):
    # NOTE: AFU / function ids come upper or lower case, with or without
    # dashes, depending on the tool that printed them.
    def norm(value):
        return (value or '').replace('-', '').lower()
    return bool(loaded) and norm(wanted) == norm(loaded)


def _ensure_programmed(ctxt, started, target, program):
    try:
        need = programming_needed(target.group, target.bitstream_id,
                                  target.function_id)
    except exception.Invalid as exc:
        raise _failed(started, exc.kwargs['reason'])
    if need is None:
        return target
    what = ', '.join('%s %s' % item for item in need.items())
    if program is None:
        raise _failed(started, 'region %s must be programmed with %s first '
                      'and no programmer is configured'
                      % (target.deployable_uuid, what))
    try:
        program(ctxt, arq_uuid=started.uuid,
                deployable_uuid=target.deployable_uuid, **need)
    except Exception as exc:
        raise _failed(started, 'programming region %s with %s failed: %s'
                      % (target.deployable_uuid, what, exc))
    # NOTE: trust what the database says is loaded now, not the hook.
    target = _resolve(started)
    if programming_needed(target.group, target.bitstream_id,
                          target.function_id) is not None:
        raise _failed(started, 'region %s still lacks %s after programming'
                      % (target.deployable_uuid, what))
    return target


def _finish_bind(started, target):
    """Claim a handle and make the ARQ Bound, in one transaction."""
    try:
        with session.writer() as s:
            arq = db.get_arq(s, started.uuid)
            # Locks the ARQ before the handle: the order every writer keeps.
            if arq is None or not db.lock_arq(s, arq.id, 'BindStarted',
                                              started.version):
                raise db.state_conflict(started.uuid, 'no longer BindStarted',
                                        'Bound')
            job = db.lock_region_for_bind(s, target.deployable_id, arq.id)
            if job is not None:
                raise _failed(started, 'region %s is being programmed by job '
                              '%s' % (target.deployable_uuid, job))
            handle = db.claim_free_handle(s, target.deployable_id)
            if handle is None:
                raise _failed(started, 'no free attach handle on deployable '
                              '%s' % target.deployable_uuid)
            db.transition(s, started.uuid, 'Bound', started.version,
                        attach_handle_id=handle.id,
                        deployable_id=target.deployable_id, error=None)
    except sa_exc.IntegrityError:
        # NOTE: the UNIQUE attach_handle_id caught a double use that the
        # claim should have prevented; the rollback undid the claim.
        LOG.error('Attach handle of deployable %s refused for ARQ %s',
                  target.deployable_uuid, started.uuid)
        raise _failed(started, 'the attach handle was taken by another ARQ')
    LOG.info('ARQ %s bound to deployable %s', started.uuid,
             target.deployable_uuid)
    return 'Bound'


def _fail_bind(started, reason):
    LOG.warning('Bind of ARQ %s failed: %s', started.uuid, reason)
    try:
        transition(started.uuid, 'BindFailed', started.version,
                   error=reason)
    except exception.CyborgLiteException as exc:
        LOG.info('ARQ %s not marked BindFailed: %s', started.uuid, exc)
        return _current_state(started.uuid)
    return 'BindFailed'


def _current_state(arq_uuid):
    with session.reader() as s:
        arq = db.get_arq(s, arq_uuid)
        return arq.state if arq is not None else None


def unbind_arqs(ctxt, arq_uuids):
    """Unbind each ARQ, freeing its attach handle; {arq_uuid: state}.

    Unbinding an Unbound ARQ does nothing, so a repeated request is safe.
    """
    results = {}
    for arq_uuid in arq_uuids:
        try:
            with session.writer() as s:
                arq = db.get_arq(s, arq_uuid)
                if arq is not None and arq.state != 'Unbound':
                    db.transition(s, arq_uuid, 'Unbound', hostname=None,
                                device_rp_uuid=None, instance_uuid=None,
                                deployable_id=None, bind_started_at=None,
                                error=None)
        except exception.CyborgLiteException as exc:
            LOG.warning('Not unbinding ARQ %s: %s', arq_uuid, exc)
        results[arq_uuid] = _current_state(arq_uuid)
    return results


def reap_stale_binds(timeout=None, notifier=None, batch=100):
    """BindStarted ARQs older than ``timeout`` seconds -> BindFailed.

    Defaults to [arq]bind_timeout. Returns the uuids reaped, after telling
    the notifier about them. Safe to run from every conductor at once.
    """
    timeout = CONF.arq.bind_timeout if timeout is None else timeout
    cutoff = models.utcnow() - datetime.timedelta(seconds=timeout)
    reason = ('the bind did not finish within %s seconds; the conductor '
              'doing it probably stopped' % timeout)
    events = []
    while True:
        with session.writer() as s:
            stale = db.find_stale_binds(s, cutoff, limit=batch)
            for arq in stale:
                if db.update_arq_state(s, arq.id, 'BindStarted', arq.version,
                                       'BindFailed', error=reason):
                    events.append(notifier_mod.make_event(
                        arq.uuid, arq.instance_uuid, False))
        if len(stale) < batch:
            break
    if events:
        LOG.warning('Reaped %d stale binds: %s', len(events),
                    [e['arq_uuid'] for e in events])
    notifier_mod.notify_safely(cl_context.get_admin_context(), events,
                               notifier)
    return [e['arq_uuid'] for e in events]
