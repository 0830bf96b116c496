"""Keeps Placement in line with the database, host by host.

Public API (all the conductor needs)::

    sync = PlacementSync.from_conf(CONF)   # or PlacementSync(client, conf)
    # from_conf remembers providers by generation (cache_providers=True):
    # an unchanged provider is not read again; see placement/reporter.py.
    result = sync.sync_host(hostname)      # after each applied report
    sync.retry_pending()                   # from a periodic task
    sync.pending_hosts()                   # {hostname: due monotonic time}

``sync_host`` never raises for Placement trouble (database errors do
propagate): the report is already
in the DB, so a failure only marks the host pending and returns a
``SyncResult`` with ``ok=False``. ``retry_pending`` re-syncs pending hosts
whose backoff (``[placement]sync_retry_initial_interval``, doubling up to
``sync_retry_max_interval``) has passed. A host whose removed providers
still hold allocations also stays pending, so they are deleted once freed.

For a noauth Placement (``auth_strategy = noauth2``) configure::

    [placement]
    auth_type = admin_token
    token = admin
    endpoint_override = http://127.0.0.1:PORT
"""
import dataclasses
import threading
import time

from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.db import placement_view
from cyborg_lite.placement import client as client_mod
from cyborg_lite.placement import reporter as reporter_mod

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class SyncResult:
    hostname: str
    ok: bool
    error: str | None = None
    report: reporter_mod.SyncReport | None = None

    @property
    def converged(self):
        """True when Placement now matches the DB with nothing held."""
        return self.ok and not self.report.held


@dataclasses.dataclass
class _Pending:
    failures: int
    due: float


class PlacementSync:
    def __init__(self, client, conf, clock=time.monotonic, db_url=None,
                 cache_providers=False):
        self.client = client
        self.conf = conf
        self.clock = clock
        self.db_url = db_url
        self.reporter = reporter_mod.Reporter(
            client, conf.placement.sync_conflict_retries,
            cache=cache_providers)
        self._pending = {}
        self._lock = threading.Lock()

    @classmethod
    def from_conf(cls, conf, **kwargs):
        """The conductor's sync: remembers providers by generation (see
        placement/reporter.py) unless ``cache_providers=False``."""
        kwargs.setdefault('cache_providers', True)
        return cls(client_mod.PlacementClient.from_conf(conf), conf,
                   **kwargs)

    def sync_host(self, hostname):
        """Push the DB's view of ``hostname`` to Placement; a SyncResult."""
        try:
            devices = placement_view.host_devices(hostname, self.db_url)
            report = self.reporter.sync(
                hostname, devices,
                create_root=self.conf.placement.create_compute_node_rp)
        except exception.PlacementError as exc:
            self._failed(hostname, exc)
            return SyncResult(hostname, ok=False, error=str(exc))
        self._store_rp_uuids(devices, report.tree)
        result = SyncResult(hostname, ok=True, report=report)
        if result.converged:
            self._clear(hostname)
        else:
            self._failed(hostname, 'providers still allocated: %s'
                         % ', '.join(report.held))
        return result

    def retry_pending(self):
        """Sync every pending host whose backoff has passed; the results."""
        now = self.clock()
        with self._lock:
            due = [h for h, p in self._pending.items() if p.due <= now]
        return [self.sync_host(h) for h in sorted(due)]

    def pending_hosts(self):
        with self._lock:
            return {h: p.due for h, p in self._pending.items()}

    def _failed(self, hostname, why):
        if isinstance(why, exception.PlacementUnavailable):
            LOG.warning('Placement sync of %s deferred: %s', hostname, why)
        else:
            LOG.error('Placement sync of %s incomplete: %s', hostname, why)
        with self._lock:
            failures = self._pending.get(hostname, _Pending(0, 0)).failures
            self._pending[hostname] = _Pending(
                failures + 1, self.clock() + self._backoff(failures))

    def _backoff(self, failures):
        opts = self.conf.placement
        return min(opts.sync_retry_initial_interval * (2 ** failures),
                   opts.sync_retry_max_interval)

    def _clear(self, hostname):
        with self._lock:
            self._pending.pop(hostname, None)

    def _store_rp_uuids(self, devices, tree):
        # Open a write transaction only when a stored value is stale.
        stored = {d.uuid: d.rp_uuid for d in devices}
        stored.update({dep.uuid: dep.rp_uuid for d in devices
                       for dep in d.deployables})
        wanted = dict(tree.device_rps, **tree.deployable_rps)
        if any(stored.get(u) != rp for u, rp in wanted.items()):
            placement_view.store_rp_uuids(tree.device_rps,
                                          tree.deployable_rps, self.db_url)
