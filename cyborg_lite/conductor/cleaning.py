"""Secure cleanup between tenants, conductor side.

A release (unbind, delete) leaves its region pending_cleaning, with every
idle region behind the same PCI function (whoever had a card's PF could
write them all), in the transaction that frees the attach handle
(db/cleaning.py); each is cleaned on its own, and none is offered before
all are (shared_function_unclean). A vGPU's VF is not a region: its
release leaves only that VF's instance to remove (instance_removals.py,
run by ``start`` and the periodic task). ``start`` then
sends each pending region that nothing holds any more to the agent of
its host as a new try (-> cleaning), or makes it available at once when
its driver cleans nothing (no CleaningInterface). The agent runs the
driver's ``clean`` in a thread, beats while it runs and reports the end
(``progress``): cleaning -> available, or error (reserved until an
operator asks for a clean again). The machine is common/states.DEVICE.
A region known out of its host driver's view (its function with
vfio-pci, or another holder: noted by a report) is not sent: it waits,
pending_cleaning, until a report lists it again, and a try that found it
gone (the agent reports its scan first) waits instead of failing
(db/cleaning.py; ConductorManager.report starts what returned).

While a region is not available, Placement has its providers reserved
and binds are refused (inventory/views.py, db/cleaning.py); after
each move that may change that, the host is published.

Nothing is kept in memory: any conductor may take any message of any
region. A release whose conductor died before sending it, and a try
whose agent or conductor died, are picked up by ``reap_and_redispatch``
(periodic: silent tries back to pending_cleaning, then ``start`` for
every host) and by ``agent_started`` (the tries of an agent died with
it). A region becomes available only by the report of its current try,
or when its driver has nothing to clean with.
"""
import datetime
import functools

from oslo_log import log as logging
from stevedore import driver as stevedore_driver

from cyborg_lite.common import context as cl_context
from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.conductor import instance_removals
from cyborg_lite.conductor import rpc_clients
from cyborg_lite.conf import CONF
from cyborg_lite.db import cleaning as cleaning_db
from cyborg_lite.db import instance_removals as removals_db
from cyborg_lite.drivers import base
from cyborg_lite.drivers import loader
from cyborg_lite.metrics import counted as metrics

LOG = logging.getLogger(__name__)

# What an agent may report of a try.
REPORTED_STATES = ('cleaning', 'available', 'error')


@functools.lru_cache(maxsize=None)
def driver_cleans(driver_name):
    """Whether the driver of that entry point name implements
    CleaningInterface; None when this conductor cannot load its class
    (the agent, which runs it, decides)."""
    try:
        cls = stevedore_driver.DriverManager(
            loader.NAMESPACE, driver_name, invoke_on_load=False).driver
    except Exception:
        return None
    return isinstance(cls, type) and issubclass(cls, base.CleaningInterface)


def agent_request(region, deployable_name):
    """The plain dict an agent's CleaningRunner takes (crosses RPC)."""
    return {'cleaning_uuid': region.cleaning_uuid,
            'deployable_uuid': region.uuid,
            'identity': region.identity,
            'deployable_name': deployable_name,
            'driver': region.driver_name}


def deployable_name_of(region):
    """The deployable's name as its driver reported it (the report stores
    <host>_<identity>_<name>); a Region carries the deployable's name and
    its device's host and identity."""
    return device_records.region_name_of(region, region)


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class CleaningFlow:
    """The conductor's part of the secure cleanup (one per conductor)."""

    def __init__(self, agent_api=None, after_change=None, conf=CONF):
        self._agent_api = agent_api
        # Called with a hostname after a move that may change what the
        # host offers (publishing it to the inventory sinks). Its failure
        # never undoes the move: the sinks retry on their own.
        self.after_change = after_change
        self.conf = conf

    @property
    def agent_api(self):
        # NOTE: made on first use, once the process transport is set up.
        if self._agent_api is None:
            self._agent_api = rpc_clients.agent_api()
        return self._agent_api

    # --- releases ------------------------------------------------------

    def start(self, hostnames=None, published=False):
        """Clean what waits: the instances released handles of these hosts
        (None: of every host) still hold are removed (instance_removals.py),
        and each pending_cleaning region that nothing holds any more is made
        available when its driver cleans nothing, else sent to its agent.
        The hosts named and those of these regions are published between
        the two: reserved in the schedulers before any wipe begins.
        ``published``: the caller published the hosts named since their
        regions were released (the release RPC): pending_cleaning ->
        cleaning changes no view, so only the hosts of regions made
        available are. Returns the uuids of the regions moved."""
        if hostnames is not None:
            hostnames = sorted(set(hostnames))
            if not hostnames:
                return []
        removed = self._remove_released(hostnames)
        ready = cleaning_db.ready(hostnames)
        to_clean = [r for r in ready
                    if driver_cleans(r.driver_name) is not False]
        moved = [r.uuid for r in ready
                 if r not in to_clean and self._skip(r)]
        changed = {r.hostname for r in ready if r.uuid in moved} | removed
        if not published:
            changed |= set(hostnames or ()) | {r.hostname for r in to_clean}
        self._publish(changed)
        moved += [r.uuid for r in to_clean if self._dispatch(r)]
        return moved

    def _remove_released(self, hostnames):
        """The instances released handles still hold (a vGPU in a VF)
        removed one by one (instance_removals.py); the hosts to publish
        (handles freed, or a type whose agent cannot remove one left to
        its clean: pending_cleaning now, started by the caller)."""
        freed, type_clean = instance_removals.remove_released(
            self.agent_api, hostnames)
        return freed | type_clean

    @staticmethod
    def _skip(region):
        if not cleaning_db.skip(region.id):
            return False
        metrics.observe(metrics.CLEANING_DURATION, 0, 'skipped')
        LOG.info('Deployable %s: driver %s cleans nothing; available again',
                 region.uuid, region.driver_name)
        return True

    def _dispatch(self, region):
        started = cleaning_db.begin(region.id)
        if started is None:
            return False   # another conductor began it first
        try:
            name = deployable_name_of(started)
        except exception.Invalid as exc:
            cleaning_db.finish(started.uuid, started.cleaning_uuid,
                               error=exc.format_message())
            return True
        LOG.info('Cleaning deployable %s on %s (try %s)', started.uuid,
                 started.hostname, started.cleaning_uuid)
        try:
            self.agent_api.clean_region(cl_context.get_admin_context(),
                                        started.hostname,
                                        agent_request(started, name))
        except Exception:
            # NOTE: the try stays 'cleaning' without heartbeats; the
            # reaper sends it again after [cleaning]heartbeat_timeout.
            LOG.exception('Could not send the cleaning of deployable %s '
                          'to %s', started.uuid, started.hostname)
        return True

    def _publish(self, hostnames):
        if self.after_change is None:
            return
        for hostname in sorted(hostnames):
            try:
                self.after_change(hostname)
            except Exception:
                LOG.exception('Publishing host %s after a cleaning move '
                              'failed', hostname)

    # --- the agent's reports -----------------------------------------

    def progress(self, deployable_uuid, cleaning_uuid, state, error=None):
        """An agent's report of a try: 'cleaning' (it runs: a heartbeat),
        'available' (wiped) or 'error'. CleaningConflict when the try is
        no longer the region's current one (the agent then stops)."""
        if state not in REPORTED_STATES:
            raise exception.Invalid(reason='an agent cannot report cleaning '
                                    'state %r' % (state,))
        if state == 'cleaning':
            cleaning_db.beat(deployable_uuid, cleaning_uuid)
            return {'uuid': deployable_uuid, 'device_state': state}
        if state == 'error':
            error = error or 'the agent reported a failure'
        region = cleaning_db.finish(
            deployable_uuid, cleaning_uuid,
            error=error if state == 'error' else None)
        if region.cleaning_started_at is not None:
            # NOTE: stamped by the database's clock, which a conductor's
            # is close to (a negative difference counts 0).
            metrics.observe(metrics.CLEANING_DURATION, (
                _utcnow() - region.cleaning_started_at).total_seconds(),
                state)
        if state == 'available':
            LOG.info('Deployable %s cleaned (try %s): available',
                     deployable_uuid, cleaning_uuid)
            self._publish({region.hostname})
        elif region.device_state == 'pending_cleaning':
            LOG.warning('Cleaning deployable %s did not run (try %s): %s; '
                        'it waits: %s', deployable_uuid, cleaning_uuid,
                        error, region.cleaning_error)
        else:
            LOG.error('Cleaning deployable %s failed (try %s): %s; it stays '
                      'reserved until an operator asks for a clean again',
                      deployable_uuid, cleaning_uuid, error)
        return {'uuid': deployable_uuid, 'device_state': region.device_state,
                'error': region.cleaning_error}

    # --- recovery ------------------------------------------------------

    def agent_started(self, hostname):
        """The tries the agent was running died with it: back to
        pending_cleaning (or error, without tries left), then everything
        of the host that waits is sent to the new agent."""
        abandoned = cleaning_db.abandon(
            'the agent on %s restarted during the clean' % hostname,
            self.conf.cleaning.max_attempts, hostname=hostname)
        for dep_uuid, _host, state in abandoned:
            LOG.warning('Cleaning of deployable %s abandoned by the restart '
                        'of the agent on %s: now %s', dep_uuid, hostname,
                        state)
        return {'abandoned': [dep_uuid for dep_uuid, _h, _s in abandoned],
                'dispatched': self.start([hostname])}

    def reap_and_redispatch(self):
        """The periodic task: end silent tries, send what waits."""
        if not cleaning_db.any_under_way():
            if removals_db.any_pending():
                self._publish(self._remove_released(None))
            return {'abandoned': [], 'dispatched': []}
        timeout = self.conf.cleaning.heartbeat_timeout
        abandoned = cleaning_db.abandon(
            'no heartbeat from the agent within %d s' % timeout,
            self.conf.cleaning.max_attempts, silent_for=timeout)
        for dep_uuid, host, state in abandoned:
            LOG.warning('Cleaning of deployable %s on %s went silent: now %s',
                        dep_uuid, host, state)
        return {'abandoned': [dep_uuid for dep_uuid, _h, _s in abandoned],
                'dispatched': self.start()}
