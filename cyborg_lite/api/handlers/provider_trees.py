"""/v2/resource_provider_trees/{hostname}: a host's provider tree as the
conductor sees it (read only, from microversion 2.4).

This is the DESIRED tree, the one the conductor's Placement sync pushes:
computed from the database by the same pure code
(objects.host_inventory.load + objects.provider_tree.build_tree), not read
from Placement, so it shows what cyborg_lite wants even while Placement
is down or behind. The compute node provider (the root) belongs to Nova
and its uuid is not in our database: it is named, with ``uuid`` null,
and the device providers under it have ``parent_uuid`` null.
"""
from cyborg_lite.api import microversion
from cyborg_lite.api.policies import provider_trees as policies
from cyborg_lite.api import utils
from cyborg_lite.common import exception
from cyborg_lite.objects import host_inventory
from cyborg_lite.objects import provider_tree as tree_mod

MIN_VERSION = '2.4'
# The root's uuid: Placement's, which the database does not record.
UNKNOWN_ROOT = None


def provider_view(provider):
    return {'name': provider.name, 'uuid': provider.uuid,
            'parent_uuid': provider.parent_uuid,
            'inventories': provider.inventories,
            'traits': sorted(provider.traits)}


def tree_view(hostname, devices):
    tree = tree_mod.build_tree(hostname, UNKNOWN_ROOT, devices)
    return {'hostname': hostname,
            'root': {'name': hostname, 'uuid': UNKNOWN_ROOT},
            'resource_providers': [provider_view(p)
                                   for p in tree.providers]}


def show_tree(req, hostname):
    """200 with the tree; 404 when no device of that host is known."""
    microversion.require(req, MIN_VERSION, '/v2/resource_provider_trees')
    utils.authorize(req, policies.GET)
    utils.check_strings(hostname, 'hostname')
    devices = host_inventory.load(hostname).devices
    if not devices:
        raise exception.NotFound(
            message='No device of host %s is known: it has no resource '
                    'providers of ours.' % hostname)
    return utils.response(tree_view(hostname, devices))
