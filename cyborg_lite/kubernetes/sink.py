"""The Kubernetes sink: keeps each Kubernetes host's ResourceSlices in line
with the database (an InventorySink, see inventory/sink.py).

Enabled by ``kubernetes`` in [conductor]inventory_sinks; the hosts it
publishes are [kubernetes]hosts, each as the Node [kubernetes]node_names
maps it to (its own name by default). ``publish(hostname)`` reads the
host's Kubernetes view (kubernetes/view.of_host) and lets
slice_sync.SliceSync write the difference: an unchanged host
costs one list and no write. Trouble with the API marks the host
pending; ``retry_pending`` tries again with a doubling backoff
([placement]sync_retry_* intervals, shared by every sink). An apiserver
that cannot be reached is logged by k8s_client.OUTAGE, once per outage.

Availability is decided once, by inventory/views.unavailable_reasons
(see kubernetes/view.py for how reasons become taints).

Started (``start()``, by the conductor), it watches our slices and
publishes a host again when someone else deletes or changes them, as the
kubelet does when it wipes a node's slices (kubernetes/slice_watch.py,
kubernetes/resync.py).
"""
import dataclasses
import time

from oslo_log import log as logging

from cyborg_lite.db import agents as agents_db
from cyborg_lite.db import devices as devices_db
from cyborg_lite.inventory import sink as inventory_sink
from cyborg_lite.kubernetes import claim_events
from cyborg_lite.kubernetes import client as k8s_client
from cyborg_lite.kubernetes import resync
from cyborg_lite.kubernetes import slice_sync
from cyborg_lite.kubernetes import slice_watch
from cyborg_lite.kubernetes import slices
from cyborg_lite.kubernetes import view as k8s_view

LOG = logging.getLogger(__name__)
# Seconds from a change by someone else to the sync it causes: the events
# of one DeleteCollection come together.
RESYNC_DELAY = 1.0


def _agent_beat(hostname):
    """(state, last heartbeat) of the host's agent; None without a row."""
    row = agents_db.get(hostname)
    return None if row is None else (row.state, row.heartbeat_at)


@dataclasses.dataclass
class SliceSyncResult(inventory_sink.PublishResult):
    sync: slice_sync.SyncResult | None = None


class KubernetesSink(inventory_sink.InventorySink):

    def __init__(self, api_client, conf, clock=time.monotonic, db_url=None,
                 resync_delay=RESYNC_DELAY):
        group = conf.kubernetes
        self.conf = conf
        self.hosts = frozenset(group.hosts)
        self.db_url = db_url
        self.api_client = api_client
        self.sync = slice_sync.SliceSync(
            api_client, group.driver_name, group.publish_taints,
            group.api_conflict_retries,
            numa_node_list=group.numa_node_list,
            shared_counters=group.shared_counters,
            binding_conditions=group.binding_conditions)
        self._pending = inventory_sink.PendingHosts(
            conf.placement.sync_retry_initial_interval,
            conf.placement.sync_retry_max_interval, clock)
        self.resync_delay = resync_delay
        self._watching = None
        self.claims = claim_events.ClaimExplainer(
            api_client, group.driver_name, conf.host)

    def explain_claims(self):
        """Post an Event on each pending claim our devices cannot serve
        (kubernetes/claim_events.py): a periodic task of every conductor,
        once per claim version whichever posts it. Quiet while the
        apiserver is unreachable (its outage is logged by the sync)."""
        try:
            return self.claims.run_once()
        except Exception as e:
            if k8s_client.is_outage(e):
                return []
            raise

    def start(self):
        """Watch our slices and publish a host again when someone else
        deletes or changes its slices (the kubelet's wipe)."""
        if self._watching is not None or not self.hosts:
            return
        by_node = {k8s_view.node_name(self.conf, h): h for h in self.hosts}
        resyncs = resync.Resyncs(self.publish, _agent_beat,
                                 self.resync_delay).start()
        watch = slice_watch.SliceWatch(
            self.api_client, self.sync.driver_name, by_node,
            lambda node: resyncs.changed(by_node[node]),
            self.sync.own).start()
        self._watching = (watch, resyncs)

    def stop(self):
        if self._watching is not None:
            for part in self._watching:
                part.stop()
            self._watching = None

    @classmethod
    def from_conf(cls, conf, **kwargs):
        if not conf.kubernetes.hosts:
            LOG.warning('[kubernetes]hosts is empty: no host is published '
                        'to Kubernetes')
            return None
        return cls(k8s_client.new_api_client(conf.kubernetes.kubeconfig),
                   conf, **kwargs)

    def publish(self, hostname):
        if hostname not in self.hosts:
            return SliceSyncResult(hostname, ok=True)
        try:
            result = self.sync.sync(k8s_view.of_host(
                self.conf, devices_db.load_inventory(hostname, self.db_url)))
        except (k8s_client.KubernetesApiError, slices.InvalidSlice) as e:
            if isinstance(e, k8s_client.KubernetesUnreachable):
                # NOTE: every host fails alike while it lasts: said once.
                k8s_client.OUTAGE.failed(e)
            else:
                LOG.warning('ResourceSlices of %s not published: %s',
                            hostname, e)
            self._pending.failed(hostname)
            return SliceSyncResult(hostname, ok=False, error=str(e))
        k8s_client.OUTAGE.succeeded()
        self._pending.clear(hostname)
        if result.writes:
            LOG.info('ResourceSlices of %s: %d created, %d updated, %d '
                     'deleted (pool generation %d)', hostname,
                     result.created, result.updated, result.deleted,
                     result.generation)
        return SliceSyncResult(hostname, ok=True, sync=result)

    def retry_pending(self):
        return [self.publish(h) for h in self._pending.due()]

    def pending_hosts(self):
        return self._pending.as_dict()
