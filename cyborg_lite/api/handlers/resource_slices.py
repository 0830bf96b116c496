"""/v2/resource_slices/{hostname}: the Kubernetes ResourceSlices the
conductor would publish for a host (read only, from microversion 2.5).

Computed from the database by the code the conductor's Kubernetes sink
runs (kubernetes/view.of_host + kubernetes/slices.build_slices) with this
service's [kubernetes] options (driver_name, node_names, publish_taints,
numa_node_list, shared_counters, binding_conditions: keep them as the
conductor's), so an operator sees them without a cluster. ``served`` says whether the host is
in [kubernetes]hosts, i.e. whether a conductor with the Kubernetes sink
publishes it at all. The pool generation is left at 0: the sync sets it.
"""
from cyborg_lite.api import microversion
from cyborg_lite.api.policies import resource_slices as policies
from cyborg_lite.api import utils
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF
from cyborg_lite.db import devices as devices_db
from cyborg_lite.kubernetes import slices as k8s_slices
from cyborg_lite.kubernetes import view as k8s_view

MIN_VERSION = '2.5'


def show_slices(req, hostname):
    """200 with the slices; 404 when no device of that host is known."""
    microversion.require(req, MIN_VERSION, '/v2/resource_slices')
    utils.authorize(req, policies.GET)
    utils.check_strings(hostname, 'hostname')
    group = CONF.kubernetes
    inventory = k8s_view.of_host(CONF, devices_db.load_inventory(hostname))
    if not inventory.devices:
        raise exception.NotFound(
            message='No device of host %s is known: it has no ResourceSlice '
                    'of ours.' % hostname)
    try:
        slices = k8s_slices.build_slices(
            inventory, group.driver_name, group.publish_taints,
            numa_node_list=group.numa_node_list,
            shared_counters=group.shared_counters,
            binding_conditions=group.binding_conditions)
    except k8s_slices.InvalidSlice as exc:
        raise exception.Conflict(reason='the ResourceSlices of host %s '
                                 'cannot be built: %s' % (hostname, exc))
    return utils.response({'hostname': hostname,
                           'node_name': inventory.node_name,
                           'served': hostname in group.hosts,
                           'resource_slices': slices})
