"""The plugin on the kubelet's unix sockets.

Two gRPC servers, as the kubelet expects of a DRA driver
(k8s.io/dynamic-resource-allocation kubeletplugin):

* registration, ``<registry dir>/<driver>-reg.sock``: the kubelet's plugin
  watcher finds the socket, calls GetInfo (type DRAPlugin, our name, the
  DRA endpoint, the services we serve) and NotifyRegistrationStatus;
* the DRA service, ``<plugins dir>/<driver>/dra.sock``: DRAPlugin in v1
  (kubelet 1.34+) and v1beta1 (1.32, 1.33), both answered by one
  DraPlugin.

With an instance uid (the pod's, ``[kubernetes]plugin_instance_uid``)
both names carry it, ``<driver>-<uid>-reg.sock`` and ``dra-<uid>.sock``,
as the kubeletplugin helper's RollingUpdate option names them: a new
agent then serves beside the old one during a DaemonSet rolling update
with maxSurge (kubelet 1.33+ keeps both registered and calls the newest),
and each removes only its own sockets.
"""
import concurrent.futures
import logging
import os
import threading

import grpc

from cyborg_lite.agent.dra import claims
from cyborg_lite.agent.dra.proto import dra_v1_pb2
from cyborg_lite.agent.dra.proto import dra_v1_pb2_grpc
from cyborg_lite.agent.dra.proto import dra_v1beta1_pb2
from cyborg_lite.agent.dra.proto import dra_v1beta1_pb2_grpc
from cyborg_lite.agent.dra.proto import pluginregistration_v1_pb2 as reg_pb2
from cyborg_lite.agent.dra.proto import \
    pluginregistration_v1_pb2_grpc as reg_grpc

LOG = logging.getLogger(__name__)

PLUGIN_TYPE = 'DRAPlugin'
SUPPORTED_SERVICES = ('v1.DRAPlugin', 'v1beta1.DRAPlugin')
# sun_path of struct sockaddr_un holds 108 bytes, NUL included.
MAX_SOCKET_PATH = 107


def registration_socket(registry_dir, driver_name, instance_uid=None):
    return os.path.join(registry_dir, '%s%s-reg.sock' % (
        driver_name, _uid_part(instance_uid)))


def dra_socket(plugins_dir, driver_name, instance_uid=None):
    return os.path.join(plugins_dir, driver_name,
                        'dra%s.sock' % _uid_part(instance_uid))


def _uid_part(instance_uid):
    return '-%s' % instance_uid if instance_uid else ''


class SocketPathError(ValueError):
    pass


def _refs(request):
    return [claims.ClaimRef(namespace=c.namespace, name=c.name, uid=c.uid)
            for c in request.claims]


class _DraService:
    """DRAPlugin for one API version (its generated message module)."""

    def __init__(self, plugin, pb2, has_share_id):
        self._plugin = plugin
        self._pb2 = pb2
        self._has_share_id = has_share_id

    def _device(self, record):
        fields = dict(request_names=list(record.request_names),
                      pool_name=record.pool_name,
                      device_name=record.device_name,
                      cdi_device_ids=list(record.cdi_device_ids))
        if self._has_share_id and record.share_id:
            fields['share_id'] = record.share_id
        return self._pb2.Device(**fields)

    def NodePrepareResources(self, request, context):
        outcomes = self._plugin.prepare(_refs(request))
        response = self._pb2.NodePrepareResourcesResponse()
        for uid, outcome in outcomes.items():
            entry = response.claims[uid]
            if outcome.error:
                entry.error = outcome.error
            else:
                entry.devices.extend(self._device(d)
                                     for d in outcome.devices)
        return response

    def NodeUnprepareResources(self, request, context):
        errors = self._plugin.unprepare(_refs(request))
        response = self._pb2.NodeUnprepareResourcesResponse()
        for uid, error in errors.items():
            response.claims[uid].error = error
        return response


class _RegistrationService:
    def __init__(self, driver_name, endpoint):
        self._info = reg_pb2.PluginInfo(
            type=PLUGIN_TYPE, name=driver_name, endpoint=endpoint,
            supported_versions=list(SUPPORTED_SERVICES))
        self.registered = threading.Event()
        self.last_error = None

    def GetInfo(self, request, context):
        return self._info

    def NotifyRegistrationStatus(self, request, context):
        if request.plugin_registered:
            LOG.info('kubelet registered DRA driver %s', self._info.name)
            self.last_error = None
            self.registered.set()
        else:
            LOG.error('kubelet refused DRA driver %s: %s', self._info.name,
                      request.error)
            self.last_error = request.error
            self.registered.clear()
        return reg_pb2.RegistrationStatusResponse()


def _check_socket_path(path):
    if not os.path.isabs(path):
        raise SocketPathError('socket path %s is not absolute' % path)
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise SocketPathError('socket path %s is longer than %d bytes, the '
                              'limit of a unix socket' % (path,
                                                          MAX_SOCKET_PATH))


def _serve(path, add_services, workers):
    _check_socket_path(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.unlink(path)          # left by a previous run of the agent
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(
        workers, thread_name_prefix='dra-grpc'))
    add_services(server)
    server.add_insecure_port('unix://' + path)
    server.start()
    return server


class KubeletPluginServer:
    """Serves a DraPlugin to the kubelet until ``stop()``."""

    def __init__(self, plugin, registry_dir, plugins_dir, workers=4,
                 instance_uid=None):
        self.plugin = plugin
        self.registration_path = registration_socket(
            registry_dir, plugin.driver_name, instance_uid)
        self.dra_path = dra_socket(plugins_dir, plugin.driver_name,
                                   instance_uid)
        self.registration = _RegistrationService(plugin.driver_name,
                                                 self.dra_path)
        self._workers = workers
        self._servers = []

    def start(self):
        # The DRA service first: the kubelet dials it as soon as it has
        # read the endpoint from the registration socket.
        v1 = _DraService(self.plugin, dra_v1_pb2, has_share_id=True)
        v1beta1 = _DraService(self.plugin, dra_v1beta1_pb2,
                              has_share_id=False)

        def add_dra(server):
            dra_v1_pb2_grpc.add_DRAPluginServicer_to_server(v1, server)
            dra_v1beta1_pb2_grpc.add_DRAPluginServicer_to_server(v1beta1,
                                                                 server)
        self._servers.append((_serve(self.dra_path, add_dra, self._workers),
                              self.dra_path))

        def add_registration(server):
            reg_grpc.add_RegistrationServicer_to_server(self.registration,
                                                        server)
        self._servers.append((_serve(self.registration_path,
                                     add_registration, 1),
                              self.registration_path))
        LOG.info('DRA driver %s serving %s, registering at %s',
                 self.plugin.driver_name, self.dra_path,
                 self.registration_path)
        return self

    def stop(self, grace=1.0):
        # Registration socket first, so the kubelet stops using us.
        for server, path in reversed(self._servers):
            server.stop(grace).wait()
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        self._servers = []
        self.plugin.close()
