"""api/metrics.RequestMetrics: requests queued on their way and added to
prometheus_client's values in batches, none lost, none counted twice."""
import os
import threading

import prometheus_client
import pytest

from cyborg_lite.api import handler
from cyborg_lite.api import metrics
from tests import waiting

ROUTE = '/v2/test-request-metrics/{uuid}'


def _count(method='GET', status='200', route=ROUTE):
    return prometheus_client.REGISTRY.get_sample_value(
        'cyborg_lite_api_requests_total',
        {'route': route, 'method': method, 'status': status}) or 0.0


def _environ(method='GET', route=ROUTE):
    return {handler.ROUTE_KEY: route, 'REQUEST_METHOD': method}


@pytest.fixture
def recorder():
    recorder = metrics.RequestMetrics(router=None)
    yield recorder
    if recorder._timer is not None:
        recorder._timer.cancel()


def test_a_request_is_counted_within_the_fold_delay(recorder, monkeypatch):
    monkeypatch.setattr(metrics, 'FOLD_DELAY', 0.05)
    before = _count()
    for number in (1, 2):
        # NOTE: the second after the first timer's fold: one timer a
        # batch, not one for the process's life.
        recorder(_environ(), '200', 0.002)
        assert waiting.until(lambda: _count() == before + number,
                             timeout=10), \
            'no scrape, no more requests: the timer must add it up'


def test_fold_at_requests_are_counted_at_once(recorder, monkeypatch):
    monkeypatch.setattr(metrics, 'FOLD_DELAY', 3600)
    before = _count(status='201')
    for _ in range(metrics.FOLD_AT):
        recorder(_environ(), '201', 0.002)
    assert _count(status='201') == before + metrics.FOLD_AT
    assert not recorder._waiting


def test_a_fold_counts_what_waits_with_its_time(recorder, monkeypatch):
    monkeypatch.setattr(metrics, 'FOLD_DELAY', 3600)
    before = _count(status='404')
    seconds = prometheus_client.REGISTRY.get_sample_value(
        'cyborg_lite_api_request_duration_seconds_sum',
        {'route': ROUTE, 'method': 'GET'}) or 0.0
    recorder(_environ(), '404', 0.25)
    assert _count(status='404') == before, 'waits for a batch'
    recorder.fold()
    assert _count(status='404') == before + 1
    assert prometheus_client.REGISTRY.get_sample_value(
        'cyborg_lite_api_request_duration_seconds_sum',
        {'route': ROUTE, 'method': 'GET'}) == pytest.approx(seconds + 0.25)


def test_threads_lose_and_double_nothing(recorder, monkeypatch):
    # NOTE: small batches, so that folds on many threads overlap the
    # appends of the others.
    monkeypatch.setattr(metrics, 'FOLD_AT', 3)
    monkeypatch.setattr(metrics, 'FOLD_DELAY', 3600)
    before = _count(status='202')

    def calls():
        for _ in range(2000):
            recorder(_environ(), '202', 0.001)
    threads = [threading.Thread(target=calls) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    recorder.fold()
    assert _count(status='202') == before + 8 * 2000


def test_unknown_methods_share_one_label(recorder, monkeypatch):
    monkeypatch.setattr(metrics, 'FOLD_DELAY', 3600)
    before = _count(method='other')
    for number in range(50):
        recorder(_environ(method='X%d' % number), '405', 0.001)
    recorder.fold()
    assert _count(method='other', status='405') == before + 50
    assert [key for key in recorder._children if key[0] == ROUTE] == [
        (ROUTE, 'other', '405')]


def test_a_forked_child_starts_with_nothing_of_its_parents(recorder,
                                                         monkeypatch):
    monkeypatch.setattr(metrics, 'FOLD_DELAY', 3600)
    recorder(_environ(), '200', 0.001)
    assert recorder._timer is not None and recorder._waiting
    pid = os.fork()
    if pid == 0:
        # NOTE: the parent's timer thread is not here: a child keeping
        # its reference would never add up a request of its own.
        ok = recorder._timer is None and not recorder._waiting
        os._exit(0 if ok else 1)
    _pid, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert recorder._waiting, "the parent's own are still its to count"


def test_a_worker_exiting_counts_what_waits(recorder, monkeypatch, conf):
    monkeypatch.setattr(metrics, 'FOLD_DELAY', 3600)
    from cyborg_lite.cmd import api as cmd
    before = _count(status='204')
    recorder(_environ(), '204', 0.001)
    server = cmd._Server([])
    # What gunicorn calls in the worker after its last request: the
    # worker's multi-process files outlive it, its queue would not.
    server.cfg.worker_exit(None, None)
    assert _count(status='204') == before + 1


def test_no_thread_for_the_timer_fails_no_request(recorder, monkeypatch,
                                                  caplog):
    def refuse(_timer):
        raise RuntimeError("can't start new thread")
    monkeypatch.setattr(metrics.threading.Timer, 'start', refuse)
    before = _count(status='409')
    recorder(_environ(), '409', 0.001)
    recorder(_environ(), '409', 0.001)
    assert recorder._timer is None
    assert len([r for r in caplog.records
                if 'no timer thread' in r.getMessage()]) == 1, 'said once'
    recorder.fold()
    assert _count(status='409') == before + 2
