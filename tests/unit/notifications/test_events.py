"""Versioned notifications and the device history they go with: one
notification and one row per transition, nothing for a transition rolled
back, each payload valid against its committed schema."""
import json
import os
import time
import uuid

import jsonschema
import prometheus_client
import pytest
import sqlalchemy as sa
from oslo_messaging.notify import _impl_test

from cyborg_lite.db import device_history
from cyborg_lite.db import devices
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.notifications import events as notifications
from cyborg_lite.notifications import senders as notification_senders

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
SCHEMAS = os.path.join(ROOT, 'docs', 'notifications')


def schema_of(payload_name):
    with open(os.path.join(SCHEMAS, payload_name + '.json')) as f:
        return json.load(f)


def validate(notification):
    """Check a notification as a listener gets it against the committed
    schema of its payload; the payload's data."""
    payload = notification['payload']
    name = payload['cyborg_lite_object.name']
    event = notification['event_type'][len('accelerator.'):]
    assert notifications.EVENTS[event][0] == name
    jsonschema.validate(payload, schema_of(name),
                        format_checker=jsonschema.FormatChecker())
    return payload['cyborg_lite_object.data']


@pytest.fixture
def sent(conf, sqlite_db):
    """Notifications on, through oslo.messaging's test driver: the list
    of (ctxt, message, priority, retry) each Notifier call made."""
    conf.set_override('driver', ['test'],
                      group='oslo_messaging_notifications')
    notifications.reset()
    _impl_test.reset()
    yield _impl_test.NOTIFICATIONS
    notifications.reset()
    _impl_test.reset()


def received(sent):
    assert notifications.flush()
    return [message for _ctxt, message, _priority, _retry in sent]


def _device(status='enabled', health='healthy'):
    with session.writer() as s:
        dev = models.Device(uuid=str(uuid.uuid4()), type='FPGA',
                            vendor='8086', hostname='host1',
                            driver_name='fake', identity='0000:5e:00.0',
                            status=status, health=health)
        s.add(dev)
    return dev


def history(device_uuid):
    return [row.event for row in device_history.list_rows(device_uuid)]


def test_the_committed_schemas_are_the_payloads():
    for name, payload in notifications.PAYLOADS.items():
        assert schema_of(name) == payload.json_schema(), (
            'docs/notifications/%s.json is stale: run python -m '
            'cyborg_lite.notifications.events docs/notifications' % name)
    assert sorted(os.listdir(SCHEMAS)) == sorted(
        '%s.json' % n for n in notifications.PAYLOADS)


def test_every_event_is_documented():
    with open(os.path.join(ROOT, 'docs', 'notifications.md')) as f:
        doc = f.read()
    for event in notifications.EVENTS:
        assert '`%s`' % notifications.event_type(event) in doc, event


def test_off_by_default_nothing_is_sent_and_the_row_is_written(conf,
                                                               sqlite_db):
    notifications.reset()
    dev = _device()
    assert devices.set_status(dev.uuid, 'maintaining')[1]
    assert not notifications.enabled()
    assert history(dev.uuid) == ['device.disable']


def counted(outcome):
    """cyborg_lite_notifications_total{outcome} as a scrape reads it."""
    return prometheus_client.REGISTRY.get_sample_value(
        'cyborg_lite_notifications_total', {'outcome': outcome}) or 0


def test_one_notification_and_one_row_per_transition(sent):
    dev = _device()
    before = counted('sent')
    devices.set_status(dev.uuid, 'maintaining')
    devices.set_status(dev.uuid, 'maintaining')    # no change, no event
    devices.set_status(dev.uuid, 'enabled')
    messages = received(sent)
    assert [m['event_type'] for m in messages] == [
        'accelerator.device.disable', 'accelerator.device.enable']
    data = [validate(m) for m in messages]
    assert [(d['status'], d['previous']) for d in data] == [
        ('maintaining', 'enabled'), ('enabled', 'maintaining')]
    assert history(dev.uuid) == ['device.disable', 'device.enable']
    assert messages[0]['publisher_id'].endswith(':' + conf_host())
    assert counted('sent') - before == 2


def conf_host():
    from cyborg_lite.conf import CONF
    return CONF.host


def test_a_transition_rolled_back_tells_nothing(sent):
    dev = _device()
    with pytest.raises(RuntimeError):
        with session.writer() as s:
            assert devices.health_changed(
                s, s.scalar(sa.select(models.Device.id).where(
                    models.Device.uuid == dev.uuid)), 'unhealthy',
                reason='a fault')
            raise RuntimeError('the transaction fails after the change')
    assert received(sent) == []
    assert history(dev.uuid) == []


def test_health_changed_is_the_one_call(sent):
    dev = _device()
    with session.writer() as s:
        device_id = s.scalar(sa.select(models.Device.id).where(
            models.Device.uuid == dev.uuid))
        assert devices.health_changed(s, device_id, 'degraded',
                                      reason='afu_id unreadable')
        s.execute(sa.update(models.Device).where(
            models.Device.id == device_id).values(health='degraded'))
    with session.writer() as s:
        # The same health again is no transition.
        assert not devices.health_changed(s, device_id, 'degraded')
    (message,) = received(sent)
    assert message['event_type'] == 'accelerator.device.health_change'
    assert message['priority'] == 'INFO'
    data = validate(message)
    assert (data['health'], data['previous'], data['reason']) == (
        'degraded', 'healthy', 'afu_id unreadable')
    (row,) = device_history.list_rows(dev.uuid)
    assert (row.event, row.state, row.reason) == (
        'device.health_change', 'degraded', 'afu_id unreadable')


def test_a_broker_that_fails_never_fails_the_transition(sent, monkeypatch):
    dev = _device()
    sender = notifications._get_sender()

    def broken(*_args, **_kwargs):
        raise OSError('broker down')
    monkeypatch.setattr(sender.notifier, 'info', broken)
    before = counted('failed'), counted('sent')
    assert devices.set_status(dev.uuid, 'maintaining')[1]
    assert notifications.flush()
    assert notifications.stats()[1] == 1
    assert (counted('failed'), counted('sent')) == (before[0] + 1,
                                                    before[1])
    assert history(dev.uuid) == ['device.disable']


def test_history_is_pruned_by_age_and_count(sqlite_db):
    dev = _device()
    for _ in range(5):
        devices.set_status(dev.uuid, 'maintaining')
        devices.set_status(dev.uuid, 'enabled')
    assert device_history.prune(0, 3) == 7
    assert history(dev.uuid) == ['device.enable', 'device.disable',
                                 'device.enable']
    with session.core_writer() as conn:
        conn.execute(sa.update(models.DeviceHistory.__table__).values(
            created_at=models.utcnow().replace(year=2000)))
    devices.set_status(dev.uuid, 'maintaining')
    assert device_history.prune(30, 0) == 3
    assert history(dev.uuid) == ['device.disable']


def test_a_removed_device_keeps_its_history_until_pruned(sqlite_db):
    dev = _device()
    devices.set_status(dev.uuid, 'maintaining')
    with session.writer() as s:
        s.execute(sa.delete(models.Device).where(
            models.Device.uuid == dev.uuid))
    assert history(dev.uuid) == ['device.disable']
    from cyborg_lite.common import exception
    with pytest.raises(exception.DeviceNotFound):
        device_history.list_rows(str(uuid.uuid4()))


# --- a service stopping sends what it queued --------------------------------

@pytest.fixture
def idle_sender(sent, monkeypatch):
    """The sending thread does not look at its queue by itself during the
    test: only a flush sends (as at a stop that comes before its next
    look)."""
    monkeypatch.setattr(notification_senders, 'SEND_INTERVAL', 3600)
    return sent


class _Stopped:
    """StopSignals as if SIGTERM came at once."""

    def wait(self, *_args, **_kwargs):
        return True


def _queued_transition():
    dev = _device()
    assert devices.set_status(dev.uuid, 'maintaining')[1]
    assert notifications._sender.queue, 'sent already: the test proves nothing'


def test_a_conductor_or_agent_stopped_sends_what_it_queued(idle_sender,
                                                           monkeypatch):
    from cyborg_lite.cmd import service as cmd
    monkeypatch.setattr(cmd.stop_signals, 'StopSignals', _Stopped)

    class Service:
        def start(self):
            _queued_transition()

        def stop(self):
            pass
    assert cmd.serve(Service()) == 0
    assert [n['event_type'] for _c, n, _p, _r in idle_sender] == [
        'accelerator.device.disable']


def test_an_api_worker_exiting_sends_what_it_queued(idle_sender, conf):
    from cyborg_lite.cmd import api as cmd
    server = cmd._Server([])
    _queued_transition()
    # What gunicorn calls in the worker after its last request.
    server.cfg.worker_exit(None, None)
    assert [n['event_type'] for _c, n, _p, _r in idle_sender] == [
        'accelerator.device.disable']


def test_the_all_in_one_stopped_sends_what_it_queued(idle_sender, tmp_path):
    from cyborg_lite.cmd import all_in_one
    aio = all_in_one.AllInOne(all_in_one._parse_cli(
        ['--state-dir', str(tmp_path)]))
    _queued_transition()
    aio.stop()
    assert [n['event_type'] for _c, n, _p, _r in idle_sender] == [
        'accelerator.device.disable']


def test_a_stop_waits_for_a_silent_broker_only_so_long(sent, monkeypatch):
    import threading
    release = threading.Event()
    sender = notifications._get_sender()
    monkeypatch.setattr(sender.notifier, 'info',
                        lambda *_a, **_k: release.wait(30))
    try:
        dev = _device()
        devices.set_status(dev.uuid, 'maintaining')
        devices.set_status(dev.uuid, 'enabled')
        devices.set_status(dev.uuid, 'maintaining')
        began, dropped = time.monotonic(), counted('dropped')
        assert not notifications.flush_at_stop(timeout=0.5)
        assert time.monotonic() - began < 5
        # The one in the broker's hands is the driver's; the two behind
        # it are dropped, and counted.
        assert notifications.stats()[2] == 2
        assert counted('dropped') - dropped == 2
    finally:
        release.set()


def test_a_full_queue_drops_the_oldest_and_counts_it(idle_sender,
                                                     monkeypatch):
    monkeypatch.setattr(notification_senders, 'QUEUE_LIMIT', 2)
    dropped = counted('dropped')
    dev = _device()
    for status in ('maintaining', 'enabled', 'maintaining'):
        devices.set_status(dev.uuid, status)
    assert received(idle_sender) and [
        n['event_type'] for _c, n, _p, _r in idle_sender] == [
        'accelerator.device.enable', 'accelerator.device.disable']
    assert counted('dropped') - dropped == 1


# --- batches ----------------------------------------------------------------

class _SlowDrain(notification_senders.QueuedSender):
    """Takes what is queued and holds it a while, as the sending process's
    round trip to a broker does; the size of each batch."""

    def __init__(self):
        self.batches = []
        super().__init__()

    def _drain(self):
        with self._wake:
            batch = list(self.queue)
            self.queue.clear()
        self.batches.append(len(batch))
        time.sleep(0.02)
        return len(batch), 0


def test_a_busy_queue_is_sent_in_batches_not_as_soon_as_one_went(
        monkeypatch):
    # NOTE: each batch costs the service's process a fixed share (the
    # GIL's hand-overs, a pipe's write and read): taken as soon as the
    # last went, they were a few notifications each on a busy API.
    monkeypatch.setattr(notification_senders, 'WAKE_AT', 20)
    monkeypatch.setattr(notification_senders, 'SEND_INTERVAL', 3600)
    sender = _SlowDrain()
    for number in range(70):
        sender.put(({}, number))
        # A trickle: several arrive while a batch is out.
        time.sleep(0.002)
    assert sender.flush(10)
    assert sum(sender.batches) == 70
    assert sender.batches[:-1] and all(
        size >= 20 for size in sender.batches[:-1]), sender.batches
