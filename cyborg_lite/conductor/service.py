"""The conductor process: its RPC server and its periodic tasks.

Other workflows register their background work (reapers, retries) with
``add_periodic`` before or after ``start()``::

    service = ConductorService(conf, host='cond1')
    service.add_periodic(reap_dead_jobs, interval=30, run_immediately=True)
    service.start()
    ...
    service.stop()      # stops RPC, lets a running task finish, joins

A periodic task is called with no arguments; an exception it raises is
logged and the task runs again at its next time (a database outage is
logged by db/sql/session.py's outage log instead, once, not by every task).
"""
import functools
import threading
from concurrent import futures
import time

from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.common import version
from cyborg_lite.conductor import bind_wait
from cyborg_lite.conductor import cleaning
from cyborg_lite.conductor import liveness
from cyborg_lite.conductor import manager as conductor_manager
from cyborg_lite.conductor import programming
from cyborg_lite.conductor import publishing
from cyborg_lite.conf import CONF
from cyborg_lite.db import device_history
from cyborg_lite.db import services as services_db
from cyborg_lite.kubernetes import sink as k8s_sink
from cyborg_lite.rpc import server_loop as rpc_loop
from cyborg_lite.rpc import transport as rpc
from cyborg_lite.rpc import versions as rpc_versions

LOG = logging.getLogger(__name__)


class _Task:
    def __init__(self, func, interval, next_run):
        self.func = func
        self.name = getattr(func, '__qualname__', repr(func))
        self.interval = interval
        self.next_run = next_run


class ConductorService(rpc_loop.RpcLoop):

    def __init__(self, conf=CONF, host=None, manager=None):
        self.conf = conf
        self.host = host or conf.host
        self._tasks = []
        self._lock = threading.Lock()
        # _wake is also set when a task is added: the loop recomputes its
        # sleep.
        self._init_rpc_loop()
        self._after_reply = None
        if manager is None:
            publisher = self._publisher()
            # NOTE: each change committed a publish request; publish_host
            # serves it (one left by a conductor killed before publishing
            # is served by the periodic publish_requested below).
            publish = publisher.publish_host if publisher else None
            manager = conductor_manager.ConductorManager(
                self.host, after_report=publish,
                programming=programming.ProgrammingFlow(
                    after_success=publish),
                publisher=publisher,
                cleaning=cleaning.CleaningFlow(after_change=publish,
                                               conf=conf),
                after_reply=self.after_reply)
        self.manager = manager
        # Any conductor may end any bind left behind by a dead one.
        # (Binds waiting for a warm region first: resumed, or fallen back.)
        self.add_periodic(functools.partial(
            bind_wait.reap,
            programmer=getattr(manager, 'bind_programmer', None),
            publish=functools.partial(manager.publish_requested, None)),
            interval=conf.arq.reap_interval)
        # Hosts whose offer changed outside a report, left by a conductor
        # that died before publishing them or by the API.
        self.add_periodic(manager.publisher.publish_requested)
        # Hosts whose agent went silent are marked down (by one of us).
        self._silence = liveness.SilenceWatch(
            manager.publisher, conf.conductor.agent_down_time,
            conf.conductor.periodic_interval)
        self.add_periodic(self._silence.run)
        # Jobs whose agent went silent are failed or sent again.
        self.add_periodic(manager.programming.reap_and_redispatch,
                          interval=conf.programming.reap_interval)
        # Cleaning tries likewise, and releases whose cast was lost.
        self.add_periodic(manager.cleaning.reap_and_redispatch,
                          interval=conf.cleaning.reap_interval)
        # Old history rows go, by age and per device by count.
        self.add_periodic(self.prune_history,
                          interval=conf.device_history.prune_interval)
        # Which release this conductor runs, at the agents' pace (one
        # [conductor]agent_down_time tells each kind's silence).
        self.add_periodic(self.heartbeat,
                          interval=conf.agent.heartbeat_interval,
                          run_immediately=True)

    def heartbeat(self):
        services_db.beat('conductor', self.host, version.VERSION,
                         rpc_versions.spoken())

    def prune_history(self):
        history = self.conf.device_history
        deleted = device_history.prune(history.max_age_days,
                                       history.max_rows_per_device)
        if deleted:
            LOG.info('Pruned %d device history rows', deleted)
        return deleted

    def _publisher(self):
        """The configured sinks; failed publishes are retried
        periodically. Empty (false) when no sink is configured."""
        publisher = publishing.Publisher.from_conf(self.conf)
        if publisher:
            self.add_periodic(publisher.retry_pending)
        for sink in publisher.sinks if publisher else ():
            # The Kubernetes sink: why a pending claim gets none of ours.
            if hasattr(sink, 'explain_claims'):
                self.add_periodic(sink.explain_claims)
        return publisher

    def add_periodic(self, func, interval=None, run_immediately=False):
        """Run ``func()`` every ``interval`` seconds (default
        [conductor]periodic_interval) until the service stops."""
        interval = interval or self.conf.conductor.periodic_interval
        first = time.monotonic() + (0 if run_immediately else interval)
        with self._lock:
            self._tasks.append(_Task(func, interval, first))
        self._wake.set()

    def after_reply(self, func):
        """Run ``func()`` soon, after the RPC call that asked it answered:
        one at a time, in order, on the after-reply thread (at once when
        the service is not running). Lost with the process: each such
        work has a periodic task that redoes it."""
        worker = self._after_reply
        if worker is None:
            _logged(func)
            return
        try:
            worker.submit(_logged, func)
        except RuntimeError:   # stopped meanwhile
            _logged(func)

    def start(self):
        self._after_reply = futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix='conductor-after-reply')
        self.manager.publisher.start()
        sink = next((s for s in self.manager.publisher.sinks
                     if isinstance(s, k8s_sink.KubernetesSink)), None)
        if sink is not None and self.conf.kubernetes.binding_conditions:
            self.manager.watch_claims(sink.api_client)
        self._start_rpc_loop(rpc.CONDUCTOR_TOPIC, [self.manager],
                             'conductor-periodic')
        LOG.info('Conductor %s started (release %s, topic %s)', self.host,
                 version.VERSION, rpc.CONDUCTOR_TOPIC)

    def stop(self):
        """Stop taking RPC calls, finish those in flight, end the loop."""
        self._stop_rpc_loop()
        # NOTE: after the RPC server: the calls it finished may have
        # queued work; it runs before the stop ends.
        worker, self._after_reply = self._after_reply, None
        if worker is not None:
            worker.shutdown(wait=True)
        self.manager.stop_watching_claims()
        self.manager.publisher.stop()
        LOG.info('Conductor %s stopped', self.host)

    def _due(self):
        now = time.monotonic()
        with self._lock:
            due = [t for t in self._tasks if t.next_run <= now]
            pending = [t.next_run for t in self._tasks if t.next_run > now]
        return due, (min(pending) - now if pending else None)

    def _loop(self):
        while not self._stopping.is_set():
            # NOTE: cleared before looking, so a task added meanwhile
            # leaves it set and the wait below returns at once.
            self._wake.clear()
            due, wait = self._due()
            for task in due:
                if self._stopping.is_set():
                    return
                self._run(task)
            if not due:
                self._wake.wait(wait)

    @staticmethod
    def _run(task):
        _logged(task.func, 'Periodic task %s' % task.name)
        # NOTE: scheduled from the end of the run, so a slow task is never
        # started again while it is still running or queued back to back.
        task.next_run = time.monotonic() + task.interval


def _logged(func, what=None):
    """``func()``; what it raises is logged as ``what``'s failure (a
    database outage not: db/sql/session.py's outage log said it once)."""
    try:
        func()
    except exception.DatabaseUnavailable:
        pass
    except Exception:
        LOG.exception('%s failed', what or 'After-reply work %s' % (
            getattr(func, '__qualname__', None) or func))
