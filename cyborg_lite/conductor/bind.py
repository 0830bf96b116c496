"""The ARQ bind workflow, run by any conductor.

Initial --bind--> BindStarted --> Bound | BindFailed (an unbind, Unbound, is
the API's: db/arqs.unbind_all)
(the machine is common/states.py's ARQ).

No conductor owns an ARQ: correctness comes from the database. Each
transition is a conditional UPDATE on the (state, version) it was decided
on (db/arqs.py); the attach handle is claimed and written on the ARQ in
the transaction that makes it Bound, and the UNIQUE attach_handle_id
column refuses a handle on two ARQs whatever else goes wrong. A conductor
that dies inside a transaction leaves nothing, the database rolls it back.

The API records a bind (BindStarted) before it casts it. The conductor
that takes the cast marks the ARQ taken (by its name, with the time) in
the transaction that starts its work, and only one conductor can. The
reaper (``reap_stale_binds``, periodic in every conductor) tells the two
ways a bind can be left: one that no conductor took was lost on its way
(a RabbitMQ restart) and is cast again every [arq]bind_resend_interval;
one that a conductor took and did not finish within [arq]bind_timeout
(the conductor died) is failed, as is one no conductor took within
[arq]bind_timeout of the request.
This module decides and notifies; it never opens a transaction itself.
"""
import collections
import logging
import time

from cyborg_lite.bitstreams import checks
from cyborg_lite.common import context as cl_context
from cyborg_lite.common import exception
from cyborg_lite.conductor import notifier as notifier_mod
from cyborg_lite.conf import CONF
from cyborg_lite.db import arq_binds
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.inventory import views as host_inventory
from cyborg_lite.metrics import counted as metrics
from cyborg_lite.placement import tree as provider_tree
from cyborg_lite.rpc import conductor_client as rpcapi

LOG = logging.getLogger(__name__)

# The region a bind aims at and the profile group it must satisfy.
Target = collections.namedtuple('Target', [
    'deployable_id', 'deployable_uuid', 'bitstream_id', 'function_id',
    'group', 'device_id'])

_program_before_bind = None


def set_program_before_bind(program):
    """Plug in the programmer: ``program(ctxt, arq_uuid=, deployable_uuid=,
    bitstream_id= | function_id=)`` loads the region and returns when done,
    or raises. None removes it: a bind that needs programming then fails
    with a clear reason."""
    global _program_before_bind
    _program_before_bind = program


def bind_arqs(ctxt, bindings, notifier=None, program_before_bind=None,
              conductor=None, publish=None):
    """Bind each ARQ as asked; returns {arq_uuid: state it ended in}.

    bindings: {arq_uuid: {'hostname', 'device_rp_uuid', 'instance_uuid',
    'project_id' (optional)}}. An ARQ that cannot start binding (unknown,
    wrong state, incomplete binding, taken by another conductor) is logged
    and left as it is (None for an unknown one). Bound and BindFailed ones
    are notified together. ``conductor`` is the name the ARQs are marked
    taken by ([DEFAULT]host by default). ``publish()`` serves the hosts
    db/publish_requests holds: called, and returned from, before an ARQ
    whose claim changes what a scheduler is offered (on a Kubernetes
    host) is Bound.
    """
    program = program_before_bind or _program_before_bind
    started, refused = arq_binds.begin_binds(bindings,
                                           conductor or CONF.host)
    results = {}
    for arq_uuid, (state, exc) in refused.items():
        LOG.warning('Not binding ARQ %s: %s', arq_uuid, exc)
        results[arq_uuid] = state
    events = []
    for item in started:
        began = time.monotonic()
        state = _bind_started(ctxt, item, program, publish)
        metrics.observe(metrics.BIND_DURATION, time.monotonic() - began,
                        _BIND_OUTCOMES.get(state, 'superseded'))
        results[item.uuid] = state
        if state in ('Bound', 'BindFailed'):
            events.append(notifier_mod.make_event(
                item.uuid, item.instance_uuid, state == 'Bound'))
    notifier_mod.notify_safely(ctxt, events, notifier)
    return results


_BIND_OUTCOMES = {'Bound': 'bound', 'BindFailed': 'failed'}


def _bind_started(ctxt, started, program, publish):
    """BindStarted -> Bound or BindFailed; returns the state reached."""
    # NOTE: the ARQ's project decides which images it may be given, as
    # it decides which it may load (programming.BindProgrammer); never the
    # context, which is the reaper's admin one when a bind is sent again.
    project_id = started.project_id
    try:
        target = _ensure_programmed(ctxt, started,
                                    _resolve(started, project_id),
                                    program, project_id)
        _finish_bind(started, target, publish)
        return 'Bound'
    except exception.ArqBindFailed as exc:
        return _fail_bind(started, exc.kwargs['reason'])
    except exception.ARQStateConflict as exc:
        # NOTE: an unbind or the reaper moved it first; theirs stands.
        LOG.info('Bind of ARQ %s superseded: %s', started.uuid, exc)
        return arqs_db.state_of(started.uuid)
    except exception.DatabaseUnavailable:
        # NOTE: nothing can be written now; the ARQ stays BindStarted,
        # taken by this conductor, and the reaper fails it later.
        raise
    except Exception as exc:
        LOG.exception('Bind of ARQ %s failed unexpectedly', started.uuid)
        return _fail_bind(started, 'internal error: %s' % exc)


def _failed(started, reason):
    return exception.ArqBindFailed(uuid=started.uuid, reason=reason)


def _resolve(started, project_id, keep=None):
    """The Target of a started bind for ``project_id``; ``keep``, the
    uuid of the deployable chosen before (and programmed since), is
    chosen again."""
    rp = started.device_rp_uuid
    offered, device, group = arq_binds.bind_target(started)
    if not offered:
        raise _failed(started, 'no deployable has resource provider %s' % rp)
    if device.hostname != started.hostname:
        raise _failed(started, 'resource provider %s is on host %s, not on %s'
                      % (rp, device.hostname, started.hostname))
    if group is None:
        raise _failed(started, 'device profile group %s does not exist'
                      % started.group_id)
    deployable = offered[0]
    if len(offered) > 1:
        deployable = _choose_sibling(started, device, offered, group, keep,
                                     project_id)
    return Target(deployable.id, deployable.uuid, deployable.bitstream_id,
                  deployable.function_id, group, device.id)


def _choose_sibling(started, device, offered, group, keep, project_id):
    """Of the siblings behind one function that the provider offers, the
    one the bind takes (placement/tree.choose_member), preferring
    one that holds what the group asks for in an image ``project_id``
    may be given as it is."""
    by_uuid = {d.uuid: d for d in offered}
    if keep in by_uuid:
        return by_uuid[keep]
    [view] = [d for d in host_inventory.load(device.hostname).devices
              if d.uuid == device.uuid]
    members = [d for d in view.deployables if d.uuid in by_uuid]
    region_type = None
    wanted_bs = (group.get('accel:bitstream_id') or '').strip()
    if wanted_bs:
        region_type = bitstreams_db.region_type_of(wanted_bs)

    def loaded(dep):
        try:
            if programming_needed(group, dep.bitstream_id,
                                  dep.function_id) is not None:
                return False
        except exception.Invalid:
            return False
        return (wanted_image(group) is None or
                checks.loaded_image_trusted(dep.bitstream_id,
                                            dep.function_id, project_id))
    chosen, why = provider_tree.choose_member(view, members, group,
                                              region_type, loaded)
    if chosen is None:
        raise _failed(started, 'no deployable behind resource provider %s '
                      'can serve the request now: %s'
                      % (started.device_rp_uuid, why))
    return by_uuid[chosen.uuid]


def wanted_image(group):
    """{'bitstream_id'|'function_id': wanted} the group asks a region to
    hold, or None when it asks for none."""
    wanted_bs = (group.get('accel:bitstream_id') or '').strip()
    wanted_fn = (group.get('accel:function_id') or '').strip()
    if wanted_bs and wanted_fn:
        raise exception.Invalid(reason='accel:bitstream_id and '
                                'accel:function_id are mutually exclusive')
    if wanted_bs:
        return {'bitstream_id': wanted_bs}
    if wanted_fn:
        return {'function_id': wanted_fn}
    return None


def programming_needed(group, bitstream_id, function_id):
    """{'bitstream_id'|'function_id': wanted} the region lacks, or None."""
    wanted = wanted_image(group)
    if wanted is None:
        return None
    loaded = {'bitstream_id': bitstream_id, 'function_id': function_id}
    [(key, value)] = wanted.items()
    return None if _same_id(value, loaded[key]) else wanted


def _same_id(wanted, loaded):
    # NOTE: AFU / function ids come upper or lower case, with or without
    # dashes, depending on the tool that printed them.
    def norm(value):
        return (value or '').replace('-', '').lower()
    return bool(loaded) and norm(wanted) == norm(loaded)


def _ensure_programmed(ctxt, started, target, program, project_id):
    """Load what the group asks for unless the region holds it in an
    image the signature policy of ``project_id`` lets through now (a
    region loaded under ``warn``, before ``enforce``, with a key revoked
    since, or outside cyborg_lite is loaded again, or the bind fails
    with the check's reason)."""
    try:
        need = programming_needed(target.group, target.bitstream_id,
                                  target.function_id)
        wanted = wanted_image(target.group)
    except exception.Invalid as exc:
        raise _failed(started, exc.kwargs['reason'])
    if need is None and wanted is not None and not \
            checks.loaded_image_trusted(target.bitstream_id,
                                        target.function_id, project_id):
        need = wanted
    if need is None:
        return target
    what = ', '.join('%s %s' % item for item in need.items())
    if program is None:
        raise _failed(started, 'region %s must be programmed with %s first '
                      'and no programmer is configured'
                      % (target.deployable_uuid, what))
    # NOTE: a bind the region's state refuses (a fault, a maintenance)
    # must not write to it first: finish_bind would refuse it after the
    # job, which had overwritten what the card held.
    why = host_inventory.deployable_refusal(started.hostname,
                                            target.deployable_uuid)
    if why is not None:
        raise _failed(started, why)
    try:
        program(ctxt, arq_uuid=started.uuid,
                deployable_uuid=target.deployable_uuid, **need)
    except Exception as exc:
        raise _failed(started, 'programming region %s with %s failed: %s'
                      % (target.deployable_uuid, what, exc))
    # NOTE: trust what the database says is loaded now, not the hook.
    target = _resolve(started, project_id, keep=target.deployable_uuid)
    if programming_needed(target.group, target.bitstream_id,
                          target.function_id) is not None:
        raise _failed(started, 'region %s still lacks %s after programming'
                      % (target.deployable_uuid, what))
    return target


def _finish_bind(started, target, publish):
    """Claim a handle and make the ARQ Bound. A claim the schedulers must
    see first (db/arqs.finish_bind) is published, by ``publish()``,
    before it is Bound."""
    # NOTE: the region's availability is decided again under the locks
    # of the claim, by the predicate every inventory sink uses.
    claimed = arq_binds.finish_bind(
        started, target.deployable_id, target.deployable_uuid,
        refusal=host_inventory.region_refusal, device_id=target.device_id)
    if claimed.version is not None:
        if publish is not None:
            publish()
        arq_binds.mark_bound(started, claimed)
    LOG.info('ARQ %s bound to deployable %s', started.uuid,
             target.deployable_uuid)


def _fail_bind(started, reason):
    LOG.warning('Bind of ARQ %s failed: %s', started.uuid, reason)
    try:
        arqs_db.transition(started.uuid, 'BindFailed', started.version,
                           error=reason)
    except exception.CyborgLiteException as exc:
        LOG.info('ARQ %s not marked BindFailed: %s', started.uuid, exc)
        return arqs_db.state_of(started.uuid)
    return 'BindFailed'


def _reap_reason(timeout):
    def reason(taken_by):
        if taken_by:
            return ('the bind did not finish within %s seconds; conductor '
                    '%s, which took it, probably stopped' % (timeout,
                                                            taken_by))
        return ('no conductor took the bind within %s seconds of the '
                'request, though it was sent again' % timeout)
    return reason


def cast_binds(ctxt, bindings):
    """Cast ``bindings`` to the conductors (any one takes them)."""
    return rpcapi.ConductorAPI().bind_arqs(ctxt, bindings)


def resend_untaken_binds(after=None, cast=None, batch=100):
    """Cast again, in one cast, the binds no conductor took within
    ``after`` seconds of their last cast ([arq]bind_resend_interval by
    default); returns the ARQ uuids sent."""
    after = CONF.arq.bind_resend_interval if after is None else after
    bindings = dict(arq_binds.resend_untaken_binds(after, batch))
    if bindings:
        LOG.warning('Binds of ARQs %s were taken by no conductor; sending '
                    'them again', sorted(bindings))
        # NOTE: a cast that fails now (broker down) is logged by the
        # client; the binds are due again after another interval.
        (cast or cast_binds)(cl_context.get_admin_context(), bindings)
    return sorted(bindings)


def reap_stale_binds(timeout=None, notifier=None, batch=100, cast=None):
    """End the binds left behind; returns the uuids failed.

    BindStarted ARQs that a conductor took ``timeout`` seconds ago or
    more ([arq]bind_timeout by default), or that none took within
    ``timeout`` of the request, become BindFailed, and the notifier hears
    of them. The binds none took yet are then cast again (see
    ``resend_untaken_binds``; ``cast`` replaces the RPC cast). Safe to run
    from every conductor at once.
    """
    timeout = CONF.arq.bind_timeout if timeout is None else timeout
    reaped = arq_binds.reap_stale_binds(timeout, _reap_reason(timeout), batch)
    events = [notifier_mod.make_event(arq_uuid, instance_uuid, False)
              for arq_uuid, instance_uuid in reaped]
    if events:
        LOG.warning('Reaped %d stale binds: %s', len(events),
                    [arq_uuid for arq_uuid, _ in reaped])
    notifier_mod.notify_safely(cl_context.get_admin_context(), events,
                               notifier)
    resend_untaken_binds(cast=cast, batch=batch)
    return [arq_uuid for arq_uuid, _ in reaped]
