"""Which resource providers an instance holds in Placement: asked before
a bind by a caller the policy ``cyborg_lite:arq:bind_unallocated`` does
not trust with capacity Placement has not allocated (by default anyone
but a service, such as Nova, or an admin).

Nova claims an instance's allocations (the instance's uuid as consumer,
in the instance's project) before it creates and binds its ARQs, so a
bind to a provider its instance holds takes nothing Placement still
offers to others. ``GET /allocations/{consumer_uuid}`` with the
[placement] credentials; 1.12 names the consumer's project.
"""
import collections

from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.common import resources
from cyborg_lite.common import service_clients
from cyborg_lite.conf import CONF

LOG = logging.getLogger(__name__)
MICROVERSION = '1.12'

# The consumer's project (None when it holds nothing) and {provider
# uuid: how many accelerators it holds there} (sizes such as
# CUSTOM_FPGA_LOCAL_MEMORY_MB qualify an accelerator, they are not one).
Held = collections.namedtuple('Held', ['project_id', 'providers'])


class NotAsked(Exception):
    """Placement cannot be asked: [placement] has no credentials."""


def held_by(instance_uuid, conf=CONF, adapter=None):
    """The Held of ``instance_uuid`` as Placement has it now.

    NotAsked without [placement] credentials; PlacementUnavailable (503)
    when Placement cannot be reached or fails."""
    url = '/allocations/%s' % instance_uuid
    if adapter is None:
        if conf.placement.auth_type is None:
            raise NotAsked()
        adapter = service_clients.adapter_from_conf(
            conf, 'placement', default_microversion=MICROVERSION,
            raise_exc=False)
    try:
        resp = adapter.get(url, headers={'Accept': 'application/json'})
    except ks_exc.ClientException as exc:
        LOG.warning('Placement could not be asked GET %s: %s', url, exc)
        raise exception.PlacementUnavailable(method='GET', url=url,
                                             reason=str(exc))
    if resp.status_code != 200:
        LOG.warning('Placement answered %s to GET %s: %s', resp.status_code,
                    url, resp.text[:300])
        raise exception.PlacementUnavailable(
            method='GET', url=url, reason='HTTP %s' % resp.status_code)
    body = resp.json()
    return Held(body.get('project_id'), {
        rp_uuid: sum(amount for rc, amount in
                     (allocation.get('resources') or {}).items()
                     if not resources.is_size_class(rc))
        for rp_uuid, allocation in (body.get('allocations') or {}).items()})
