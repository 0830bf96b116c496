"""Binds that wait for a warm region (issue 43), run by any conductor.

A bind on a provider of several sibling regions that would program a
free one (conductor/bind.py) waits instead for a busy sibling that runs
the function its group asks for, held by another ARQ or being wiped,
when inventory/warm.worth_waiting says that region is freed sooner than
programming takes: on the means of the device's recent history
(db/device_history.mean_durations: programming seconds, holds, cleans),
one waiting bind per busy region. The ARQ stays BindStarted, marked
waiting (db/arq_waits.py), and no RPC worker waits.

It is resumed by whichever conductor sees the region freed (a clean's
end, a release of a driver that does not clean: ``resume_free``), or by
the periodic ``reap`` of any conductor (one killed meanwhile): the
region is bound with no programming job. A bind that loses the region
to another (two waited for it) is bound as a new bind would be, and may
wait again. One still waiting [arq]warm_wait_timeout after it was taken
programs a free region (``fall_back_late``); the reaper fails one still
BindStarted at [arq]bind_timeout, naming the region it waited for.
"""
import logging
import time

from cyborg_lite.common import context as cl_context
from cyborg_lite.common import exception
from cyborg_lite.conductor import bind
from cyborg_lite.conductor import notifier as notifier_mod
from cyborg_lite.conf import CONF
from cyborg_lite.db import arq_binds
from cyborg_lite.db import arq_waits
from cyborg_lite.db import device_history as history_db
from cyborg_lite.db import devices as devices_db
from cyborg_lite.inventory import views as host_inventory
from cyborg_lite.inventory import warm

LOG = logging.getLogger(__name__)


def wait_if_worth(started, target):
    """bind.bind_arqs' ``waiter``: True when the bind that would program
    ``target`` now waits for a busy sibling running its function."""
    if not CONF.arq.warm_wait_timeout or bind.programming_need(
            started, target, started.project_id) is None:
        return False
    offered, device, group = arq_binds.bind_target(started)
    if len(offered) < 2:
        return False
    ids = {d.uuid: d.id for d in offered}
    view = bind.device_view(device)
    mismatch, _runs, loaded = bind.sibling_tests(view, group,
                                                 started.project_id)
    means = history_db.mean_durations(device.uuid)
    busy = {}
    for dep in view.deployables:
        if dep.uuid not in ids or dep.uuid == target.deployable_uuid or \
                mismatch(dep) is not None or not loaded(dep):
            continue
        free_in = warm.expected_free(
            host_inventory.unavailable_reasons(view, dep),
            host_inventory.has_free_handle(dep), means.hold, means.clean)
        if free_in:
            busy[ids[dep.uuid]] = free_in
    if not busy:
        return False
    waiting = arq_waits.start_waiting(started, sorted(busy),
                                      min(busy.values()), means.program)
    if waiting is None:
        return False
    LOG.info('Bind of ARQ %s waits for region %s, which runs what it asks '
             'for (freed in %.1f s expected, programming takes %.1f s)',
             started.uuid, waiting.region_uuid, busy[waiting.region_id],
             means.program)
    return True


def _free(inventories, waiting):
    """Whether the region ``waiting`` waits for may be bound now."""
    hostname = waiting.started.hostname
    if hostname not in inventories:
        inventories[hostname] = devices_db.load_inventory(hostname)
    for device in inventories[hostname].devices:
        for dep in device.deployables:
            if dep.uuid == waiting.region_uuid:
                return host_inventory.refusal(device, dep) is None and \
                    host_inventory.has_free_handle(dep)
    return False


def _bind_warm(started, region_uuid, publish):
    """Bind the ARQ to the region it waited for, with no programming:
    ('Bound', True), (its state, whether this moved it) when it moved
    otherwise (as bind.bind_started), or None when the region cannot serve it
    now (taken by another first)."""
    try:
        target = bind.resolve(started, started.project_id, keep=region_uuid)
        if bind.programming_need(started, target, started.project_id) is None:
            bind.finish(started, target, publish)
            return 'Bound', True
    except exception.ArqBindFailed as exc:
        if exc.kwargs.get('version') is not None:
            return bind.fail(started, exc.kwargs['reason'],
                             exc.kwargs['version'])
        LOG.info('ARQ %s did not get region %s it waited for: %s',
                 started.uuid, region_uuid, exc.kwargs['reason'])
    except exception.ARQStateConflict as exc:
        return bind.superseded(started, exc)
    return None


def _resume(waiting, warm_region, programmer, publish, events):
    """Take the waiting bind and go on with it: to its region when
    ``warm_region``, else (or when that region was lost) as a new bind,
    which waits again only when ``warm_region``. Its state, or None when
    another conductor took it first."""
    started = arq_waits.take(waiting)
    if started is None:
        return None
    began = time.monotonic()
    outcome = _bind_warm(started, waiting.region_uuid, publish) \
        if warm_region else None
    if outcome is None:
        outcome = bind.bind_started(
            cl_context.get_admin_context(), started, programmer, publish,
            wait_if_worth if warm_region else None)
    state, ended_here = outcome
    if ended_here:
        bind.record_end(started, state, began, events)
    return state


def _resume_each(found, warm_region, programmer, publish, notifier):
    events, results = [], {}
    for waiting in found:
        state = _resume(waiting, warm_region, programmer, publish, events)
        if state is not None:
            results[waiting.started.uuid] = state
    notifier_mod.notify_safely(cl_context.get_admin_context(), events,
                               notifier)
    return results


def resume_free(programmer, hostnames=None, region_uuid=None,
                publish=None, notifier=None):
    """Resume the waiting binds (on ``hostnames``, for ``region_uuid``)
    whose region may be bound now; {arq uuid: the state it reached}."""
    found = arq_waits.waiting(hostnames=hostnames, region_uuid=region_uuid)
    inventories = {}
    return _resume_each([w for w in found if _free(inventories, w)], True,
                        programmer, publish, notifier)


def fall_back_late(programmer, after=None, publish=None, notifier=None):
    """Binds still waiting ``after`` seconds ([arq]warm_wait_timeout)
    after a conductor took them program a free region, as a bind that
    does not wait would; {arq uuid: the state it reached}."""
    after = CONF.arq.warm_wait_timeout if after is None else after
    late = arq_waits.waiting(taken_for=after)
    if late:
        LOG.warning('Binds of ARQs %s waited %s seconds for a busy region; '
                    'programming a free one', [w.started.uuid for w in late],
                    after)
    return _resume_each(late, False, programmer, publish, notifier)


def reap(programmer=None, publish=None, notifier=None):
    """The periodic end of binds left waiting or behind, in any
    conductor: waiting binds whose region is free resumed (the conductor
    that saw it freed died first), late ones fall back, then
    bind.reap_stale_binds; its result. With no bind in flight, nothing."""
    if not arq_binds.any_started():
        return []
    for step in (resume_free, fall_back_late):
        try:
            step(programmer, publish=publish, notifier=notifier)
        except exception.DatabaseUnavailable:
            raise
        except Exception:
            LOG.exception('Resuming waiting binds failed')
    return bind.reap_stale_binds(notifier=notifier, publish=publish)
