"""kill -9 a conductor during a burst of binds.

Every ARQ of the burst must end Bound or BindFailed within the reaper's
timeout (binds the dead conductor had started are failed by the other
one's reaper; casts it had not taken are redelivered by RabbitMQ to the
other), none stays BindStarted, and no attach handle is used twice.

oslo.messaging acknowledges a cast to RabbitMQ when a conductor takes
it, before bind_arqs runs, so a conductor killed in between loses the
cast. The API therefore records each ARQ as BindStarted (with its
binding) before casting: a lost cast is reaped to BindFailed like a bind
the conductor died in, and no ARQ is left Initial.
"""
import threading
import time

import pytest
import requests

from tests.functional.multihost import cluster as cl

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

PER_REGION = 3


def test_kill9_conductor_during_bind_burst(cluster, arq_cleanup):
    regions = cluster.region_rps()
    cluster.create_profile('mh-kill-cond')
    arqs = cluster.create_arqs('mh-kill-cond',
                               count=len(regions) * PER_REGION)
    arq_cleanup.extend(a['uuid'] for a in arqs)
    aimed = {a['uuid']: regions[i % len(regions)]
             for i, a in enumerate(arqs)}
    victim = cluster.services['conductor-a']
    killed = threading.Event()
    sent, errors = [], []

    def burst(items):
        with requests.Session() as session:
            for arq_uuid, region in items:
                try:
                    cluster.bind(arq_uuid, region, session=session)
                    sent.append(arq_uuid)
                except Exception as exc:
                    errors.append(exc)
    items = list(aimed.items())
    threads = [threading.Thread(target=burst, args=(items[i::4],))
               for i in range(4)]
    try:
        for t in threads:
            t.start()
        # Half way through the burst, the conductor dies without a word.
        while len(sent) < len(items) // 2 and any(t.is_alive()
                                                   for t in threads):
            time.sleep(0.005)
        assert cluster.kill9('conductor-a') == -9
        killed.set()
        for t in threads:
            t.join(120)
        assert errors == []

        # Reaper: [arq]bind_timeout after BindStarted, checked every
        # [arq]reap_interval by the surviving conductor.
        limit = cl.BIND_TIMEOUT + 3 * cl.REAP_INTERVAL + 20
        try:
            cluster.wait_resolved(aimed, timeout=limit)
        except AssertionError:
            pass   # judged below, naming what is left unresolved
        done = {u: cluster.arq(u) for u in aimed}
        states = [a['state'] for a in done.values()]
        assert 'BindStarted' not in states
        assert set(states) <= set(cl.RESOLVED), states
        bound = [u for u, a in done.items() if a['state'] == 'Bound']
        # At most one Bound per single-handle region, on that region.
        bound_rps = [done[u]['device_rp_uuid'] for u in bound]
        assert len(bound_rps) == len(set(bound_rps))
        assert all(done[u]['device_rp_uuid'] == aimed[u].rp_uuid
                   for u in bound)
        assert cluster.handle_double_use() == []
        assert cluster.query(
            "SELECT count(*) FROM accelerator_requests "
            "WHERE state = 'BindStarted'")[0][0] == 0
        handles = {a['attach_handle_uuid'] for a in done.values()
                   if a['state'] == 'Bound'}
        assert len(handles) == len(bound)
        reasons = {}
        for row in cluster.query(
                'SELECT state, error FROM accelerator_requests WHERE uuid '
                'IN (SELECT unnest(CAST(:u AS text[])))', u=list(aimed)):
            error = row[1] or row[0]
            key = ('reaped' if 'did not finish' in error else
                   'no free handle' if 'no free attach handle' in error
                   else error[:60])
            reasons[key] = reasons.get(key, 0) + 1
        print('outcomes after the kill: %s' % reasons)
    finally:
        if not killed.is_set() and victim.alive():
            victim.kill9()
        cluster.restart('conductor-a')
