"""conductor/publishing: sinks loaded by name, each publish to all; a
database outage on the way is said once by db/sql/session.py, not per sink."""
import threading

import oslo_messaging
import pytest

from cyborg_lite.common import exception
from cyborg_lite.conductor import manager as manager_mod
from cyborg_lite.conductor import publishing
from cyborg_lite.conductor import service as service_mod
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import session
from cyborg_lite.inventory import sink as inventory_sink
from cyborg_lite.placement import sink as placement_sink
from cyborg_lite.rpc import transport as rpc
from tests.functional.placement import conftest as placement_conftest


class RecordingSink(inventory_sink.InventorySink):
    def __init__(self, broken=False, raises=RuntimeError('sink bug')):
        self.published = []
        self.broken = broken
        self.raises = raises

    @classmethod
    def from_conf(cls, conf):
        return cls()

    def publish(self, hostname):
        self.published.append(hostname)
        if self.broken:
            raise self.raises
        return inventory_sink.PublishResult(hostname, True)

    def retry_pending(self):
        if self.broken:
            raise RuntimeError('sink bug')
        return [inventory_sink.PublishResult('again', True)]

    def pending_hosts(self):
        return {}


def test_placement_is_the_default_sink_loaded_by_its_entry_point(conf):
    assert conf.conductor.inventory_sinks == ['placement']
    assert publishing.load_sink_class('placement') is \
        placement_sink.PlacementSink


def test_an_unknown_sink_name_is_a_config_error(conf):
    conf.set_override('inventory_sinks', ['placement', 'nosuch'],
                      group='conductor')
    with pytest.raises(exception.ConfigError, match="'nosuch'"):
        publishing.Publisher.from_conf(conf)


def test_a_configured_placement_sink_is_used(conf):
    placement_conftest.configure_placement(conf, 'http://127.0.0.1:9')
    publisher = publishing.Publisher.from_conf(conf)
    [sink] = publisher.sinks
    assert isinstance(sink, placement_sink.PlacementSink)


def test_placement_without_its_options_is_left_out(conf, caplog):
    publisher = publishing.Publisher.from_conf(conf)
    assert publisher.sinks == [] and not publisher
    assert '[placement]auth_type is not set' in caplog.text


def test_one_failing_sink_does_not_stop_the_others(caplog):
    broken, healthy = RecordingSink(broken=True), RecordingSink()
    publisher = publishing.Publisher([broken, healthy])
    results = publisher.publish('node1')
    assert healthy.published == broken.published == ['node1']
    assert results[0] is None and results[1].ok
    assert [r.hostname for r in publisher.retry_pending()] == ['again']
    assert 'sink bug' in caplog.text


def test_a_database_outage_in_a_sink_logs_no_traceback(caplog):
    # db/sql/session.py logs the outage once; a traceback per sink per
    # publish would bury it.
    outage = RecordingSink(
        broken=True, raises=exception.DatabaseUnavailable())
    publisher = publishing.Publisher([outage, RecordingSink()])
    results = publisher.publish('node1')
    assert results[0] is None and results[1].ok
    assert 'Traceback' not in caplog.text
    assert 'Inventory sink' not in caplog.text


def _request(hostname, reason='test'):
    with session.writer() as s:
        publish_requests.add(s, hostname, reason)


def test_publish_host_serves_the_requests_it_published(sqlite_db):
    _request('node1')
    _request('node2')
    sink = RecordingSink()
    [result] = publishing.Publisher([sink]).publish_host('node1')
    assert result.ok and sink.published == ['node1']
    assert set(publish_requests.pending()) == {'node2'}


def test_publish_host_keeps_the_requests_a_sink_failed(sqlite_db):
    _request('node1')
    results = publishing.Publisher(
        [RecordingSink(), RecordingSink(broken=True)]).publish_host('node1')
    assert results[0].ok and results[1] is None
    # The periodic publish_requested serves them later.
    assert set(publish_requests.pending()) == {'node1'}


def test_publish_host_in_a_database_outage_leaves_the_requests(
        sqlite_db, monkeypatch, caplog):
    _request('node1')

    def outage(hostname):
        raise exception.DatabaseUnavailable()
    monkeypatch.setattr(publish_requests, 'state', outage)
    sink = RecordingSink()
    assert publishing.Publisher([sink]).publish_host('node1') == [None]
    assert sink.published == [] and 'Traceback' not in caplog.text
    monkeypatch.undo()
    assert set(publish_requests.pending()) == {'node1'}


class KnownSink(RecordingSink):
    def publish_known(self, hostname):
        self.published.append(('known', hostname))
        return inventory_sink.PublishResult(hostname, True)


def test_the_last_publisher_is_who_served_the_newest_request(db):
    for _ in range(3):
        _request('node1')
    newest = publish_requests.state('node1').last_id
    publish_requests.served('node1', newest, 'fast')
    # A slower publish, of an older read, serving after it.
    publish_requests.served('node1', newest - 1, 'slow')
    assert publish_requests.state('node1') == (None, 0, 'fast', None)
    _request('node1')
    publish_requests.served('node1', newest + 1, 'slow')
    assert publish_requests.state('node1').publisher == 'slow'


def test_publish_host_asks_known_only_after_serving_the_host_last(
        sqlite_db):
    sink = KnownSink()
    publisher = publishing.Publisher([sink])
    _request('node1')
    publisher.publish_host('node1')      # served by nobody before
    _request('node1')
    publisher.publish_host('node1')      # it served node1 last
    _request('node1')
    _request('node1')
    publisher.publish_host('node1')      # two changes pending
    publish_requests.served('node1', 10 ** 6, 'another')
    _request('node1')
    publisher.publish_host('node1')      # another served it last
    assert sink.published == ['node1', ('known', 'node1'), 'node1',
                              'node1']


def test_trust_in_its_own_publish_can_be_turned_off(conf, sqlite_db):
    conf.set_override('trust_own_publish', False, group='conductor')
    assert publishing.Publisher.from_conf(conf).trust_own_publish is False
    sink = KnownSink()
    publisher = publishing.Publisher([sink], trust_own_publish=False)
    for _ in range(2):
        _request('node1')
        publisher.publish_host('node1')
    assert sink.published == ['node1', 'node1']
    assert publish_requests.state('node1').publisher == publisher.id


@pytest.mark.parametrize('sinks', [[], ['placement']])
def test_conductor_without_a_usable_sink_publishes_nothing(conf, sinks):
    conf.set_override('transport_url', 'inproc://')
    conf.set_override('inventory_sinks', sinks, group='conductor')
    service = service_mod.ConductorService(conf, host='cond1')
    try:
        assert service.manager.after_report is None
        assert service.manager.programming.after_success is None
    finally:
        rpc.cleanup()


def test_conductor_publishes_reports_and_retries_through_its_sinks(conf):
    conf.set_override('transport_url', 'inproc://')
    placement_conftest.configure_placement(conf, 'http://127.0.0.1:9')
    service = service_mod.ConductorService(conf, host='cond1')
    try:
        publish = service.manager.after_report
        [sink] = publish.__self__.sinks
        assert isinstance(sink, placement_sink.PlacementSink)
        assert service.manager.programming.after_success == publish
        # Each publish serves the publish request its change committed.
        assert publish.__func__ is publishing.Publisher.publish_host
        retries = [t for t in service._tasks
                   if t.func == publish.__self__.retry_pending]
        assert len(retries) == 1
    finally:
        rpc.cleanup()


class OutagePublisher(publishing.Publisher):
    def publish_requested(self, wait=0.0):
        raise exception.DatabaseUnavailable()


def test_an_outage_after_a_bind_logs_no_traceback(sqlite_db, caplog):
    # The bind is committed; the periodic task serves what is left.
    manager = manager_mod.ConductorManager(
        'cond1', publisher=OutagePublisher([RecordingSink()]))
    manager._publish_requested()
    assert 'Traceback' not in caplog.text


class OutageCleaning:
    def start(self, hostnames):
        raise exception.DatabaseUnavailable()


def test_an_outage_in_a_cleaning_cast_is_expected_not_a_traceback(
        sqlite_db):
    # oslo.messaging logs an ExpectedException at debug, anything else
    # with its traceback.
    manager = manager_mod.ConductorManager('cond1',
                                           cleaning=OutageCleaning())
    with pytest.raises(oslo_messaging.ExpectedException):
        manager.start_cleaning({}, ['node1'])


def test_publish_hosts_answers_once_every_sink_has_them(db):
    good, broken = RecordingSink(), RecordingSink(broken=True)
    conductor = manager_mod.ConductorManager(
        'c1', publisher=publishing.Publisher([good]))
    assert conductor.publish_hosts(None, ['h2', 'h1', 'h1']) == {
        'h1': True, 'h2': True}
    assert good.published == ['h1', 'h2']
    failing = manager_mod.ConductorManager(
        'c1', publisher=publishing.Publisher([good, broken]))
    assert failing.publish_hosts(None, ['h1']) == {'h1': False}


@pytest.mark.parametrize('bad', ['h1', [''], [None], None, [1]])
def test_publish_hosts_refuses_what_is_not_a_list_of_names(db, bad):
    sink = RecordingSink()
    conductor = manager_mod.ConductorManager(
        'c1', publisher=publishing.Publisher([sink]))
    with pytest.raises(oslo_messaging.ExpectedException) as raised:
        conductor.publish_hosts(None, bad)
    assert isinstance(raised.value.exc_info[1], exception.Invalid)
    assert sink.published == []


class BlockingSink(RecordingSink):
    """Blocks its first publish until let go: a pass that read the
    requests before a later change, still publishing."""

    def __init__(self):
        super().__init__()
        self.entered, self.go = threading.Event(), threading.Event()

    def publish(self, hostname):
        if not self.entered.is_set():
            self.entered.set()
            assert self.go.wait(30)
        return super().publish(hostname)


def _serving_a_pass_read_before(sqlite_db):
    """A publisher whose periodic pass has read host1's request and
    blocks in its sink; the thread serving it."""
    sink = BlockingSink()
    publisher = publishing.Publisher([sink])
    _request('host1')
    periodic = threading.Thread(target=publisher.publish_requested)
    periodic.start()
    assert sink.entered.wait(10)
    return publisher, sink, periodic


def test_a_caller_who_waits_returns_after_a_pass_that_saw_its_request(
        sqlite_db):
    publisher, sink, periodic = _serving_a_pass_read_before(sqlite_db)
    _request('host2')      # a claim prepared meanwhile
    answered = []
    caller = threading.Thread(target=lambda: answered.append(
        publisher.publish_requested(wait=10)))
    caller.start()
    caller.join(0.3)
    # The pass that is running read the requests before host2's.
    assert caller.is_alive() and answered == []
    sink.go.set()
    caller.join(10)
    periodic.join(10)
    assert answered == [[]]
    assert sink.published == ['host1', 'host2']
    assert publish_requests.pending() == {}


def test_a_caller_who_does_not_wait_leaves_the_request_to_the_pass(
        sqlite_db):
    publisher, sink, periodic = _serving_a_pass_read_before(sqlite_db)
    _request('host2')
    assert publisher.publish_requested() == []
    sink.go.set()
    periodic.join(10)
    assert sink.published == ['host1', 'host2']


def test_a_caller_serves_itself_when_the_serving_pass_failed(sqlite_db):
    publisher, sink, periodic = _serving_a_pass_read_before(sqlite_db)
    _request('host2')
    answered = []
    caller = threading.Thread(target=lambda: answered.append(
        publisher.publish_requested(wait=10)))
    caller.start()
    caller.join(0.3)

    serve, failed = publisher._serve_requests, []

    def fails_once():
        if not failed:
            failed.append(True)
            raise RuntimeError('the pass failed')
        return serve()
    publisher._serve_requests = fails_once
    sink.go.set()
    periodic.join(10)
    caller.join(10)
    assert failed
    # host1 by the pass that ran; host2 by the caller, the pass that
    # would have seen it having failed.
    assert answered == [['host2']]
    assert sink.published == ['host1', 'host2']
