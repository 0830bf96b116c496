"""inproc:// (rpc/inproc.py): fake://'s in-memory semantics
with a listener woken by each delivery instead of its 50 ms poll.

The idle look is set to an hour here: a message whose delivery did not
wake its listener would wait that long, and the call would time out."""
import threading

import oslo_messaging as messaging
import pytest

from cyborg_lite.rpc import inproc as inproc_messaging
from cyborg_lite.rpc import transport as rpc


class Endpoint:
    def __init__(self):
        self.casts = []
        self.cast_seen = threading.Event()

    def echo(self, ctxt, value):
        return value

    def remember(self, ctxt, value):
        self.casts.append(value)
        self.cast_seen.set()


@pytest.fixture
def inproc(conf, monkeypatch):
    monkeypatch.setattr(inproc_messaging, '_IDLE_LOOK_S', 3600.0)
    conf.set_override('transport_url', 'inproc://')
    rpc.cleanup()
    transport = rpc.get_transport(conf)
    servers = []

    def serve(topic, server, endpoint):
        target = messaging.Target(topic=topic, server=server)
        rpc_server = messaging.get_rpc_server(
            transport, target, [endpoint])
        rpc_server.start()
        servers.append(rpc_server)
        return endpoint

    yield transport, serve
    for rpc_server in servers:
        rpc_server.stop()
        rpc_server.wait()
    rpc.cleanup()


def test_the_driver_is_the_inproc_entry_point(inproc):
    transport, _ = inproc
    assert isinstance(transport._driver, inproc_messaging.InprocDriver)


def test_a_call_is_answered_without_waiting_for_a_poll(inproc):
    transport, serve = inproc
    serve('t', 'host1', Endpoint())
    client = messaging.get_rpc_client(transport, messaging.Target(topic='t'),
                                      timeout=30)
    for value in range(20):
        assert client.call({}, 'echo', value=value) == value


def test_a_cast_to_one_server_reaches_only_that_server(inproc):
    transport, serve = inproc
    one = serve('t', 'host1', Endpoint())
    other = serve('t', 'host2', Endpoint())
    client = messaging.get_rpc_client(
        transport, messaging.Target(topic='t', server='host2'))
    client.cast({}, 'remember', value='x')
    assert other.cast_seen.wait(30)
    assert other.casts == ['x'] and one.casts == []


def test_a_fanout_cast_reaches_every_server(inproc):
    transport, serve = inproc
    endpoints = [serve('t', 'host%d' % i, Endpoint()) for i in range(3)]
    client = messaging.get_rpc_client(
        transport, messaging.Target(topic='t', fanout=True))
    client.cast({}, 'remember', value='all')
    for endpoint in endpoints:
        assert endpoint.cast_seen.wait(30)
        assert endpoint.casts == ['all']


def test_a_server_stops_at_once_while_idle(inproc):
    # stop() wakes the listener; with an hour's idle look a missing
    # wake-up would hang wait() (and this test) for that hour.
    transport, serve = inproc
    serve('t', 'host1', Endpoint())


@pytest.mark.parametrize('url, in_process', [
    ('inproc://', True), ('fake://', True), ('rabbit://h:5672/', False),
    ('', False), (None, False)])
def test_in_process_transports_are_named(url, in_process):
    assert inproc_messaging.is_in_process(url) is in_process


class Heard:
    def __init__(self):
        self.events = []
        self.seen = threading.Event()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.events.append(event_type)
        self.seen.set()


def test_a_notification_reaches_a_listener_and_is_kept_for_none(conf):
    # NOTE: its own topic, apart from any other test's listeners.
    topic = 'notifications-%s' % threading.get_ident()
    transport = messaging.get_notification_transport(conf, url='inproc://')
    notifier = messaging.Notifier(transport, publisher_id='test',
                                  driver='messagingv2', topics=[topic])
    woken = inproc_messaging.DELIVERIES.count
    notifier.info({}, 'unheard', {})
    # Nobody listens: nothing kept, no listener woken for it.
    assert inproc_messaging.DELIVERIES.count == woken
    heard = Heard()
    listener = messaging.get_notification_listener(
        transport, [messaging.Target(topic=topic)], [heard],
        executor='threading')
    listener.start()
    try:
        notifier.info({}, 'heard', {})
        assert heard.seen.wait(30)
    finally:
        listener.stop()
        listener.wait()
    notifier.info({}, 'after', {})
    assert heard.events == ['heard']
    assert (transport._driver._notification_key(
        messaging.Target(topic=topic + '.info'))
        not in inproc_messaging.NOTIFICATION_LISTENERS)
