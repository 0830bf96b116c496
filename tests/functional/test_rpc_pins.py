"""[upgrade_levels] over real oslo.messaging (in process and RabbitMQ):
pinned at the previous release, every message the API and a conductor
send reaches a server of that release at a version it serves, with
arguments its endpoint takes. The server here is the previous release's
endpoint as its tag has it: the version of its ``Target`` and the
signature of each method, read from git; what reaches it is recorded as
the dispatcher receives it, before any version check."""
import ast
import threading

import oslo_messaging as messaging
import pytest

from cyborg_lite.common import context
from cyborg_lite.common import exception
from cyborg_lite.rpc import agent_client
from cyborg_lite.rpc import conductor_client
from cyborg_lite.rpc import pins
from cyborg_lite.rpc import transport as rpc
from tests import servers
from tests import waiting
from tests.unit.rpc import test_pins

PREVIOUS = '2026.1.0'
HOST = 'node1'
# Every ConductorAPI method with arguments as the API and the conductors
# send them (and report as an agent does); release raises
# UnsupportedVersion (the API's fallback) instead of sending.
CONDUCTOR_CALLS = {
    'report': dict(hostname=HOST, driver_reports=[],
                   numa_nodes=[{'id': 0}]),
    'bind_arqs': dict(bindings={}),
    'program': dict(bitstream_uuid='b', deployable_uuid='d', force=True),
    'cancel_program': dict(job_uuid='j'),
    'job_progress': dict(job_uuid='j', state='programming', try_number=1),
    'job_heartbeat': dict(job_uuid='j', hostname=HOST, try_number=1),
    'agent_started': dict(hostname=HOST),
    'agent_heartbeat': dict(hostname=HOST, release='2026.2.0',
                            rpc_versions={'t': '1.10'}),
    'publish_requested': dict(),
    'publish_hosts': dict(hostnames=[HOST]),
    'release': dict(publish_hosts=[HOST], clean_hosts=[HOST]),
    'start_cleaning': dict(hostnames=[HOST]),
    'cleaning_progress': dict(deployable_uuid='d', cleaning_uuid='c',
                              state='cleaning'),
    'prepare_k8s_device': dict(hostname=HOST, request={'claim_uid': 'u'},
                               wait=0),
    'release_k8s_device': dict(hostname=HOST, claim_uid='u'),
}
AGENT_CALLS = {
    'request_report': dict(hostname=HOST),
    'program_region': dict(hostname=HOST, job={
        'uuid': 'j', 'signature': {'policy': 'enforce'}}),
    'clean_region': dict(hostname=HOST, request={'uuid': 'c'}),
    'make_instance': dict(hostname=HOST, request={
        'driver': 'nvidia', 'deployable_name': 'vgpu_1426'}),
    'remove_instance': dict(hostname=HOST, request={
        'driver': 'nvidia', 'deployable_name': 'vgpu_1426'}),
}
# What a conductor cannot have an agent of the previous release do: the
# bind that needs it is refused (InstanceNotMade), nothing sent.
_AGENT_REFUSED = {'make_instance', 'remove_instance'}
_CASTS = {'bind_arqs', 'publish_requested', 'start_cleaning',
          'request_report', 'program_region', 'clean_region'}


@pytest.fixture(params=['inproc', pytest.param('rabbit',
                                               marks=pytest.mark.slow)])
def transport(request, conf):
    if request.param == 'inproc':
        yield conf
    else:
        broker = servers.RabbitMQServer().start()
        conf.set_override('transport_url', broker.url)
        try:
            yield conf
        finally:
            rpc.cleanup()
            broker.stop()
            return
    rpc.cleanup()


def _public_methods(cls):
    return {name for name, value in vars(cls).items()
            if callable(value) and not name.startswith('_')}


def test_every_client_method_is_exercised():
    # A new method must say here what it sends a previous-release peer.
    assert _public_methods(conductor_client.ConductorAPI) == \
        set(CONDUCTOR_CALLS)
    assert _public_methods(agent_client.AgentAPI) == set(AGENT_CALLS)


class _PreviousEndpoint:
    """Serves what the previous release's manager served: its Target's
    version and, per method, the arguments its signature takes."""

    def __init__(self, source, class_name):
        self.target = messaging.Target(
            version=test_pins.served_version(source))
        self.received = []      # (method, version) as dispatched
        self.called = []        # (method, kwargs) the endpoint ran
        self.done = threading.Condition()
        cls = next(node for node in ast.walk(ast.parse(source))
                   if isinstance(node, ast.ClassDef) and
                   node.name == class_name)
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef) and \
                    not fn.name.startswith('_'):
                setattr(self, fn.name, self._method(fn))

    def _method(self, fn):
        names = [a.arg for a in fn.args.args[2:]]
        required = set(names[:len(names) - len(fn.args.defaults)])

        def endpoint(ctxt, **kwargs):
            unknown = set(kwargs) - set(names)
            missing = required - set(kwargs)
            assert not unknown and not missing, (fn.name, unknown, missing)
            self.called.append((fn.name, kwargs))
            return {}
        return endpoint


def _serve(topic, endpoint, server=HOST):
    server = rpc.get_server(topic, server, [endpoint])
    dispatch = server.dispatcher.dispatch

    def recording(incoming):
        message = incoming.message
        endpoint.received.append((message['method'],
                                  message.get('version')))
        return dispatch(incoming)
    server.dispatcher.dispatch = recording
    server.start()
    return server


def _stop(server):
    server.stop()
    server.wait()


def _key(rpc_version):
    return tuple(int(part) for part in rpc_version.split('.'))


def _send(api, calls, ctxt):
    refused = set()
    for method, kwargs in calls.items():
        try:
            getattr(api, method)(ctxt, **kwargs)
        except (messaging.UnsupportedVersion, exception.InstanceNotMade):
            refused.add(method)
    return refused


def _check(endpoint, sent):
    served = _key(endpoint.target.version)
    # Casts arrive after the call returned.
    waiting.read_until(lambda: {m for m, _ in endpoint.called},
                       lambda got: got >= sent, what='every message run')
    too_new = [(m, v) for m, v in endpoint.received if _key(v) > served]
    assert too_new == [], too_new
    assert {m for m, _ in endpoint.called} == sent


def test_pinned_to_the_previous_release_every_message_is_one_it_serves(
        transport):
    ctxt = context.get_admin_context()
    old_conductor = _PreviousEndpoint(test_pins.released_source(
        PREVIOUS, 'cyborg_lite/conductor/manager.py'), 'ConductorManager')
    old_agent = _PreviousEndpoint(test_pins.released_source(
        PREVIOUS, 'cyborg_lite/agent/manager.py'), 'AgentManager')
    servers_ = [_serve(rpc.CONDUCTOR_TOPIC, old_conductor, 'cond-old'),
                _serve(rpc.AGENT_TOPIC, old_agent)]
    try:
        conductor_api = conductor_client.ConductorAPI(
            timeout=30, version_cap=pins.version_cap(
                rpc.CONDUCTOR_TOPIC, PREVIOUS))
        refused = _send(conductor_api, CONDUCTOR_CALLS, ctxt)
        # The API's release: refused here, its fallback (publish_hosts,
        # start_cleaning) is in the calls above.
        assert refused == {'release'}
        _check(old_conductor, set(CONDUCTOR_CALLS) - refused)
        # The agent's heartbeat went at 1.3, without what 1.3 lacks.
        assert dict(old_conductor.called)['agent_heartbeat'] == \
            {'hostname': HOST}

        agent_api = agent_client.AgentAPI(version_cap=pins.version_cap(
            rpc.AGENT_TOPIC, PREVIOUS))
        assert _send(agent_api, AGENT_CALLS, ctxt) == _AGENT_REFUSED
        _check(old_agent, set(AGENT_CALLS) - _AGENT_REFUSED)
        # Unpinned, the previous release's agent refuses it: the same
        # refusal, and the agent ran nothing.
        unpinned = agent_client.AgentAPI(timeout=30)
        with pytest.raises(exception.InstanceNotMade,
                           match='without RPC 1.4'):
            unpinned.make_instance(ctxt, HOST,
                                   AGENT_CALLS['make_instance']['request'])
        assert 'make_instance' not in {m for m, _ in old_agent.called}
    finally:
        for server in servers_:
            _stop(server)


def test_the_api_s_and_the_conductor_s_clients_carry_their_pins(conf,
                                                                 sqlite_db):
    from cyborg_lite.api import wsgi_wrapper
    from cyborg_lite.conductor import rpc_clients
    from cyborg_lite.db import services as services_db
    try:
        assert wsgi_wrapper.pinned_conductor_api().client.version_cap is None
        conf.set_override('conductor', PREVIOUS, group='upgrade_levels')
        conf.set_override('agent', 'auto', group='upgrade_levels')
        # An agent of 2026.1.0 beats (it says no release).
        services_db.beat('agent', HOST, None, None)
        assert wsgi_wrapper.pinned_conductor_api().client.version_cap == '1.8'
        assert rpc_clients.conductor_api().client.version_cap == '1.8'
        assert rpc_clients.agent_api().client.version_cap == '1.3'
        conf.set_override('conductor', 'auto', group='upgrade_levels')
        services_db.beat('conductor', 'cond1', '2026.1.9',
                         {rpc.CONDUCTOR_TOPIC: '1.9'})
        assert wsgi_wrapper.pinned_conductor_api().client.version_cap == '1.9'
    finally:
        rpc.cleanup()
