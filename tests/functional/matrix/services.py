"""The services every matrix host shares: the API served over HTTP
(cheroot), the ConductorService publishing to the session's Placement
and to the kube-apiserver stand-in, the database, and a notification
listener (oslo.messaging's, on ``inproc://``) that hears what the
services send (heard.py)."""
import os
import uuid

import oslo_messaging as messaging
import requests
from oslo_config import cfg

from cyborg_lite.api import deploy
from cyborg_lite.api import microversion
from cyborg_lite.api import policy
from cyborg_lite.api import server as api_server
from cyborg_lite.conductor import service as conductor_service
from cyborg_lite.db import migration
from cyborg_lite.db.sql import session
from cyborg_lite.notifications import events as notifications
from cyborg_lite.rpc import transport as rpc
from tests.functional import nova_order
from tests.functional.matrix import heard as heard_mod
from tests.functional.placement import conftest as placement_fx

LATEST = {'OpenStack-API-Version': 'accelerator ' +
          microversion.VERSIONS[-1]}
# The cloud's operator (an admin of no project: what it creates is
# public).
OPERATOR = {'X-Roles': 'admin', 'X-User-Id': 'operator'}


class Services:
    """The API, a conductor, the database, the apiserver stand-in and a
    notification listener, for every host of the matrix tests;
    ``start()``, ``stop()``. ``host_names``: the hosts the Kubernetes
    sink publishes ([kubernetes]hosts is read once, at start), given to
    ``Host`` one each."""

    def __init__(self, conf, placement, apiserver, state_dir, hosts=64):
        self.conf = conf
        self.placement = placement
        self.apiserver = apiserver
        self.state_dir = state_dir
        tag = uuid.uuid4().hex[:6]
        self.host_names = ['mx%s-%d' % (tag, i) for i in range(hosts)]
        # Each host's Kubernetes namespace acts for a project of its own.
        self.namespaces = {'ns-' + h: 'project-' + h
                           for h in self.host_names}
        self.heard = heard_mod.Heard()
        self._stack = []
        self._configure()

    def _configure(self):
        conf = self.conf
        placement_fx.configure_placement(conf, self.placement.endpoint)
        for group, values in {
                None: {'transport_url': 'inproc://',
                       'state_path': self.state_dir},
                'database': {'connection': 'sqlite:///%s' % os.path.join(
                    self.state_dir, 'cyborg_lite.sqlite')},
                'api': {'auth_strategy': 'noauth'},
                'agent': {'report_interval': 3600, 'heartbeat_interval': 1},
                'health': {'readings_to_fault': 1, 'readings_to_clear': 1},
                'conductor': {'inventory_sinks': ['placement',
                                                  'kubernetes']},
                'bitstreams': {'store_dir': os.path.join(self.state_dir,
                                                         'store')},
                'kubernetes': {
                    'enabled': True, 'hosts': self.host_names,
                    'namespace_projects': self.namespaces,
                    'kubeconfig': self.apiserver.write_kubeconfig(
                        os.path.join(self.state_dir, 'kubeconfig')),
                    'prepare_timeout': 30.0},
                'oslo_messaging_notifications': {'driver': ['messagingv2']},
        }.items():
            for name, value in values.items():
                conf.set_override(name, value, group=group)
        for host in self.host_names:
            self.apiserver.add_node(host)

    def start(self):
        migration.upgrade()
        notifications.reset()
        policy.reset()
        self._start_listener()
        conductor = conductor_service.ConductorService(self.conf,
                                                       host='cond-mx')
        conductor.start()
        self._stack.append(conductor.stop)
        api = api_server.Server(deploy.loadapp_serving(self.conf),
                                '127.0.0.1', 0).start()
        self._stack.append(api.stop)
        self.api = 'http://127.0.0.1:%d' % api.port
        return self

    def _start_listener(self):
        # NOTE: options of its own: one thread hands the messages over,
        # in the order they come (the services' pools are CONF's).
        conf = cfg.ConfigOpts()
        conf([], project='matrix-listener')
        transport = messaging.get_notification_transport(conf,
                                                         url='inproc://')
        listener = messaging.get_notification_listener(
            transport, [messaging.Target(topic='notifications')],
            [self.heard], executor='threading')
        conf.set_override('executor_thread_pool_size', 1)
        listener.start()

        def stop():
            listener.stop()
            listener.wait()
            transport.cleanup()
        self._stack.append(stop)

    def stop(self):
        try:
            while self._stack:
                self._stack.pop()()
        finally:
            notifications.reset()
            policy.reset()
            rpc.cleanup()
            session.dispose_all()

    def call(self, method, path, status=None, headers=OPERATOR, **kwargs):
        """The API at its latest version, as ``headers``' caller."""
        resp = requests.request(method, self.api + '/v2' + path,
                                headers=dict(LATEST, **headers),
                                timeout=60, **kwargs)
        if status is not None:
            assert resp.status_code == status, (
                method, path, resp.status_code, resp.text)
        return resp

    def placement_call(self, method, path, status=(200, 204), **kwargs):
        resp = requests.request(method, self.placement.endpoint + path,
                                headers=nova_order.PLACEMENT, timeout=30,
                                **kwargs)
        assert resp.status_code in status, resp.text
        return resp
