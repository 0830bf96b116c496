"""The kubelet plugin as the agent runs it, from [kubernetes] options.

The agent (agent/manager.py) builds this with the two device callables of
device_api.py (agent/dra/conductor_devices.py), ``start()``s it beside its
report loop and ``stop()``s it on shutdown.
"""
import os

from cyborg_lite.agent.dra import claims
from cyborg_lite.agent.dra import plugin
from cyborg_lite.agent.dra import server
from cyborg_lite.common import exception
from cyborg_lite.kubernetes import client as k8s_client

_PATH_OPTIONS = ('kubelet_registry_dir', 'kubelet_plugins_dir', 'cdi_dir',
                 'plugin_state_dir')


def node_name(conf, host=None):
    """This host's Node, which is also its pool name in the slices."""
    return conf.kubernetes.node_name or host or conf.host


def create_server(conf, prepare_device, release_device, api_client=None,
                  node=None, release_claim=None):
    """A KubeletPluginServer, not started. ``api_client`` defaults to one
    made from [kubernetes]kubeconfig (or the in-cluster account); ``node``
    to node_name(conf)."""
    group = conf.kubernetes
    for option in _PATH_OPTIONS:
        if not os.path.isabs(group[option]):
            raise exception.ConfigError(
                reason='[kubernetes]%s must be an absolute path, got %r'
                % (option, group[option]))
    if api_client is None:
        api_client = k8s_client.new_api_client(group.kubeconfig)
    dra_plugin = plugin.DraPlugin(
        group.driver_name, node or node_name(conf),
        claims.KubeClaimReader(api_client), prepare_device, release_device,
        cdi_dir=group.cdi_dir, state_dir=group.plugin_state_dir,
        prepare_timeout=group.prepare_timeout, release_claim=release_claim)
    return server.KubeletPluginServer(
        dra_plugin, group.kubelet_registry_dir, group.kubelet_plugins_dir,
        instance_uid=group.plugin_instance_uid)
