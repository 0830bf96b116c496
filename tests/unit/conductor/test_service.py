"""The conductor's periodic-task registry and its clean stop."""
import threading

import pytest

from cyborg_lite.conductor import manager
from cyborg_lite.conductor import service as service_mod
from cyborg_lite.rpc import transport as rpc
from tests import waiting
from tests.unit.conductor import report_helpers as h


@pytest.fixture
def service(conf):
    conf.set_override('transport_url', 'inproc://')
    svc = service_mod.ConductorService(conf, host='cond1')
    yield svc
    svc.stop()
    rpc.cleanup()


def test_periodic_tasks_run_at_their_interval(service):
    runs = []
    service.add_periodic(lambda: runs.append('fast'), interval=0.05,
                         run_immediately=True)
    service.add_periodic(lambda: runs.append('slow'), interval=60)
    service.start()

    assert waiting.until(lambda: runs.count('fast') >= 3)
    assert 'slow' not in runs


def test_failing_task_is_logged_and_runs_again(service, caplog):
    calls = []

    def broken():
        calls.append(1)
        raise RuntimeError('reaper bug')

    service.start()
    # Registered after start: the loop picks it up at once.
    service.add_periodic(broken, interval=0.05, run_immediately=True)

    assert waiting.until(lambda: len(calls) >= 2)
    assert 'reaper bug' in caplog.text


def test_stop_waits_for_a_running_task(service):
    started, release, finished = (threading.Event(), threading.Event(),
                                  threading.Event())

    def slow():
        started.set()
        release.wait(5)
        finished.set()

    service.add_periodic(slow, interval=60, run_immediately=True)
    service.start()
    assert started.wait(5)
    threading.Timer(0.2, release.set).start()

    service.stop()

    assert finished.is_set()


def test_after_report_hook_runs_only_when_rows_changed(sqlite_db):
    synced = []
    mgr = manager.ConductorManager('cond1', after_report=synced.append)
    entries = [h.ok('fpga', h.fpga())]

    mgr.report(None, 'node1', entries)
    mgr.report(None, 'node1', entries)

    assert synced == ['node1']


def test_failing_hook_does_not_fail_the_report(sqlite_db, caplog):
    def down(hostname):
        raise RuntimeError('placement down')

    mgr = manager.ConductorManager('cond1', after_report=down)

    ack = mgr.report(None, 'node1', [h.ok('fpga', h.fpga())])

    assert ack['changed'] and len(h.devices()) == 1
    assert 'placement down' in caplog.text


def test_after_reply_work_runs_later_in_order_and_before_the_stop_ends(
        service):
    """Work a call's answer need not wait for runs on one thread, after
    the caller that queued it went on, one at a time in order; a stop
    runs what is queued before it ends."""
    gate, done = threading.Event(), []
    service.start()

    service.after_reply(lambda: gate.wait(5) and done.append(
        threading.current_thread().name))
    service.after_reply(lambda: done.append('second'))
    assert done == []   # the caller went on: nothing ran in its thread
    gate.set()
    service.after_reply(lambda: done.append('third'))
    service.stop()

    assert done[0].startswith('conductor-after-reply')
    assert done[1:] == ['second', 'third']


def test_after_reply_work_of_a_service_not_running_runs_at_once(
        service, caplog):
    done = []
    service.after_reply(lambda: done.append(1))
    service.after_reply(lambda: 1 / 0)
    assert done == [1]
    assert 'ZeroDivisionError' in caplog.text
