"""Publishing hosts' inventory to the configured sinks.

The sinks are those [conductor]inventory_sinks names, loaded with
stevedore from the ``cyborg_lite.inventory_sinks`` entry points (see
inventory/sink.py for the interface)::

    publisher = Publisher.from_conf(CONF)
    publisher.publish_host('node1')  # after a report, job or clean
                                     # changed the host
    publisher.publish('node1')       # the same, its requests left alone
    publisher.retry_pending()        # periodic
    publisher.publish_requested()    # hosts db/publish_requests holds

A change of what a host offers commits with a publish request
(db/publish_requests.py); ``publish_host`` deletes the host's requests
once every sink has it, so those of a conductor killed before publishing
are served by another's ``publish_requested``.

A sink that is named but not configured (Placement without [placement])
is left out with a warning; a name with no entry point stops the
conductor at start with a ConfigError.
"""
import datetime
import threading
import time

from oslo_log import log as logging
from stevedore import driver as stevedore_driver
from stevedore import exception as stevedore_exc

from cyborg_lite.common import exception
from cyborg_lite.common import uuids
from cyborg_lite.db import publish_requests
from cyborg_lite.inventory import sink as inventory_sink
from cyborg_lite.metrics import counted as metrics

LOG = logging.getLogger(__name__)


def load_sink_class(name):
    try:
        return stevedore_driver.DriverManager(
            inventory_sink.NAMESPACE, name, invoke_on_load=False).driver
    except stevedore_exc.NoMatches:
        raise exception.ConfigError(
            reason='[conductor]inventory_sinks names %r, which is no entry '
                   'point of %s' % (name, inventory_sink.NAMESPACE))


class Publisher:
    """Publishes to every sink; one sink's failure never stops another."""

    def __init__(self, sinks, trust_own_publish=True):
        self.sinks = list(sinks)
        self.trust_own_publish = trust_own_publish
        # Who serves publish requests, as db/publish_requests records it:
        # one per process (a restarted conductor remembers nothing).
        self.id = uuids.uuid4().hex
        self._requests = threading.Condition()
        self._serving = False
        self._asked_again = False
        # Passes over the requests begun and ended (publish_requested).
        self._passes_begun = self._passes_ended = 0

    @classmethod
    def from_conf(cls, conf):
        sinks = [load_sink_class(name).from_conf(conf)
                 for name in conf.conductor.inventory_sinks]
        return cls((s for s in sinks if s is not None),
                   trust_own_publish=conf.conductor.trust_own_publish)

    def __bool__(self):
        return bool(self.sinks)

    def start(self):
        """Start the sinks' background work (the Kubernetes sink's watch)."""
        for sink in self.sinks:
            sink.start()

    def stop(self):
        for sink in self.sinks:
            sink.stop()

    def publish(self, hostname, known=False, finished=None):
        """Publish ``hostname`` to each sink (``known``: with
        ``publish_known``); their results, each counted in the sinks'
        metrics. ``finished``: a list to which the time each sink was
        done is appended."""
        results = []
        for sink in self.sinks:
            results.append(self._timed(sink, sink.publish_known if known
                                       else sink.publish, hostname))
            if finished is not None:
                finished.append(_utcnow())
        return results

    def _timed(self, sink, method, hostname):
        began = time.monotonic()
        result = self._safely(sink, method, hostname)
        name = sink_name(sink)
        if result is None:
            outcome = 'failed'
        elif getattr(result, 'converged', False):
            outcome = 'converged'
        else:
            outcome = 'pending'
        if outcome != 'converged':
            metrics.SINK_SYNC_ERRORS.labels(name).inc()
        metrics.observe(metrics.PUBLISH_DURATION, time.monotonic() - began,
                        name, outcome)
        return result

    def publish_host(self, hostname):
        """Publish ``hostname`` to each sink, then delete its publish
        requests up to the newest one before (each sink reads the host
        after that) once every sink has converged; their results. (A
        host whose removed providers still hold allocations keeps its
        requests, so a conductor restarted meanwhile deletes them once
        freed.)

        When this publisher served the host last and at most the change
        at hand is pending, nobody else has published the host since:
        each sink is asked to ``publish_known``, trusting what it
        remembers of its consumer (db/publish_requests.state)."""
        try:
            known = publish_requests.state(hostname)
            mine = (self.trust_own_publish and known.pending <= 1 and
                    known.publisher == self.id)
            finished = []
            results = self.publish(hostname, known=mine, finished=finished)
            if known.last_id is not None and converged(results):
                publish_requests.served(hostname, known.last_id, self.id)
                self._observe_lag(known.oldest_at, finished)
        except exception.DatabaseUnavailable:
            # NOTE: said once by db/sql/session.py; the requests stay for the
            # periodic task.
            return [None] * len(self.sinks)
        return results

    def _observe_lag(self, changed_at, finished):
        """Each sink's lag behind the change at ``changed_at`` (the
        host's oldest publish request): once, when every sink has it."""
        if changed_at is None:
            return
        for sink, done_at in zip(self.sinks, finished):
            metrics.observe(metrics.PUBLISH_LAG,
                            (done_at - changed_at).total_seconds(),
                            sink_name(sink))

    def retry_pending(self):
        results = []
        for sink in self.sinks:
            results.extend(self._safely(sink, sink.retry_pending) or [])
        return results

    def publish_requested(self, wait=0.0):
        """Publish every host with publish requests (db/publish_requests)
        and delete the requests each sink then has; the hosts served.

        A host whose publish failed keeps its requests for the next call.
        Called from several threads (periodic task, RPC workers) at once,
        one serves and the others ask it to look again, so a request added
        while it runs is never missed and no host is published twice at
        once by this conductor. A caller that answers for the change it
        requested (a claim prepared) passes ``wait``: it returns once a
        pass begun after its call has ended (at most ``wait`` seconds),
        not while the serving thread may still be publishing what it read
        before the change.
        """
        deadline = time.monotonic() + wait
        with self._requests:
            self._asked_again = True
            seen_by = self._passes_begun + 1     # the next pass sees it
            while self._serving:
                left = deadline - time.monotonic()
                if self._passes_ended >= seen_by or left <= 0:
                    return []
                self._requests.wait(left)
            if self._passes_ended >= seen_by:
                return []
            # NOTE: no thread serves: this one does (the one before ended,
            # or failed before the pass that would see this call ended).
            self._asked_again = self._serving = True
        return self._serve_while_asked()

    def _serve_while_asked(self):
        served = []
        try:
            while True:
                with self._requests:
                    if not self._asked_again:
                        # NOTE: decided under the lock, so a caller that
                        # asks after this line serves itself.
                        self._serving = False
                        self._requests.notify_all()
                        return served
                    self._asked_again = False
                    self._passes_begun += 1
                served.extend(self._serve_requests())
                with self._requests:
                    self._passes_ended += 1
                    self._requests.notify_all()
        except BaseException:
            with self._requests:
                self._serving = False
                self._requests.notify_all()
            raise

    def _serve_requests(self):
        served = []
        for hostname, last_id in publish_requests.pending().items():
            results = self.publish(hostname)
            if converged(results):
                publish_requests.served(hostname, last_id, self.id)
                served.append(hostname)
        return served

    @staticmethod
    def _safely(sink, method, *args):
        # NOTE: a sink reports its consumer's trouble in its results; what
        # raises is a bug or the database, and must not hide the others.
        try:
            return method(*args)
        except exception.DatabaseUnavailable:
            # NOTE: db/sql/session.py's outage log has said it, once; the
            # publish request stays pending and is served after it.
            return None
        except Exception:
            LOG.exception('Inventory sink %s failed', type(sink).__name__)
            return None


def sink_name(sink):
    """The sink's label in the metrics: its entry point's name."""
    return getattr(sink, 'NAME', None) or type(sink).__name__.lower(
        ).replace('sink', '')


def _utcnow():
    # Naive UTC, as the publish requests' created_at.
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def converged(results):
    """Whether every sink's result of a publish says it converged."""
    return all(r is not None and r.converged for r in results)
