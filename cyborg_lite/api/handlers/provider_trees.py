"""/v2/resource_provider_trees/{hostname}: a host's provider tree as the
conductor sees it (read only, from microversion 2.4).

This is the DESIRED tree, the one the conductor's Placement sync pushes:
computed from the database by the same pure code
(db/devices.load_inventory + placement/tree.build_tree), not read from
Placement, so it shows what cyborg_lite wants even while Placement is
down or behind. The compute node provider (the root) belongs to Nova and
its uuid is not in our database: it is asked of Placement (one GET by
name through placement/client.py, when the API has [placement]
credentials). ``root.placement`` says what came of that: ``found``
(``uuid`` is Placement's, and the device providers under it have it as
``parent_uuid``), ``not yet created`` (Placement has no provider of that
name yet), ``unreachable`` or ``not configured``; in the last three
``uuid`` is null, as are the parents of the device providers under it.
"""
from oslo_log import log

from cyborg_lite.api import microversion
from cyborg_lite.api.policies import provider_trees as policies
from cyborg_lite.api.schemas import provider_trees as schemas
from cyborg_lite.api import utils
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF
from cyborg_lite.db import devices as devices_db
from cyborg_lite.placement import client as placement_client
from cyborg_lite.placement import tree as tree_mod

LOG = log.getLogger(__name__)
MIN_VERSION = '2.4'
FOUND, NOT_CREATED, UNREACHABLE, NOT_CONFIGURED = schemas.PLACEMENT_ANSWERS


def provider_view(provider):
    return {'name': provider.name, 'uuid': provider.uuid,
            'parent_uuid': provider.parent_uuid,
            'inventories': provider.inventories,
            'traits': sorted(provider.traits)}


def compute_node_in_placement(hostname):
    """(uuid or None, one of FOUND, NOT_CREATED, UNREACHABLE,
    NOT_CONFIGURED): the provider Placement has under the host's name."""
    if CONF.placement.auth_type is None:
        return None, NOT_CONFIGURED
    try:
        found = placement_client.PlacementClient.from_conf(
            CONF).provider_named(hostname)
    except (exception.PlacementError, ValueError, KeyError) as exc:
        LOG.warning('Placement did not say which provider is %s: %s',
                    hostname, exc)
        return None, UNREACHABLE
    return (found['uuid'], FOUND) if found else (None, NOT_CREATED)


def tree_view(hostname, devices, root_uuid=None, placement=NOT_CONFIGURED):
    # NOTE: as Placement has it unless the tree holds NUMA providers of
    # someone else (the preview does not look).
    tree = tree_mod.build_tree(hostname, root_uuid, devices,
                               CONF.placement.numa_providers)
    return {'hostname': hostname,
            'root': {'name': hostname, 'uuid': root_uuid,
                     'placement': placement},
            'resource_providers': [provider_view(p)
                                   for p in tree.providers]}


def show_tree(req, hostname):
    """200 with the tree; 404 when no device of that host is known."""
    microversion.require(req, MIN_VERSION, '/v2/resource_provider_trees')
    utils.authorize(req, policies.GET)
    utils.check_strings(hostname, 'hostname')
    devices = devices_db.load_inventory(hostname).devices
    if not devices:
        raise exception.NotFound(
            message='No device of host %s is known: it has no resource '
                    'providers of ours.' % hostname)
    root_uuid, placement = compute_node_in_placement(hostname)
    return utils.response(tree_view(hostname, devices, root_uuid,
                                    placement))
