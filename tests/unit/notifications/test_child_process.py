"""Notifications sent from a process of their own
(notifications/senders.ProcessSender and notification_child): a
broker's transport gets one, in-process transports keep the thread; each
notification goes once, in order; the sending process killed is started
again; it exits when its parent stops or is killed, and an orphan stuck
on a silent broker exits after its stop timeout.

The child's Notifier here uses oslo.messaging's ``log`` driver, which
writes each notification, as sent, to the child's stderr (a file read
back); tests/functional/multihost/test_notifications.py hears the same
from a real RabbitMQ."""
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import jsonschema
import pytest

from cyborg_lite.notifications import events as notifications
from cyborg_lite.notifications import senders
from tests import servers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


@pytest.fixture
def silent_broker():
    """The URL of a broker that takes connections and never answers
    (kombu waits for its handshake, about 5 s, then fails)."""
    server = socket.socket()
    server.bind(('127.0.0.1', 0))
    server.listen(16)
    yield 'rabbit://guest:guest@127.0.0.1:%d/' % server.getsockname()[1]
    server.close()


def _setup(conf, driver='log', url=None, stop_timeout=None):
    conf.set_override('driver', [driver],
                      group='oslo_messaging_notifications')
    conf.set_override('transport_url', url or 'rabbit://guest:guest@'
                      '127.0.0.1:%d/' % servers.free_port(),
                      group='oslo_messaging_notifications')
    setup = {'publisher_id': 'cyborg-lite-test:host1',
             'log_level': logging.INFO,
             'conf': senders.messaging_values(conf)}
    if stop_timeout is not None:
        setup['stop_timeout'] = stop_timeout
    return setup


@pytest.fixture
def logged(conf, tmp_path):
    """A ProcessSender whose child logs each notification to a file, and
    a function reading them back (the JSON messages, in order)."""
    path = tmp_path / 'child.log'
    stderr = open(path, 'wb')
    sender = senders.ProcessSender(_setup(conf), stderr=stderr)

    def sent():
        assert sender.flush(30)
        return _messages(path)
    yield sender, sent
    sender.close(5)
    stderr.close()


def _messages(path):
    marker = '[notifications] '
    with open(path) as f:
        return [json.loads(line.split(marker, 1)[1]) for line in f
                if marker in line and 'oslo.messaging.notification.' in line]


def _agent_event(hostname):
    return notifications.Event('agent.down', {
        'hostname': hostname, 'state': 'down', 'device_uuids': []})


def _gone(pid, timeout):
    """Whether ``pid`` exits within ``timeout``: gone, or a zombie whose
    every thread has ended (which a container's init may never reap; its
    first thread turns zombie while the others still end)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open('/proc/%d/stat' % pid) as f:
                zombie = f.read().rpartition(')')[2].split()[0] == 'Z'
            if zombie and len(os.listdir('/proc/%d/task' % pid)) == 1:
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_a_brokers_transport_sends_from_a_process_of_its_own(conf):
    _setup(conf, driver='messagingv2')
    notifications.reset()
    try:
        assert notifications.enabled()
        sender = notifications._sender
        assert isinstance(sender, senders.ProcessSender)
        assert sender.child_pid not in (None, os.getpid())
        assert notifications.wait_started()
    finally:
        notifications.reset()


@pytest.mark.parametrize('driver,url', [
    ('messagingv2', 'inproc://'), ('messagingv2', 'fake://'),
    ('test', None)])
def test_what_delivers_in_the_process_is_sent_from_a_thread(conf, driver,
                                                            url):
    _setup(conf, driver=driver, url=url)
    notifications.reset()
    try:
        assert notifications.enabled()
        assert isinstance(notifications._sender, senders.ThreadSender)
    finally:
        notifications.reset()


def test_each_notification_is_sent_once_in_order(logged):
    sender, sent = logged
    for number in range(300):
        sender.put(({'request_id': 'req-%d' % number},
                    _agent_event('host%d' % number)))
    messages = sent()
    assert [m['payload']['cyborg_lite_object.data']['hostname']
            for m in messages] == ['host%d' % n for n in range(300)]
    with open(os.path.join(ROOT, 'docs', 'notifications',
                           'AgentPayload.json')) as f:
        schema = json.load(f)
    for message in messages:
        assert message['event_type'] == 'accelerator.agent.down'
        assert message['priority'] == 'ERROR'
        assert message['publisher_id'] == 'cyborg-lite-test:host1'
        jsonschema.validate(message['payload'], schema)
    assert (sender.sent, sender.failed, sender.dropped) == (300, 0, 0)


def test_a_sending_process_killed_is_started_again(logged):
    sender, sent = logged
    sender.put(({}, _agent_event('before')))
    assert len(sent()) == 1
    first = sender.child_pid
    os.kill(first, signal.SIGKILL)
    assert _gone(first, 10)
    sender.put(({}, _agent_event('after')))
    assert [m['payload']['cyborg_lite_object.data']['hostname']
            for m in sent()] == ['before', 'after']
    assert sender.child_pid not in (None, first)
    assert sender.dropped == 0


def test_a_broker_that_refuses_counts_failed_not_sent(conf):
    # oslo.messaging's Notifier logs its driver's failure and returns.
    sender = senders.ProcessSender(_setup(conf, driver='messagingv2'),
                                   stderr=subprocess.DEVNULL)
    try:
        for name in ('a', 'b', 'c'):
            sender.put(({}, _agent_event(name)))
        assert sender.flush(30)
        assert (sender.sent, sender.failed, sender.dropped) == (0, 3, 0)
    finally:
        sender.close(5)


def test_the_batch_a_killed_process_held_is_counted_dropped(
        conf, silent_broker):
    # The child holds its batch, waiting for the broker's handshake.
    sender = senders.ProcessSender(
        _setup(conf, driver='messagingv2', url=silent_broker),
        stderr=subprocess.DEVNULL)
    try:
        assert sender.wait_started()
        for name in ('a', 'b', 'c'):
            sender.put(({}, _agent_event(name)))
        assert not sender.flush(1)
        stuck = sender.child_pid
        os.kill(stuck, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while sender.dropped < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (sender.sent, sender.dropped) == (0, 3)
        sender.put(({}, _agent_event('d')))
        deadline = time.monotonic() + 10
        while sender.child_pid in (None, stuck) and (
                time.monotonic() < deadline):
            time.sleep(0.05)
        assert sender.child_pid not in (None, stuck)
    finally:
        pid = sender.child_pid
        sender.close(0)
        assert pid is None or _gone(pid, 10)


def test_a_service_stopping_ends_its_sending_process(conf, silent_broker):
    _setup(conf, driver='messagingv2', url=silent_broker)
    notifications.reset()
    try:
        assert notifications.enabled() and notifications.wait_started()
        pid = notifications._sender.child_pid
        # A broker that never answers: the stop gives up after its time.
        notifications.emit(_agent_event('host1'))
        began = time.monotonic()
        assert not notifications.flush_at_stop(timeout=0.5)
        assert time.monotonic() - began < 5
        assert _gone(pid, 10)
    finally:
        notifications.reset()


def test_the_stop_signals_of_a_process_group_leave_it_to_its_parent(
        logged):
    sender, sent = logged
    assert sender.wait_started()
    os.kill(sender.child_pid, signal.SIGTERM)
    os.kill(sender.child_pid, signal.SIGINT)
    sender.put(({}, _agent_event('after-signals')))
    assert len(sent()) == 1
    assert sender.dropped == 0


_PARENT = textwrap.dedent('''
    import logging, sys, time
    from cyborg_lite.common import config
    from cyborg_lite.notifications import senders
    from cyborg_lite.notifications import events as notifications
    from cyborg_lite.conf import CONF
    config.parse_args([], default_config_files=[])
    CONF.set_override('driver', [sys.argv[1]],
                      group='oslo_messaging_notifications')
    CONF.set_override('transport_url', sys.argv[2],
                      group='oslo_messaging_notifications')
    sender = senders.ProcessSender({
        'publisher_id': 'parent:host1', 'log_level': logging.INFO,
        'stop_timeout': 1, 'conf': senders.messaging_values(CONF)},
        stderr=open(sys.argv[3], 'wb'))
    assert sender.wait_started()
    sender.put(({}, notifications.Event('agent.up', {
        'hostname': 'host1', 'state': 'up', 'device_uuids': []})))
    sender.flush(float(sys.argv[4]))
    print(sender.child_pid, flush=True)
    time.sleep(3600)
''')


def _parent(tmp_path, driver, url, flush_timeout):
    script = tmp_path / 'parent.py'
    script.write_text(_PARENT)
    proc = subprocess.Popen(
        [sys.executable, str(script), driver, url,
         str(tmp_path / 'child.log'), str(flush_timeout)],
        stdout=subprocess.PIPE, cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT))
    # The child's pid is the one line of digits; the service's log (its
    # start line) may come first on the same stdout.
    child = next(int(line) for line in iter(proc.stdout.readline, b'')
                 if line.strip().isdigit())
    return proc, child


def test_the_sending_process_exits_when_its_parent_is_killed(tmp_path):
    proc, child = _parent(tmp_path, 'log', 'rabbit://', 30)
    try:
        assert len(_messages(tmp_path / 'child.log')) == 1
        proc.kill()
        assert _gone(child, 10)
    finally:
        proc.kill()
        proc.wait()


def test_an_orphan_stuck_on_a_silent_broker_exits_after_its_stop_timeout(
        tmp_path, silent_broker):
    proc, child = _parent(tmp_path, 'messagingv2', silent_broker, 0.5)
    try:
        proc.kill()
        proc.wait()
        # ORPHAN_CHECK_INTERVAL, then its stop_timeout of 1 s.
        assert _gone(child, 15)
        with open(tmp_path / 'child.log') as f:
            assert 'notifications still not sent; exiting' in f.read()
    finally:
        proc.kill()
        proc.wait()


def test_a_forked_worker_sends_from_its_own_process_and_lets_the_parents_go(
        conf):
    # What gunicorn does: the master forks its workers after start.
    _setup(conf, driver='log')
    notifications.reset()
    try:
        assert notifications.enabled() and notifications.wait_started()
        parents_child = notifications._sender.child_pid
        held, release = os.pipe()
        worker = os.fork()
        if worker == 0:
            os.close(release)
            ok = (notifications.enabled() and
                  notifications._sender.child_pid not in (None,
                                                          parents_child))
            # Alive until the parent has stopped its sender: its copy of
            # the pipe must not keep the parent's child waiting for more.
            os.read(held, 1)
            notifications.reset()
            os._exit(0 if ok else 1)
        os.close(held)
        try:
            child = notifications._sender._proc
            notifications._sender.close(3)
            # It ended on its stdin's end (0), not killed after the 3 s.
            assert child.returncode == 0, 'the worker kept its pipe open'
        finally:
            os.close(release)
        assert _gone(parents_child, 1)
        assert os.waitpid(worker, 0)[1] == 0
    finally:
        notifications.reset()


@pytest.mark.parametrize('answer,counts', [
    (b'3 0\n', (3, 0)), (b'0 2\n', (0, 2)), (b'', None),
    (b'hello world\n', None), (b'3\n', None), (b'-1 0\n', None),
    (b'3 0 1\n', None)])
def test_only_a_whole_answer_line_counts(answer, counts):
    # Anything else is a child that died or broke the protocol: started
    # again, its batch counted dropped.
    assert senders._counts(answer) == counts
