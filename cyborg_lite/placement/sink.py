"""The Placement sink: keeps Placement in line with the database, host by
host (an InventorySink, see inventory/sink.py).

Public API (all the conductor needs)::

    sink = PlacementSink.from_conf(CONF)   # or PlacementSink(client, conf)
    # from_conf remembers providers by generation (cache_providers=True):
    # an unchanged provider is not read again; see placement/reporter.py.
    result = sink.publish(hostname)        # after each applied report
    result = sink.publish_known(hostname)  # the same, when this conductor
                                           # published the host last
    sink.retry_pending()                   # from a periodic task
    sink.pending_hosts()                   # {hostname: due monotonic time}

``publish`` translates the host's inventory (inventory/views.py)
into a provider tree (placement/tree.py) and makes Placement match
it. It never raises for Placement trouble (database errors do
propagate): the report is already in the DB, so a failure only marks the
host pending and returns a ``SyncResult`` with ``ok=False``.
``retry_pending`` re-syncs pending hosts whose backoff
(``[placement]sync_retry_initial_interval``, doubling up to
``sync_retry_max_interval``) has passed. A host whose removed providers
still hold allocations also stays pending, so they are deleted once freed.

For a noauth Placement (``auth_strategy = noauth2``) configure::

    [placement]
    auth_type = admin_token
    token = admin
    endpoint_override = http://127.0.0.1:PORT
"""
import dataclasses
import time

from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import inventory as inventory_db
from cyborg_lite.db import placement_providers
from cyborg_lite.inventory import sink as inventory_sink
from cyborg_lite.placement import client as client_mod
from cyborg_lite.placement import reporter as reporter_mod
from cyborg_lite.placement import tree as tree_mod

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class SyncResult(inventory_sink.PublishResult):
    report: reporter_mod.SyncReport | None = None

    @property
    def converged(self):
        """True when Placement now matches the DB with nothing held."""
        return self.ok and not self.report.held


class PlacementSink(inventory_sink.InventorySink):
    FRESHNESS_ROUNDS = 3

    def __init__(self, client, conf, clock=time.monotonic, db_url=None,
                 cache_providers=False):
        self.client = client
        self.conf = conf
        self.clock = clock
        self.db_url = db_url
        self.reporter = reporter_mod.Reporter(
            client, conf.placement.sync_conflict_retries,
            cache=cache_providers, records=self._records(conf, db_url),
            numa_layer=conf.placement.numa_providers)
        self._pending = inventory_sink.PendingHosts(
            conf.placement.sync_retry_initial_interval,
            conf.placement.sync_retry_max_interval, clock)

    @staticmethod
    def _records(conf, db_url):
        """The providers' records every conductor keeps, unless conductors
        that do not keep them may run ([conductor]trust_own_publish)."""
        if not conf.conductor.trust_own_publish:
            return None
        return placement_providers.Store(db_url)

    @classmethod
    def from_conf(cls, conf, **kwargs):
        """The conductor's sink: remembers providers by generation (see
        placement/reporter.py) unless ``cache_providers=False``. None when
        [placement] is not configured."""
        if conf.placement.auth_type is None:
            LOG.warning('[placement]auth_type is not set: devices are kept '
                        'in the database only, not offered to schedulers')
            return None
        kwargs.setdefault('cache_providers', True)
        return cls(client_mod.PlacementClient.from_conf(conf), conf,
                   **kwargs)

    def publish(self, hostname):
        """Push the DB's view of ``hostname`` to Placement; a SyncResult."""
        return self._publish(hostname, known=False)

    def publish_known(self, hostname):
        """``publish``, trusting the providers remembered from this sink's
        last publish of the host (placement/reporter.py, ``known``):
        without reading the tree back, when they are all remembered."""
        return self._publish(hostname, known=True)

    def _publish(self, hostname, known):
        try:
            inventory, report = self._sync_current(hostname, known)
        except exception.PlacementError as exc:
            self._failed(hostname, exc)
            return SyncResult(hostname, ok=False, error=str(exc))
        self._store_rp_uuids(inventory.devices, report.tree)
        if report.stale:
            self._failed(hostname, 'the host kept changing while it was '
                         'published')
            return SyncResult(hostname, ok=False, report=report,
                              error='the host kept changing')
        result = SyncResult(hostname, ok=True, report=report)
        if result.converged:
            self._pending.clear(hostname)
        else:
            self._failed(hostname, 'providers still allocated: %s'
                         % ', '.join(report.held))
        return result

    def _sync_current(self, hostname, known=False):
        """Sync until what was written is still what the database says.

        Another conductor may publish the same host at the same time, from
        a newer read (a bind committed in between): written after its
        write, ours would leave Placement stale with nobody left to fix
        it. So after writing, the host is read again, and written again if
        its tree changed meanwhile (rounds bounded: a host that never stops
        changing is retried later). A round whose writes were all
        ``guarded`` (placement/reporter.SyncReport) needs no second read:
        Placement refused any of them that came after a newer one.
        """
        read = [None]

        def read_devices():
            read[0] = devices_db.load_inventory(hostname, self.db_url,
                                                previous=read[0])
            return read[0].devices

        for _round in range(self.FRESHNESS_ROUNDS):
            # NOTE: only the first round may trust what is remembered: a
            # host that changed meanwhile may have been published by
            # another conductor.
            report = self.reporter.sync(
                hostname, read_devices,
                create_root=self.conf.placement.create_compute_node_rp,
                known=known and _round == 0)
            inventory = read[0]
            if report.guarded:
                return inventory, report
            now = devices_db.load_inventory(hostname, self.db_url,
                                            previous=inventory)
            report.stale = now is not inventory and tree_mod.build_tree(
                hostname, report.root_uuid, now.devices,
                report.tree.numa_layer) != report.tree
            if not report.stale:
                return now, report
            LOG.info('Host %s changed while it was published; again',
                     hostname)
            read[0] = now
        return read[0], report

    def retry_pending(self):
        """Sync every pending host whose backoff has passed; the results."""
        return [self.publish(h) for h in self._pending.due()]

    def pending_hosts(self):
        return self._pending.as_dict()

    def _failed(self, hostname, why):
        if isinstance(why, exception.PlacementUnavailable):
            LOG.warning('Placement sync of %s deferred: %s', hostname, why)
        else:
            LOG.error('Placement sync of %s incomplete: %s', hostname, why)
        self._pending.failed(hostname)

    def _store_rp_uuids(self, devices, tree):
        # Open a write transaction only when a stored value is stale.
        stored = {d.uuid: d.rp_uuid for d in devices}
        stored.update({dep.uuid: dep.rp_uuid for d in devices
                       for dep in d.deployables})
        wanted = dict(tree.device_rps, **tree.deployable_rps)
        if any(stored.get(u) != rp for u, rp in wanted.items()):
            inventory_db.store_rp_uuids(tree.device_rps,
                                        tree.deployable_rps, self.db_url)
