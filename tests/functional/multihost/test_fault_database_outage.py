"""Stop PostgreSQL under load, then start it again (issue 18.4).

While it is down the API answers 503 with Retry-After in its JSON error
form (it used to answer 500 "Unexpected API error"), and every service
logs the outage once and its end once (a conductor used to write about
3,550 ERROR lines and the API 4,400 in 15 s, tracebacks included). Once
it is back, binds and reports work again without restarting anything.
"""
import json
import re
import threading

import pytest
import requests

from tests.functional.multihost import cluster as cl
from tests import waiting

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

DOWN = 'Database unreachable: '
STILL_DOWN = 'Database still unreachable after '
BACK = 'Database reachable again: the outage ended after '
NEW_FUNCTION = 'dbdbdbdbdbdbdbdbdbdbdbdbdbdbdbdb'


class Load:
    """API reads in a loop, from two threads; keeps what came back."""

    PATHS = ('/devices', '/accelerator_requests')

    def __init__(self, cluster):
        self.cluster = cluster
        self.stop = threading.Event()
        self.statuses = []
        self.unavailable = []
        self.threads = [threading.Thread(target=self._run, args=(p,))
                        for p in self.PATHS]

    def _run(self, path):
        with requests.Session() as session:
            while not self.stop.is_set():
                try:
                    resp = session.get(self.cluster.api + path,
                                       headers=cl.ACCEL, timeout=30)
                except requests.RequestException as exc:
                    self.statuses.append(repr(exc))
                    continue
                self.statuses.append(resp.status_code)
                if resp.status_code == 503:
                    self.unavailable.append(resp)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(60)


def _without(cluster, offsets, names, line):
    """The services among ``names`` that have not logged ``line``."""
    logged = cluster.logs_since(offsets)
    return [n for n in names if line not in logged[n]]


def _until_all_logged(cluster, offsets, names, line, what):
    missing = []

    def done():
        missing[:] = _without(cluster, offsets, names, line)
        return not missing
    if not waiting.until(done, 60, 0.5):
        raise AssertionError('%s: not logged by %s' % (what, missing))


def _errors(text):
    return [line for line in text.splitlines() if ' ERROR ' in line]


def test_database_outage_is_503_logged_once_and_survived(cluster,
                                                         arq_cleanup):
    region = [r for r in cluster.region_rps() if r.host == 'host-1'][-1]
    logged_from = cluster.log_offsets()
    watched = ['api'] + cluster.conductor_names
    with Load(cluster) as load:
        cluster.wait_for(lambda: 200 in load.statuses, 30, 'API reads')
        cluster.stop_database()
        try:
            # Down long enough for every service to meet it many times:
            # 100 refused API reads, each conductor and the API logging it.
            cluster.wait_for(lambda: len(load.unavailable) >= 100, 60,
                             '100 reads refused')
            _until_all_logged(cluster, logged_from, watched, DOWN,
                              'the outage')
            refused = len(load.unavailable)
        finally:
            cluster.start_database()
        cluster.wait_for(lambda: load.statuses[-1] == 200, 60,
                         'API reads working again')
        # The end is logged once by every service, at its first success
        # 2 s after its last failure (the load keeps the API busy).
        _until_all_logged(cluster, logged_from, watched, BACK,
                          'the end of the outage')

    # 503 in the API's JSON error form, with Retry-After; never a 500.
    assert 500 not in load.statuses
    for resp in load.unavailable:
        assert resp.headers['Retry-After'] == '5'
        fault = json.loads(resp.json()['error_message'])
        assert fault['faultstring'] == ('The database is unavailable; try '
                                        'again later.')
        assert fault['faultcode'] == 'Server'

    logs = cluster.logs_since(logged_from)
    for name in watched:
        text = logs[name]
        assert 'Traceback' not in text, (name, text[-3000:])
        assert text.count(DOWN) == 1, (name, text[-3000:])
        assert text.count(BACK) == 1, (name, text[-3000:])
        # Bounded: the start line, at most a "still" line per 30 s (the
        # outage lasted well under a minute), nothing per failure.
        errors = _errors(text)
        assert len(errors) <= 3, (name, errors)
        assert all(DOWN in e or STILL_DOWN in e for e in errors), errors
    print('%d reads refused during the outage; ERROR lines: %s' % (
        refused, {n: len(_errors(logs[n])) for n in watched}))

    # Service back: a hardware change is reported and stored, a bind ends
    # Bound.
    cluster.load_function(region, NEW_FUNCTION)
    cluster.wait_for(lambda: cluster.api_function_id(region) == NEW_FUNCTION,
                     60, 'a report stored after the outage')
    cluster.create_profile('mh-after-db')
    (arq,) = cluster.create_arqs('mh-after-db')
    arq_cleanup.append(arq['uuid'])
    free = [r for r in cluster.region_rps() if r.host == 'host-0'][0]
    cluster.bind(arq['uuid'], free)
    assert cluster.wait_resolved([arq['uuid']], 60)[arq['uuid']][
        'state'] == 'Bound'
    assert re.search(r'outage ended after [\d.]+ s, \d+ operations failed',
                     logs['api'])
