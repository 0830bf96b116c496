"""A test client that plays the kubelet towards a DRA plugin, over the real
unix sockets: plugin-watcher discovery of ``*-reg.sock``, GetInfo,
NotifyRegistrationStatus, then NodePrepareResources and
NodeUnprepareResources on the endpoint the plugin named, in the API
version asked; and its wipe of a node's ResourceSlices, through the real
client."""
import glob
import os

import grpc
import kubernetes

from cyborg_lite.agent.dra.proto import dra_v1_pb2
from cyborg_lite.agent.dra.proto import dra_v1_pb2_grpc
from cyborg_lite.agent.dra.proto import dra_v1beta1_pb2
from cyborg_lite.agent.dra.proto import dra_v1beta1_pb2_grpc
from cyborg_lite.agent.dra.proto import pluginregistration_v1_pb2 as reg_pb2
from cyborg_lite.agent.dra.proto import \
    pluginregistration_v1_pb2_grpc as reg_grpc

CALL_TIMEOUT = 45                  # the kubelet's own per-call limit
APIS = {'v1': (dra_v1_pb2, dra_v1_pb2_grpc),
        'v1beta1': (dra_v1beta1_pb2, dra_v1beta1_pb2_grpc)}


class TestKubelet:
    __test__ = False               # not a pytest class

    def __init__(self, registry_dir):
        self.registry_dir = registry_dir
        self.info = None
        self._channels = []

    def close(self):
        for channel in self._channels:
            channel.close()
        self._channels = []

    def _channel(self, path):
        channel = grpc.insecure_channel('unix://' + path)
        self._channels.append(channel)
        return channel

    def sockets(self):
        """The registration sockets the plugin watcher sees."""
        return sorted(os.path.basename(path) for path in glob.glob(
            os.path.join(self.registry_dir, '*-reg.sock')))

    def register(self, socket_name=None):
        """What the plugin watcher does with the socket it finds (of
        several, as during a rolling update, the one named: the kubelet
        calls the instance that registered last)."""
        if socket_name is None:
            (socket_name,) = self.sockets()
        socket = os.path.join(self.registry_dir, socket_name)
        stub = reg_grpc.RegistrationStub(self._channel(socket))
        self.info = stub.GetInfo(reg_pb2.InfoRequest(), timeout=CALL_TIMEOUT)
        stub.NotifyRegistrationStatus(
            reg_pb2.RegistrationStatus(plugin_registered=True),
            timeout=CALL_TIMEOUT)
        return self.info

    def _stub(self, version):
        assert '%s.DRAPlugin' % version in self.info.supported_versions
        pb2, pb2_grpc = APIS[version]
        return pb2, pb2_grpc.DRAPluginStub(self._channel(self.info.endpoint))

    def prepare(self, version, claims):
        """``claims``: (namespace, name, uid) tuples."""
        pb2, stub = self._stub(version)
        return stub.NodePrepareResources(pb2.NodePrepareResourcesRequest(
            claims=[pb2.Claim(namespace=ns, name=name, uid=uid)
                    for ns, name, uid in claims]), timeout=CALL_TIMEOUT)

    def unprepare(self, version, claims):
        pb2, stub = self._stub(version)
        return stub.NodeUnprepareResources(pb2.NodeUnprepareResourcesRequest(
            claims=[pb2.Claim(namespace=ns, name=name, uid=uid)
                    for ns, name, uid in claims]), timeout=CALL_TIMEOUT)


def answer(response, uid):
    """(error, [(pool, device, CDI ids)]) of claim ``uid`` in a
    NodePrepareResources response."""
    entry = response.claims[uid]
    return entry.error, [(d.pool_name, d.device_name, list(d.cdi_device_ids))
                         for d in entry.devices]


def wipe_resource_slices(api_client, node_name, driver_name):
    """What the kubelet does at every start, and 30 s after a driver's
    plugin stopped being usable (wipeResourceSlices in
    pkg/kubelet/cm/dra/plugin): one DeleteCollection of the node's
    ResourceSlices of the driver."""
    kubernetes.client.ResourceV1Api(api_client) \
        .delete_collection_resource_slice(
            field_selector='spec.nodeName=%s,spec.driver=%s'
                           % (node_name, driver_name))
