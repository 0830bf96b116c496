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

A bind whose region must be programmed first starts the job (the
``programmer`` the conductor passes in) and returns: the ARQ stays
BindStarted and no RPC worker waits for the card. The job's end, reported
by its agent to any conductor, resumes the bind (``resume``): the region
is read again and the ARQ made Bound, or BindFailed with the job's error,
on the version it was taken with, so of two conductors resuming it (or a
previous release's conductor still polling its own job) one wins. A
conductor killed between the job's end and the resume leaves an ARQ that
the reaper resumes.
This module decides and notifies; it never opens a transaction itself.
"""
import collections
import logging
import time

import oslo_messaging as messaging

from cyborg_lite.bitstreams import checks
from cyborg_lite.common import context as cl_context
from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.conductor import notifier as notifier_mod
from cyborg_lite.conductor import rpc_clients
from cyborg_lite.conf import CONF
from cyborg_lite.db import arq_binds
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import device_history as history_db
from cyborg_lite.db import devices as devices_db
from cyborg_lite.inventory import views as host_inventory
from cyborg_lite.metrics import counted as metrics
from cyborg_lite.placement import tree as provider_tree

LOG = logging.getLogger(__name__)

# The region a bind aims at and the profile group it must satisfy.
Target = collections.namedtuple('Target', [
    'deployable_id', 'deployable_uuid', 'bitstream_id', 'function_id',
    'group', 'device_id'])


def bind_arqs(ctxt, bindings, programmer=None, notifier=None,
              conductor=None, publish=None, waiter=None):
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

    ``programmer(ctxt, arq_uuid=, deployable_uuid=, bitstream_id= |
    function_id=)`` loads a region a bind needs programmed: it returns the
    uuid of the job it started (the ARQ stays BindStarted, its state here,
    until ``resume``), or None once the region is loaded, or raises. None:
    such a bind fails with a clear reason.

    ``waiter(started, target)`` says whether a bind that would program
    ``target`` waits for a busy warm sibling instead (conductor/bind_wait:
    it marks the ARQ waiting, which stays BindStarted); None: none waits.
    """
    started, refused = arq_binds.begin_binds(bindings,
                                           conductor or CONF.host)
    results = {}
    for arq_uuid, (state, exc) in refused.items():
        LOG.warning('Not binding ARQ %s: %s', arq_uuid, exc)
        results[arq_uuid] = state
    events = []
    for item in started:
        began = time.monotonic()
        state, ended_here = bind_started(ctxt, item, programmer, publish,
                                         waiter)
        results[item.uuid] = state
        if ended_here:
            record_end(item, state, began, events)
    notifier_mod.notify_safely(ctxt, events, notifier)
    return results


def record_end(started, state, began, events):
    """Count a bind that ended here, and add its event for Nova."""
    if state == 'BindStarted':
        return      # waits for its programming job: resumed when it ends
    metrics.observe(metrics.BIND_DURATION, time.monotonic() - began,
                    _BIND_OUTCOMES.get(state, 'superseded'))
    if state in ('Bound', 'BindFailed'):
        events.append(notifier_mod.make_event(
            started.uuid, started.instance_uuid, state == 'Bound'))


def resume(job_uuid, notifier=None, publish=None):
    """Programming job ``job_uuid`` ended: finish the bind that started
    it, if it still waits for it (BindStarted since before the job);
    (the ARQ's uuid, the state it ended in), or None when no bind waits
    for the job.

    A succeeded job: the region is read again and must hold what the
    group asks for; a failed or cancelled one fails the bind with its
    error. Safe from every conductor at once: the ARQ moves on the
    version its bind was taken with, one resume wins, the others are
    superseded (and a previous-release conductor that polls its job
    finishes, or loses, the same way).
    """
    waiting = arq_binds.bind_waiting_on(job_uuid)
    if waiting is None:
        return None
    started, job = waiting
    began = time.monotonic()
    state, ended_here = _settle(started, lambda: _resumed(started, job),
                                publish)
    events = []
    if ended_here:
        record_end(started, state, began, events)
    notifier_mod.notify_safely(cl_context.get_admin_context(), events,
                               notifier)
    return started.uuid, state


def _resumed(started, job):
    """The Target of a bind whose job ended; ArqBindFailed if it failed."""
    project_id = started.project_id
    target = resolve(started, project_id, keep=job.deployable_uuid)
    need = programming_need(started, target, project_id)
    what = ', '.join('%s %s' % item for item in (need or {}).items())
    if job.state != 'succeeded':
        raise _failed(started, 'programming region %s with %s failed: '
                      'job %s %s: %s' % (job.deployable_uuid,
                                         what or 'its image', job.uuid,
                                         job.state,
                                         job.error or 'no reason given'))
    if need is not None:
        raise _failed(started, 'region %s still lacks %s after programming'
                      % (target.deployable_uuid, what))
    return target


_BIND_OUTCOMES = {'Bound': 'bound', 'BindFailed': 'failed'}


def bind_started(ctxt, started, programmer, publish, waiter=None):
    """BindStarted -> Bound or BindFailed, or BindStarted while a job it
    started programs the region (or while it waits for a warm one:
    ``waiter``, see bind_arqs); (the state reached, whether this moved
    it: see ``_settle``)."""
    # NOTE: the ARQ's project decides which images it may be given, as
    # it decides which it may load (programming.BindProgrammer); never the
    # context, which is the reaper's admin one when a bind is sent again.
    project_id = started.project_id

    def target():
        resolved = resolve(started, project_id)
        if waiter is not None and waiter(started, resolved):
            return None
        return _ensure_programmed(ctxt, started, resolved, programmer,
                                  project_id)
    return _settle(started, target, publish)


def _settle(started, target, publish):
    """Make the ARQ Bound to ``target()`` (None: a job was started, the
    ARQ waits for it), or BindFailed with the reason; (the state, False
    when another moved it first: an unbind, the reaper or another resume,
    which count it and tell Nova themselves)."""
    try:
        found = target()
        if found is None:
            return 'BindStarted', True
        finish(started, found, publish)
        return 'Bound', True
    except exception.ArqBindFailed as exc:
        return fail(started, exc.kwargs['reason'],
                    exc.kwargs.get('version'))
    except exception.ARQStateConflict as exc:
        return superseded(started, exc)
    except exception.DatabaseUnavailable:
        # NOTE: nothing can be written now; the ARQ stays BindStarted,
        # taken by this conductor, and the reaper fails it later.
        raise
    except Exception as exc:
        LOG.exception('Bind of ARQ %s failed unexpectedly', started.uuid)
        return fail(started, 'internal error: %s' % exc)


def superseded(started, conflict):
    """(the state found, False): an unbind, the reaper or another resume
    moved the ARQ first; theirs stands, and they count it and tell Nova."""
    LOG.info('Bind of ARQ %s superseded: %s', started.uuid, conflict)
    return arqs_db.state_of(started.uuid), False


def _failed(started, reason, version=None):
    """``version``: the ARQ's while its claim is held (finish_bind's
    Claimed), when the bind fails then."""
    return exception.ArqBindFailed(uuid=started.uuid, reason=reason,
                                   version=version)


def resolve(started, project_id, keep=None):
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


def device_view(device):
    """The inventory view (inventory/views.py) of ``device``."""
    [view] = [d for d in devices_db.load_inventory(device.hostname).devices
              if d.uuid == device.uuid]
    return view


def sibling_tests(view, group, project_id):
    """(mismatch, runs_wanted, loaded): of a region of ``view``, why it
    cannot serve ``group`` on its own (None when it can), whether it runs
    what the group asks for, and whether it does in an image
    ``project_id`` may be given as it is."""
    region_type = None
    wanted_bs = (group.get('accel:bitstream_id') or '').strip()
    if wanted_bs:
        region_type = bitstreams_db.region_type_of(wanted_bs)

    def runs_wanted(dep):
        try:
            return checks.programming_needed(
                group, dep.bitstream_id, dep.function_id) is None
        except exception.Invalid:
            return False

    def loaded(dep):
        return runs_wanted(dep) and (
            checks.wanted_image(group) is None or
            checks.loaded_image_trusted(dep.bitstream_id, dep.function_id,
                                        project_id))
    return (lambda dep: provider_tree.mismatch(view, dep, group,
                                               region_type),
            runs_wanted, loaded)


def _choose_sibling(started, device, offered, group, keep, project_id):
    """Of the siblings behind one function that the provider offers, the
    one the bind takes (inventory/views.choose_member), preferring
    one that holds what the group asks for in an image ``project_id``
    may be given as it is."""
    by_uuid = {d.uuid: d for d in offered}
    if keep in by_uuid:
        return by_uuid[keep]
    view = device_view(device)
    members = [d for d in view.deployables if d.uuid in by_uuid]
    mismatch, runs_wanted, loaded = sibling_tests(view, group, project_id)
    asked = history_db.last_asked(device.uuid, list(by_uuid))

    def asked_at(dep):
        # NOTE: a region that runs what the group asks for (an image to be
        # reloaded, or no programming at all) loses no function in demand.
        return None if runs_wanted(dep) else asked.get(dep.uuid)
    chosen, why = host_inventory.choose_member(view, members, mismatch,
                                               loaded, asked_at)
    if chosen is None:
        raise _failed(started, 'no deployable behind resource provider %s '
                      'can serve the request now: %s'
                      % (started.device_rp_uuid, why))
    return by_uuid[chosen.uuid]


def programming_need(started, target, project_id):
    """What the region must be loaded with for the group: None when it
    holds it in an image the signature policy of ``project_id`` lets
    through now (a region loaded under ``warn``, before ``enforce``,
    with a key revoked since, or outside cyborg_lite is loaded again)."""
    try:
        need = checks.programming_needed(target.group, target.bitstream_id,
                                         target.function_id)
        wanted = checks.wanted_image(target.group)
    except exception.Invalid as exc:
        raise _failed(started, exc.kwargs['reason'])
    if need is None and wanted is not None and not \
            checks.loaded_image_trusted(target.bitstream_id,
                                        target.function_id, project_id):
        need = wanted
    return need


def _ensure_programmed(ctxt, started, target, program, project_id):
    """The target once it holds what the group asks for (see
    ``programming_need``), or None when a job was started to load it (the
    bind resumes when it ends); the bind fails with the reason otherwise."""
    need = programming_need(started, target, project_id)
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
    why = host_inventory.refusal_in(
        devices_db.load_inventory(started.hostname), target.deployable_uuid)
    if why is not None:
        raise _failed(started, why)
    try:
        job_uuid = program(ctxt, arq_uuid=started.uuid,
                           deployable_uuid=target.deployable_uuid, **need)
    except Exception as exc:
        raise _failed(started, 'programming region %s with %s failed: %s'
                      % (target.deployable_uuid, what, exc))
    if job_uuid is not None:
        LOG.info('Bind of ARQ %s resumes when programming job %s ends',
                 started.uuid, job_uuid)
        return None
    # NOTE: trust what the database says is loaded now, not the hook.
    target = resolve(started, project_id, keep=target.deployable_uuid)
    if checks.programming_needed(target.group, target.bitstream_id,
                                 target.function_id) is not None:
        raise _failed(started, 'region %s still lacks %s after programming'
                      % (target.deployable_uuid, what))
    return target


def finish(started, target, publish):
    """Claim a handle and make the ARQ Bound. A claim the schedulers must
    see first (db/arq_binds.finish_bind) is published, by ``publish()``,
    before it is Bound."""
    # NOTE: the region's availability is decided again under the locks
    # of the claim, by the predicate every inventory sink uses.
    claimed = arq_binds.finish_bind(
        started, target.deployable_id, target.deployable_uuid,
        device_id=target.device_id)
    if claimed.instance is not None:
        _make_instance(started, claimed)
    if claimed.version is not None:
        if publish is not None:
            publish()
        arq_binds.mark_bound(started, claimed)
    LOG.info('ARQ %s bound to deployable %s', started.uuid,
             target.deployable_uuid)


def _make_instance(started, claimed):
    """Have the host's agent make what the held handle hands over (a
    vGPU type written into its VF), its report of the host taken before
    this returns; ArqBindFailed when it made none, or when its report
    did not reach a conductor (what the card can still make would be
    stale in the schedulers). The failed bind gives the handle back and
    its region's clean removes whatever was made."""
    instance = claimed.instance
    what = '%s on %s of %s' % (instance['deployable_name'],
                               device_records.pci_address(
                                   instance['attach_info']),
                               started.hostname)
    try:
        made = rpc_clients.agent_api().make_instance(
            cl_context.get_admin_context(), started.hostname, instance)
    except exception.InstanceNotMade as exc:
        raise _failed(started, exc.format_message(), claimed.version)
    except messaging.MessagingException as exc:
        raise _failed(started, 'making %s: its agent did not answer (%s)'
                      % (what, exception.error_text(exc)), claimed.version)
    if not made.get('reported'):
        raise _failed(started, 'made %s, but the host\'s report of it '
                      'reached no conductor; given back' % what,
                      claimed.version)
    LOG.info('ARQ %s: made %s', started.uuid, what)


def fail(started, reason, version=None):
    """BindFailed with ``reason``; (the state, False when another moved
    the ARQ first) as ``_settle``."""
    LOG.warning('Bind of ARQ %s failed: %s', started.uuid, reason)
    try:
        arqs_db.transition(started.uuid, 'BindFailed',
                           started.version if version is None else version,
                           error=reason)
    except exception.CyborgLiteException as exc:
        LOG.info('ARQ %s not marked BindFailed: %s', started.uuid, exc)
        return arqs_db.state_of(started.uuid), False
    return 'BindFailed', True


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
    return rpc_clients.conductor_api().bind_arqs(ctxt, bindings)


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


def reap_stale_binds(timeout=None, notifier=None, batch=100, cast=None,
                     publish=None):
    """End the binds left behind; returns the uuids failed.

    A bind whose programming job ended is resumed (``resume``, with
    ``publish``) at once: the conductor that took the job's end died
    before it did. BindStarted ARQs that a conductor took ``timeout``
    seconds ago or more ([arq]bind_timeout by default), or that none took
    within ``timeout`` of the request, become BindFailed, and the notifier
    hears of them. The binds none took yet are then cast again (see
    ``resend_untaken_binds``; ``cast`` replaces the RPC cast). Safe to run
    from every conductor at once.
    """
    timeout = CONF.arq.bind_timeout if timeout is None else timeout
    failed = []
    for job_uuid in arq_binds.ended_jobs_of_binds(batch):
        LOG.warning('Resuming the bind that waited for programming job %s, '
                    'which ended', job_uuid)
        ended = resume(job_uuid, notifier=notifier, publish=publish)
        if ended is not None and ended[1] == 'BindFailed':
            failed.append(ended[0])
    reaped = arq_binds.reap_stale_binds(timeout, _reap_reason(timeout), batch)
    events = [notifier_mod.make_event(arq_uuid, instance_uuid, False)
              for arq_uuid, instance_uuid in reaped]
    if events:
        LOG.warning('Reaped %d stale binds: %s', len(events),
                    [arq_uuid for arq_uuid, _ in reaped])
    notifier_mod.notify_safely(cl_context.get_admin_context(), events,
                               notifier)
    resend_untaken_binds(cast=cast, batch=batch)
    return failed + [arq_uuid for arq_uuid, _ in reaped]
