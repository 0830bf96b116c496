"""The Kubernetes sink: keeps each Kubernetes host's ResourceSlices in line
with the database (an InventorySink, see objects/inventory_sink.py).

Enabled by ``kubernetes`` in [conductor]inventory_sinks; the hosts it
publishes are [kubernetes]hosts, each as the Node [kubernetes]node_names
maps it to (its own name by default). ``publish(hostname)`` reads the
neutral view (objects/host_inventory.load), maps it (``k8s_inventory``)
and lets slice_sync.SliceSync write the difference: an unchanged host
costs one list and no write. Trouble with the API marks the host
pending; ``retry_pending`` tries again with a doubling backoff
([placement]sync_retry_* intervals, shared by every sink).

Availability is decided once, by objects/host_inventory.unavailable_reasons:
every reason becomes a taint, except ``kubernetes_claimed`` (the claim
Kubernetes itself allocated), and a region an ARQ holds gets
``in-use=nova``.
"""
import dataclasses
import time

from oslo_log import log as logging

from cyborg_lite.common import k8s_client
from cyborg_lite.common import naming
from cyborg_lite.kubernetes import inventory
from cyborg_lite.kubernetes import slice_sync
from cyborg_lite.kubernetes import slices
from cyborg_lite.objects import host_inventory
from cyborg_lite.objects import inventory_sink

LOG = logging.getLogger(__name__)

NAME = 'kubernetes'
# Kubernetes' own allocation: not a reason to hide the device from it.
OWN_REASON = 'kubernetes_claimed'


@dataclasses.dataclass
class SliceSyncResult(inventory_sink.PublishResult):
    sync: slice_sync.SyncResult | None = None


def node_name(conf, hostname):
    """The Node (and pool) name of ``hostname``."""
    return conf.kubernetes.node_names.get(hostname, hostname)


def _bound_to_nova(deployable):
    return any(h.in_use and h.k8s_claim is None
               for h in deployable.attach_handles)


def _deployable(hostname, device, dep):
    reasons = tuple(r for r in host_inventory.unavailable_reasons(device, dep)
                    if r != OWN_REASON)
    return inventory.Deployable(
        uuid=dep.uuid, name=_name_in_device(hostname, device, dep),
        resource_class=dep.resource_class or '',
        region_type=dep.region_type, function_id=dep.function_id,
        bitstream_id=dep.bitstream_id, local_memory_mb=dep.local_memory_mb,
        unavailable=reasons, bound_to_nova=_bound_to_nova(dep))


def _name_in_device(hostname, device, dep):
    """The deployable's name as its driver reported it (the report stores
    naming.deployable_db_name), so device names stay short."""
    prefix = naming.device_rp_name(hostname, device.identity) + '_'
    if dep.name.startswith(prefix) and len(dep.name) > len(prefix):
        return dep.name[len(prefix):]
    return dep.name


def k8s_inventory(view, node):
    """kubernetes.inventory.HostInventory of an objects HostInventory."""
    devices = tuple(inventory.Device(
        uuid=d.uuid, type=d.type, vendor=d.vendor, model=d.model,
        identity=d.identity, pci_address=d.pci_address,
        programmable=any(dep.region_type for dep in d.deployables),
        deployables=tuple(_deployable(view.hostname, d, dep)
                          for dep in d.deployables))
        for d in view.devices)
    return inventory.HostInventory(view.hostname, node, devices)


def load(conf, hostname, db_url=None):
    """The Kubernetes view of ``hostname`` as the database has it now."""
    return k8s_inventory(host_inventory.load(hostname, db_url),
                         node_name(conf, hostname))


class KubernetesSink(inventory_sink.InventorySink):

    def __init__(self, api_client, conf, clock=time.monotonic, db_url=None):
        group = conf.kubernetes
        self.conf = conf
        self.hosts = frozenset(group.hosts)
        self.db_url = db_url
        self.sync = slice_sync.SliceSync(
            api_client, group.driver_name, group.publish_taints,
            group.api_conflict_retries)
        self._pending = inventory_sink.PendingHosts(
            conf.placement.sync_retry_initial_interval,
            conf.placement.sync_retry_max_interval, clock)

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
            result = self.sync.sync(load(self.conf, hostname, self.db_url))
        except (k8s_client.KubernetesApiError, slices.InvalidSlice) as e:
            LOG.warning('ResourceSlices of %s not published: %s', hostname, e)
            self._pending.failed(hostname)
            return SliceSyncResult(hostname, ok=False, error=str(e))
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
