"""Where the conductor publishes a host's desired inventory: a sink.

The database holds what each host offers; a sink makes one consumer see
it. Placement is the first (placement/sink.py: a provider tree); a
Kubernetes ResourceSlice sink is a sibling. The conductor loads the sinks
[conductor]inventory_sinks names, by their entry point in the
``cyborg_lite.inventory_sinks`` namespace, calls ``publish(hostname)``
after each change of what a host offers (a report that changed rows, a
job that changed a region's function, a clean, ...; each also commits a
publish request, see db/publish_requests.py, deleted once every sink's
result has ``converged``), and ``retry_pending()`` periodically.

A sink reads the neutral view (db/devices.load_inventory) and
translates it itself. ``publish`` never raises for trouble on the
consumer's side: the rows are committed whatever it does, so it marks
the host pending and the periodic retry takes it from there.
``PendingHosts`` is that bookkeeping, with a doubling backoff.
"""
import abc
import dataclasses
import threading
import time

NAMESPACE = 'cyborg_lite.inventory_sinks'


@dataclasses.dataclass
class PublishResult:
    """What one publish did. ``converged``: the consumer now shows the
    host's inventory and nothing is left to retry."""
    hostname: str
    ok: bool
    error: str | None = None

    @property
    def converged(self):
        return self.ok


class InventorySink(abc.ABC):
    """Publishes hosts' desired inventory to one consumer."""

    @classmethod
    @abc.abstractmethod
    def from_conf(cls, conf):
        """The sink the configuration describes, or None (after logging
        why) when it is not configured."""

    @abc.abstractmethod
    def publish(self, hostname):
        """Make the consumer show ``hostname``'s inventory as the database
        has it now; a PublishResult. Never raises for the consumer's
        trouble (database errors do propagate)."""

    def publish_known(self, hostname):
        """``publish``, when the caller knows the consumer still shows what
        this sink last published of the host, apart from the change at
        hand (this conductor served the host last, db/publish_requests):
        a sink may trust what it remembers of the consumer instead of
        reading it back first. By default the same as ``publish``."""
        return self.publish(hostname)

    def start(self):
        """Begin the sink's background work, if it has any (the conductor
        calls it when it starts)."""

    def stop(self):
        """End what ``start`` began."""

    @abc.abstractmethod
    def retry_pending(self):
        """Publish again every pending host whose backoff has passed; the
        PublishResults."""

    @abc.abstractmethod
    def pending_hosts(self):
        """{hostname: monotonic time of its next try} of hosts whose last
        publish did not converge."""


@dataclasses.dataclass
class _Pending:
    failures: int
    due: float


class PendingHosts:
    """Hosts to publish again, each after a backoff that doubles with
    every failure, from ``initial`` up to ``maximum`` seconds."""

    def __init__(self, initial, maximum, clock=time.monotonic):
        self.initial = initial
        self.maximum = maximum
        self.clock = clock
        self._pending = {}
        self._lock = threading.Lock()

    def failed(self, hostname):
        with self._lock:
            failures = self._pending.get(hostname, _Pending(0, 0)).failures
            backoff = min(self.initial * (2 ** failures), self.maximum)
            self._pending[hostname] = _Pending(failures + 1,
                                               self.clock() + backoff)

    def clear(self, hostname):
        with self._lock:
            self._pending.pop(hostname, None)

    def due(self):
        """The pending hosts whose backoff has passed, sorted."""
        now = self.clock()
        with self._lock:
            return sorted(h for h, p in self._pending.items() if p.due <= now)

    def as_dict(self):
        with self._lock:
            return {h: p.due for h, p in self._pending.items()}
