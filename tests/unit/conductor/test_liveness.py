"""Agent heartbeats, hosts marked down after a silence and back with the
next heartbeat (issue 18.2), and the publish requests that carry those
changes to the inventory sinks; the database's clock is faked."""
import logging
import threading

import pytest

from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.common import exception
from cyborg_lite.conductor import liveness
from cyborg_lite.conductor import manager as conductor_manager
from cyborg_lite.conductor import publishing
from cyborg_lite.conductor import report
from cyborg_lite.conductor import service as service_mod
from cyborg_lite.db import agents as agents_db
from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import session
from cyborg_lite.inventory import sink as inventory_sink
from cyborg_lite.inventory import views as host_inventory
from cyborg_lite.rpc import transport as rpc
from tests import waiting
from tests.unit.agent.scripted_driver import ScriptedDriver
from tests.unit.conductor import bind_helpers as bh
from tests.unit.conductor import report_helpers as rh


class RecordingSink(inventory_sink.InventorySink):
    """Records each publish with the host's reasons as the sink sees
    them; ``failing`` stands for a consumer that is down."""

    def __init__(self):
        self.published = []
        self.failing = False

    @classmethod
    def from_conf(cls, conf):
        return cls()

    def publish(self, hostname):
        devices = devices_db.load_inventory(hostname).devices
        self.published.append((hostname, [
            host_inventory.unavailable_reasons(d) for d in devices]))
        return inventory_sink.PublishResult(hostname, not self.failing)

    def retry_pending(self):
        return []

    def pending_hosts(self):
        return {}


@pytest.fixture
def fake_clock(monkeypatch):
    return bh.FakeDbClock(monkeypatch)


@pytest.fixture
def sink():
    return RecordingSink()


@pytest.fixture
def publisher(sink):
    return publishing.Publisher([sink])


def _report(hostname='node1'):
    return report.handle_report(hostname, [rh.ok('fpga', rh.fpga())])


def test_a_silent_agent_is_down_after_the_down_time_only(
        db, fake_clock, publisher, sink):
    _report()
    liveness.heartbeat('node1', publisher)
    fake_clock.advance(59)
    assert liveness.mark_silent_down(publisher, 60) == []
    assert sink.published == []

    fake_clock.advance(2)
    assert liveness.mark_silent_down(publisher, 60) == ['node1']

    # Published with its devices unavailable, and the request served.
    assert sink.published == [('node1', [('agent_down',)])]
    assert publish_requests.pending() == {}
    assert agents_db.get('node1').state == 'down'
    # Marked once: a second check changes nothing.
    assert liveness.mark_silent_down(publisher, 60) == []
    assert len(sink.published) == 1
    # Nothing was deleted.
    assert len(devices_db.host_rows('node1').deployables) == 2


def test_the_next_heartbeat_brings_the_host_back(db, fake_clock, publisher,
                                                 sink):
    _report()
    liveness.heartbeat('node1', publisher)
    fake_clock.advance(61)
    liveness.mark_silent_down(publisher, 60)

    assert liveness.heartbeat('node1', publisher) == {
        'hostname': 'node1', 'came_back': True}

    assert sink.published[-1] == ('node1', [()])
    assert agents_db.get('node1').state == 'up'
    assert liveness.heartbeat('node1', publisher)['came_back'] is False
    assert len(sink.published) == 2


def test_a_heartbeat_is_one_row_per_host(db, publisher, sink):
    for _ in range(3):
        liveness.heartbeat('node1', publisher)
    liveness.heartbeat('node2', publisher)
    assert agents_db.get('node1').state == 'up'
    assert agents_db.get('node2') is not None
    assert sink.published == [] and publish_requests.pending() == {}


@pytest.mark.parametrize('hostname', ['', None, 7, 'x' * 256])
def test_a_bad_hostname_is_refused(sqlite_db, publisher, hostname):
    with pytest.raises(exception.Invalid):
        liveness.heartbeat(hostname, publisher)


def test_a_failed_publish_keeps_the_request(db, fake_clock, publisher, sink):
    _report()
    liveness.heartbeat('node1', publisher)
    fake_clock.advance(61)
    sink.failing = True
    liveness.mark_silent_down(publisher, 60)
    assert list(publish_requests.pending()) == ['node1']

    sink.failing = False
    assert publisher.publish_requested() == ['node1']
    assert publish_requests.pending() == {}


def test_a_request_added_after_the_read_stays(sqlite_db):
    with session.writer() as s:
        publish_requests.add(s, 'node1', 'first')
    [(hostname, last_id)] = publish_requests.pending().items()
    with session.writer() as s:
        publish_requests.add(s, 'node1', 'second')
    assert publish_requests.served('node1', last_id) == 1
    assert list(publish_requests.pending()) == ['node1']


def test_without_sinks_requests_are_cleared(sqlite_db):
    with session.writer() as s:
        publish_requests.add(s, 'node1', 'device disabled')
    assert publishing.Publisher([]).publish_requested() == ['node1']
    assert publish_requests.pending() == {}


def test_an_operators_maintenance_survives_reports(db, publisher, sink):
    _report()
    [device] = devices_db.host_rows('node1').devices
    devices_db.set_status(device.uuid, 'maintaining')
    # The same report again (a full one), then one with a change.
    report.handle_report('node1', [rh.ok('fpga', rh.fpga())])
    ack = report.handle_report('node1', [rh.ok('fpga', rh.changed(
        rh.fpga(), model='PAC D5005'))])
    assert ack['changed']
    [device] = devices_db.host_rows('node1').devices
    assert (device.status, device.model) == ('maintaining', 'PAC D5005')


class Monotonic:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_silence_is_judged_after_listening_for_the_down_time(
        db, fake_clock, publisher):
    _report()
    liveness.heartbeat('node1', publisher)
    fake_clock.advance(3600)   # silent for an hour, by the database
    clock = Monotonic()
    watch = liveness.SilenceWatch(publisher, 60, 10, clock=clock)
    # Just started: it has not listened long enough to judge anyone.
    for _ in range(5):
        clock.now += 10
        assert watch.run() == []
    clock.now += 10
    assert watch.run() == ['node1']


def test_a_paused_conductor_listens_again_before_judging(
        db, fake_clock, publisher):
    _report()
    clock = Monotonic()
    watch = liveness.SilenceWatch(publisher, 60, 10, clock=clock)
    clock.now += 60
    liveness.heartbeat('node1', publisher)
    assert watch.run() == []
    # SIGSTOPped for 5 minutes: nobody could take node1's heartbeats.
    fake_clock.advance(300)
    clock.now += 300
    assert watch.run() == []
    for _ in range(5):
        clock.now += 10
        assert watch.run() == []
    # Listening a full down_time since the pause, and still silent: down.
    clock.now += 10
    assert watch.run() == ['node1']


def test_the_conductor_checks_and_serves_periodically(conf):
    conf.set_override('transport_url', 'inproc://')
    svc = service_mod.ConductorService(conf, host='cond1')
    try:
        names = {t.name for t in svc._tasks}
        assert 'Publisher.publish_requested' in names
        assert 'SilenceWatch.run' in names
    finally:
        rpc.cleanup()


class HeartbeatConductor:
    """The real conductor endpoint for heartbeats; ``down`` stands for
    an outage."""

    def __init__(self, publisher):
        self.manager = conductor_manager.ConductorManager(
            'cond', publisher=publisher)
        self.beats = []
        self.down = False

    def agent_heartbeat(self, ctxt, hostname, timeout=None, release=None,
                        rpc_versions=None):
        if self.down:
            raise TimeoutError('no conductor answered')
        self.beats.append((hostname, timeout))
        return self.manager.agent_heartbeat(ctxt, hostname, release,
                                            rpc_versions)


def test_heartbeat_failures_are_logged_once(db, conf, publisher, caplog):
    caplog.set_level(logging.INFO)
    conductor = HeartbeatConductor(publisher)
    conductor.down = True
    agent = agent_manager.AgentManager(conf, host='node1', drivers=[],
                                       conductor_api=conductor)
    assert agent.heartbeat_once() is False
    assert agent.heartbeat_once() is False
    assert caplog.text.count('Heartbeat not acknowledged') == 1

    conductor.down = False
    assert agent.heartbeat_once() is True
    assert 'Heartbeats acknowledged again' in caplog.text
    assert conductor.beats == [('node1', conf.agent.heartbeat_interval)]
    assert agents_db.get('node1').state == 'up'


def test_the_agent_heartbeats_while_its_scan_hangs(db, conf, publisher):
    conf.set_override('transport_url', 'inproc://')
    conf.set_override('heartbeat_interval', 1, group='agent')
    release = threading.Event()
    stuck = ScriptedDriver(conf, 'fpga', [rh.fpga()])
    stuck.discover = lambda: release.wait(60) and []
    conductor = HeartbeatConductor(publisher)
    conductor.report = lambda *args: None
    conductor.agent_started = lambda *args: {}
    agent = agent_manager.AgentManager(conf, host='node1', drivers=[stuck],
                                       conductor_api=conductor)
    agent.start()
    try:
        assert waiting.until(lambda: len(conductor.beats) >= 2, 30)
        assert agent.scans == 1   # the first scan is still hanging
    finally:
        release.set()
        agent.stop()
        rpc.cleanup()
