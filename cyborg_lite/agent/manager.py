"""The agent: periodic discovery, change-only reports, conductor→agent RPC.

One AgentManager per host::

    agent = AgentManager(CONF)          # loads [agent]enabled_drivers
    agent.start()                       # RPC server + discovery loop
    ...
    agent.stop()

Every ``[agent]report_interval`` seconds each driver is scanned on its
own, its devices' health worked out from its signals (agent/health.py):
a driver that raises becomes an entry ``{'driver', 'ok': False,
'devices': [], 'error'}`` and the others report as usual. Entries are
sent only when they differ from the last one the conductor acknowledged
(compared by hash), except in a full report - at start, every
``[agent]full_report_every`` scans, and when the conductor asks - which
sends every driver. An unacknowledged entry is simply sent again next
time. The message format is in cyborg_lite/conductor/report.py.

A thread of its own sends a heartbeat every ``[agent]heartbeat_interval``
seconds (conductor/liveness.py), whatever a slow scan or report does: a
host whose agent falls silent is marked down by the conductors, and comes
back with its next heartbeat.

Programming jobs come in by ``program_region`` and cleaning tries (the
wipe of a deployable between tenants) by ``clean_region``; both run in
the background (agent/programming.py, agent/cleaning.py). Once per start
the agent tells the conductor (``agent_started``) so that jobs and
cleans its previous life left half done are failed, requeued or started
again, never left running.

A bind whose instance is made then (a vGPU type written into a VF)
calls ``make_instance`` (its release's clean removes it): the agent's
driver (drivers/base.InstanceInterface) makes it and the agent reports
the host before it answers.

With [kubernetes]enabled the agent also serves the kubelet DRA plugin
(agent/dra/), whose devices the conductor prepares
(agent/dra/conductor_devices.py).
"""
import hashlib
import os
import threading
import time

import oslo_messaging as messaging
from oslo_log import log as logging

from cyborg_lite.agent import cleaning
from cyborg_lite.agent import health
from cyborg_lite.agent import image_fetch
from cyborg_lite.agent.dra import conductor_devices
from cyborg_lite.agent import programming
from cyborg_lite.common import canonical_json
from cyborg_lite.common import context
from cyborg_lite.common import exception
from cyborg_lite.common import version
from cyborg_lite.conf import CONF
from cyborg_lite.drivers import base
from cyborg_lite.drivers import loader
from cyborg_lite.metrics import counted as metrics
from cyborg_lite.rpc import conductor_client as conductor_rpcapi
from cyborg_lite.rpc import server_loop as rpc_loop
from cyborg_lite.rpc import transport as rpc
from cyborg_lite.rpc import versions as rpc_versions

LOG = logging.getLogger(__name__)
# Where the hash of the NUMA nodes the conductor acknowledged is kept
# among the drivers' (no driver name has a space).
NUMA_KEY = 'numa nodes'


def _canonical_device(device):
    """Order lists whose order means nothing, so a reordered scan of the
    same hardware hashes the same and is not sent again."""
    device = dict(device)
    deployables = []
    for dep in sorted(device.get('deployables') or [],
                      key=lambda d: d['name']):
        dep = dict(dep, traits=sorted(set(dep.get('traits') or [])))
        dep['attach_handles'] = sorted(dep.get('attach_handles') or [],
                                       key=canonical_json.dumps)
        deployables.append(dep)
    device['deployables'] = deployables
    return device


def driver_entry(driver_name, devices=None, error=None):
    """One driver's part of a report; ``error`` set means the scan failed."""
    if error is not None:
        return {'driver': driver_name, 'ok': False, 'devices': [],
                'error': error}
    devices = sorted((_canonical_device(d) for d in devices),
                     key=lambda d: str(d.get('identity')))
    return {'driver': driver_name, 'ok': True, 'devices': devices,
            'error': None}


def entry_hash(entry):
    return hashlib.sha256(canonical_json.dumps(entry).encode()).hexdigest()


class AgentManager(rpc_loop.RpcLoop):
    """Discovery loop and the RPC endpoint the conductor calls."""

    # NOTE: keep in step with rpc/agent_client.AgentAPI.RPC_API_VERSION.
    target = messaging.Target(version='1.4')

    def __init__(self, conf=CONF, host=None, drivers=None,
                 conductor_api=None, fetch_image=None, k8s_api_client=None):
        self.conf = conf
        self.host = host or conf.host
        if drivers is None:
            # A driver that fails to load is logged and left out by the
            # loader; the agent runs with the others.
            drivers = list(loader.load_drivers(
                conf, conf.agent.enabled_drivers).values())
        self.drivers = drivers
        # Each device's health from its driver's signals (agent/health.py).
        self.health = health.HealthMonitor(conf, self.host)
        self.conductor = conductor_api or conductor_rpcapi.ConductorAPI(
            timeout=conf.agent.rpc_timeout)
        # driver name -> hash of the entry the conductor acknowledged.
        self.acked = {}
        self.scans = 0
        self._full_requested = True  # the first report is always full
        self._report_lock = threading.Lock()
        self._init_rpc_loop()
        self._announced = False
        self._heartbeat_thread = None
        self._heartbeat_ok = None   # unknown until the first one
        self.jobs = programming.JobRunner(
            self.host, self.drivers, self.conductor,
            fetch_image or image_fetch.make_fetcher(conf),
            tmp_dir=os.path.join(conf.state_path, 'programming'),
            after_job=self._after_job)
        self.cleaner = cleaning.CleaningRunner(
            self.host, self.drivers, self.conductor,
            conf.cleaning.heartbeat_interval,
            region_busy=lambda key: key in self.jobs.running(),
            after_clean=self._after_job)
        self.kubelet_plugin = self._kubelet_plugin(conf, k8s_api_client)

    def _kubelet_plugin(self, conf, api_client):
        """The kubelet plugin server when [kubernetes]enabled, else None
        (a bad [kubernetes] option raises here, before anything starts)."""
        if not conf.kubernetes.enabled:
            return None
        # NOTE: imported here: the Kubernetes client is a second of every
        # start, on hosts that serve no Kubernetes too.
        from cyborg_lite.agent.dra import service as dra_service
        devices = conductor_devices.ConductorDevices(
            self.conductor, self.host, self.drivers, conf,
            report=self.report_once)
        return dra_service.create_server(
            conf, devices.prepare_device, devices.release_device,
            api_client=api_client, node=dra_service.node_name(conf,
                                                              self.host),
            release_claim=devices.release_claim)

    # --- RPC endpoint (conductor -> agent), see rpc/agent_client.py ---------

    def request_report(self, ctxt):
        """Scan and send a full report now instead of at the next tick."""
        LOG.info('Conductor asked for a full report')
        self._full_requested = True
        self._wake.set()

    def program_region(self, ctxt, job):
        """Run a programming job in the background (a cast)."""
        LOG.info('Programming job %s for %s %s received', job['uuid'],
                 job['identity'], job['region_name'])
        self.jobs.submit(job)

    def clean_region(self, ctxt, request):
        """Wipe a deployable between tenants in the background (a cast)."""
        LOG.info('Cleaning try %s for %s %s received',
                 request['cleaning_uuid'], request['identity'],
                 request['deployable_name'])
        self.cleaner.submit(request)

    @messaging.expected_exceptions(exception.InstanceNotMade)
    def make_instance(self, ctxt, request):
        """RPC 1.4, a call: make the instance a bind hands over (a vGPU
        written into the VF of ``request['attach_info']``) and report the
        host, so that what it can still make is in the database before
        this returns; {'attach_info': what to hand over, 'reported':
        whether the conductor took the report}. InstanceNotMade (nothing
        made) with why, after a report of the host as it is."""
        driver = self._instance_driver(request)
        try:
            made = driver.make_instance(request['identity'],
                                        request['deployable_name'],
                                        request['attach_info'])
        except exception.DriverError as exc:
            # NOTE: refused, the card was not as the last report said (a
            # vGPU someone else made since): the conductor hears it now.
            self.report_once()
            raise exception.InstanceNotMade(host=self.host,
                                            reason=exc.format_message())
        return {'attach_info': made,
                'reported': self.report_once() is not None}

    @messaging.expected_exceptions(exception.InstanceNotMade)
    def remove_instance(self, ctxt, request):
        """RPC 1.4, a call: remove the instance this host made on the
        handle's function and report the host (what the card can make
        again is in the database before the handle is freed); whether one
        was there. InstanceNotMade when it is still there (a guest has it
        open), with why."""
        driver = self._instance_driver(request)
        try:
            removed = driver.remove_instance(request['identity'],
                                             request['deployable_name'],
                                             request['attach_info'])
        except exception.DriverError as exc:
            raise exception.InstanceNotMade(host=self.host,
                                            reason=exc.format_message())
        if removed:
            self.report_once()
        return removed

    def _instance_driver(self, request):
        for driver in self.drivers:
            if driver.name == request.get('driver') and \
                    isinstance(driver, base.InstanceInterface):
                return driver
        raise exception.InstanceNotMade(
            host=self.host, reason='no loaded driver named %r makes '
            'instances' % request.get('driver'))

    def _after_job(self, driver, full=False):
        # NOTE: a full scan's diff: only the drivers whose hardware
        # changed are sent, the programmed one among them; ``full``:
        # every driver's (a clean found its region out of view, which
        # the conductor may have been told already).
        return self.report_once(full=full)

    def announce_start(self):
        """Tell the conductor we (re)started, once; True when done."""
        if self._announced:
            return True
        try:
            result = self.conductor.agent_started(
                context.get_admin_context(), self.host)
        except Exception as exc:
            # The conductor's reaper ends our old jobs anyway, later.
            LOG.warning('Could not tell the conductor that the agent '
                        'started (%s: %s); trying again next cycle',
                        type(exc).__name__, exc)
            return False
        self._announced = True
        LOG.info('Conductor told of our start: %s', result)
        # Only now: the conductor has ended the tries of our past life,
        # and none of this life's can be mistaken for one of them.
        self.jobs.open()
        self.cleaner.open()
        return True

    # --- heartbeat ------------------------------------------------------

    def heartbeat_once(self):
        """Tell the conductor we are alive; True when one heard it."""
        try:
            # NOTE: waits one interval at most: the next heartbeat is due.
            self.conductor.agent_heartbeat(
                context.get_admin_context(), self.host,
                timeout=self.conf.agent.heartbeat_interval,
                release=version.VERSION, rpc_versions=rpc_versions.spoken())
        except Exception as exc:
            if self._heartbeat_ok is not False:
                LOG.warning('Heartbeat not acknowledged (%s: %s); trying '
                            'again every %ss', type(exc).__name__, exc,
                            self.conf.agent.heartbeat_interval)
            self._heartbeat_ok = False
            return False
        if self._heartbeat_ok is False:
            LOG.info('Heartbeats acknowledged again')
        self._heartbeat_ok = True
        return True

    def _heartbeat_loop(self):
        while not self._stopping.is_set():
            try:
                self.heartbeat_once()
            except Exception:
                LOG.exception('Heartbeat failed')
            self._stopping.wait(self.conf.agent.heartbeat_interval)

    # --- discovery and reports ------------------------------------------

    def scan(self):
        """One entry per driver; a failing driver never stops the others."""
        entries = []
        for driver in self.drivers:
            if not isinstance(driver, base.DiscoveryInterface):
                continue
            started = time.monotonic()
            try:
                records = self.health.apply(driver, driver.discover())
                devices = [record.to_dict() for record in records]
                entries.append(driver_entry(driver.name, devices))
                outcome = 'ok'
            except Exception as exc:
                LOG.exception('Driver %s failed its scan; the conductor '
                              'keeps what it reported last', driver.name)
                entries.append(driver_entry(
                    driver.name, error='%s: %s' % (type(exc).__name__, exc)))
                outcome = 'failed'
            metrics.observe(metrics.AGENT_SCAN_DURATION,
                            time.monotonic() - started, driver.name, outcome)
        return entries

    def numa_nodes(self):
        """The host's NUMA nodes: the first non-empty answer of a driver
        that reads them (drivers/base.HostTopologyInterface), or None."""
        for driver in self.drivers:
            if not isinstance(driver, base.HostTopologyInterface):
                continue
            try:
                nodes = driver.numa_nodes()
            except Exception as exc:
                LOG.warning('Driver %s could not read the NUMA nodes: %s',
                            driver.name, exc)
                continue
            if nodes:
                return nodes
        return None

    def report_once(self, full=False):
        """Scan, send what changed; the conductor's ack, or None."""
        with self._report_lock:
            self.scans += 1
            full = (full or self._full_requested or
                    self.scans % self.conf.agent.full_report_every == 0)
            entries = self.scan()
            hashes = {e['driver']: entry_hash(e) for e in entries}
            to_send = [e for e in entries if full or
                       hashes[e['driver']] != self.acked.get(e['driver'])]
            nodes = self.numa_nodes()
            nodes_hash = entry_hash(nodes)
            if nodes is None or (not full and
                                 nodes_hash == self.acked.get(NUMA_KEY)):
                nodes = None
            if not to_send and nodes is None:
                return None
            try:
                ack = self.conductor.report(context.get_admin_context(),
                                            self.host, to_send,
                                            numa_nodes=nodes)
            except exception.InvalidReport as exc:
                LOG.error('The conductor rejected our report: %s', exc)
                metrics.AGENT_REPORTS.labels('failed').inc()
                return None
            except Exception as exc:
                LOG.warning('Report not acknowledged (%s: %s); it is sent '
                            'again after the next scan',
                            type(exc).__name__, exc)
                metrics.AGENT_REPORTS.labels('failed').inc()
                return None
            metrics.AGENT_REPORTS.labels(
                'changed' if (ack or {}).get('changed', True)
                else 'unchanged').inc()
            for entry in to_send:
                self.acked[entry['driver']] = hashes[entry['driver']]
            if nodes is not None:
                self.acked[NUMA_KEY] = nodes_hash
            if full:
                self._full_requested = False
            return ack

    # --- lifecycle -----------------------------------------------------

    def start(self):
        self._start_rpc_loop(rpc.AGENT_TOPIC, [self], 'agent-discovery')
        self._heartbeat_thread = threading.Thread(
            target=self._heartbeat_loop, name='agent-heartbeat',
            daemon=True)
        self._heartbeat_thread.start()
        if self.kubelet_plugin is not None:
            self.kubelet_plugin.start()
        LOG.info('Agent on %s started (release %s) with drivers %s',
                 self.host, version.VERSION,
                 ', '.join(d.name for d in self.drivers) or '(none)')

    def stop(self, drain_jobs=True):
        """Stop RPC and discovery; wait for running programming jobs and
        cleaning tries.

        ``drain_jobs=False`` leaves them as a killed agent would: cut off
        from the conductor (see agent/programming.py, agent/cleaning.py).
        """
        if self.kubelet_plugin is not None:
            self.kubelet_plugin.stop()
        self._stop_rpc_loop()
        if self._heartbeat_thread is not None:
            self._heartbeat_thread.join()
            self._heartbeat_thread = None
        self.jobs.stop(drain=drain_jobs)
        self.cleaner.stop(drain=drain_jobs)
        LOG.info('Agent on %s stopped', self.host)

    def _loop(self):
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                self.announce_start()
                self.report_once()
            except Exception:
                # NOTE: the loop is the agent; it must outlive any bug.
                LOG.exception('Discovery cycle failed')
            self._wake.wait(self.conf.agent.report_interval)
