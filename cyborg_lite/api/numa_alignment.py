"""Whether a bound ARQ's device sits on a NUMA node of its instance.

Nova shows an instance's NUMA cells, with the host node of each, at
``GET /servers/{id}/topology`` (compute API 2.78; ``host_node`` only to
an admin by default). An ARQ is ``aligned`` when its region's NUMA node
is the host node of one of its instance's cells, ``not_aligned`` when it
is none of them, and ``unknown`` otherwise: not bound, the region's node
unknown, the instance without NUMA cells (or not shown to us), Nova not
answering, or no [nova] credentials at all, in which case Nova is never
called. Answers as ``numa_aligned``: true, false or "unknown".
"""
from oslo_log import log as logging

from cyborg_lite.common import service_clients
from cyborg_lite.conf import CONF

LOG = logging.getLogger(__name__)
NOVA_MICROVERSION = '2.78'
UNKNOWN = 'unknown'


class InstanceNodes:
    """Host NUMA nodes of instances, asked of Nova once per instance for
    the life of one API request."""

    def __init__(self, conf=CONF, adapter=None):
        self._conf = conf
        self._adapter = adapter
        self._nodes = {}

    @property
    def enabled(self):
        return self._adapter is not None or \
            self._conf.nova.auth_type is not None

    def _get_adapter(self):
        if self._adapter is None:
            self._adapter = service_clients.adapter_from_conf(
                self._conf, 'nova', default_microversion=NOVA_MICROVERSION,
                raise_exc=False)
        return self._adapter

    def of(self, instance_uuid):
        """The instance's host nodes (a frozenset), or None unknown."""
        if instance_uuid not in self._nodes:
            self._nodes[instance_uuid] = self._ask(instance_uuid)
        return self._nodes[instance_uuid]

    def _ask(self, instance_uuid):
        try:
            resp = self._get_adapter().get('/servers/%s/topology'
                                           % instance_uuid)
            if resp.status_code != 200:
                LOG.info('Nova answered %s for the topology of instance %s',
                         resp.status_code, instance_uuid)
                return None
            cells = resp.json().get('nodes') or []
            nodes = [cell.get('host_node') for cell in cells
                     if isinstance(cell, dict)]
        except Exception as exc:
            LOG.warning('Could not read the topology of instance %s from '
                        'Nova: %s', instance_uuid, exc)
            return None
        if not nodes or not all(isinstance(n, int) and
                                not isinstance(n, bool) for n in nodes):
            return None
        return frozenset(nodes)

    def aligned(self, state, instance_uuid, numa_node):
        """True, False or UNKNOWN for an ARQ in ``state`` whose region
        sits on ``numa_node``."""
        if state != 'Bound' or instance_uuid is None or numa_node is None \
                or not self.enabled:
            return UNKNOWN
        nodes = self.of(instance_uuid)
        if nodes is None:
            return UNKNOWN
        return numa_node in nodes
