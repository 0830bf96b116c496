"""Restart RabbitMQ under the running services: they reconnect, the next
reports (agent -> conductor) flow, and no bind is lost.

A bind cast published while no conductor queue is bound (right after a
broker restart, before the conductors declared their queues again) used
to be dropped by the broker without a word: 202, then no conductor took
it and the reaper failed it after [arq]bind_timeout (issue 18.3). Now the
cast is published mandatory and retried, and a bind no conductor took is
cast again by the reaper: every ARQ ends Bound.
"""
import threading

import pytest
import requests

from tests.functional.multihost import cluster as cl

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

NEW_FUNCTION = '0badc0de0badc0de0badc0de0badc0de'


def test_services_reconnect_after_broker_restart(cluster, arq_cleanup):
    region = [r for r in cluster.region_rps() if r.host == 'host-1'][0]
    pids = {n: s.pid for n, s in cluster.services.items()}

    cluster.restart_rabbitmq(while_down=lambda: _seen_gone(cluster))

    # Every service rode it out in the same process.
    assert {n: s.pid for n, s in cluster.services.items()
            if s.alive()} == pids
    # A hardware change after the restart is reported, stored and synced.
    cluster.load_function(region, NEW_FUNCTION)
    cluster.wait_for(lambda: cluster.api_function_id(region) == NEW_FUNCTION,
                     60, 'the report of host-1 after the broker restart')
    cluster.wait_for(
        lambda: 'CUSTOM_FUNCTION_ID_%s' % NEW_FUNCTION.upper()
        in cluster.placement_traits(region), 30, 'the Placement trait')
    # The API reaches a conductor again.
    cluster.create_profile('mh-after-rabbit')
    (arq,) = cluster.create_arqs('mh-after-rabbit')
    arq_cleanup.append(arq['uuid'])
    free = [r for r in cluster.region_rps() if r.host == 'host-2'][0]
    cluster.bind(arq['uuid'], free)
    assert cluster.wait_resolved([arq['uuid']], 30)[arq['uuid']][
        'state'] == 'Bound'


def _seen_gone(cluster):
    """Until every conductor and agent logged its broker connection lost
    (oslo.messaging: "AMQP server on ... is unreachable" or "... closed
    the connection"): they reconnect from there, not from a broker that
    came back before they noticed."""
    names = cluster.conductor_names + cluster.agent_hosts
    offsets = cluster.log_offsets(*names)
    cluster.wait_for(
        lambda: all('AMQP server' in log
                    for log in cluster.logs_since(offsets).values()),
        60, 'every service seeing the broker gone', interval=0.1)


def _aimed(cluster, profile, count):
    """``count`` new ARQs, each aimed at its own free region (one per
    card: sibling regions share the card's PF)."""
    regions = cluster.region_per_card()[:count]
    assert len(regions) == count
    cluster.create_profile(profile)
    arqs = cluster.create_arqs(profile, count=count)
    return {a['uuid']: r for a, r in zip(arqs, regions)}


def _bind_all(cluster, aimed, before_each=None):
    errors = []

    def bind(arq_uuid, region):
        with requests.Session() as session:
            try:
                if before_each is not None:
                    before_each()
                cluster.bind(arq_uuid, region, session=session)
            except Exception as exc:   # judged by the caller
                errors.append(exc)
    threads = [threading.Thread(target=bind, args=item)
               for item in aimed.items()]
    for t in threads:
        t.start()
    return threads, errors


def _taken_by(cluster, arq_uuids):
    return dict(cluster.query(
        'SELECT uuid, bind_taken_by FROM accelerator_requests '
        'WHERE uuid IN (SELECT unnest(CAST(:u AS text[])))',
        u=list(arq_uuids)))


def _all_bound(cluster, aimed):
    done = cluster.wait_resolved(aimed, timeout=cl.BIND_TIMEOUT + 40)
    states = {u: (a['state'], a.get('error')) for u, a in done.items()}
    assert all(state == 'Bound' for state, _ in states.values()), states
    assert all(done[u]['device_rp_uuid'] == r.rp_uuid
               for u, r in aimed.items())
    assert cluster.handle_double_use() == []
    return done


def test_binds_cast_while_no_conductor_listens_are_sent_again(
        cluster, arq_cleanup):
    """The broker restarts while both conductors hang (SIGSTOP): the
    API's bind casts find no conductor queue. The binds stay recorded,
    taken by no conductor, and once the conductors are back the reaper
    casts them again: all Bound."""
    aimed = _aimed(cluster, 'mh-lost-cast', 4)
    arq_cleanup.extend(aimed)
    api_log = cluster.log_offsets('api', *cluster.conductor_names)
    conductors = [cluster.services[n] for n in cluster.conductor_names]
    for service in conductors:
        service.pause()
    try:
        cluster.restart_rabbitmq()
        threads, errors = _bind_all(cluster, aimed)
        for t in threads:
            t.join(120)
        assert errors == []
        # The fault happened: every cast was refused by the broker (no
        # queue) and no conductor took any of the binds.
        assert _taken_by(cluster, aimed) == {u: None for u in aimed}
        assert {a['state'] for a in map(cluster.arq, aimed)} == {
            'BindStarted'}
        logged = cluster.logs_since(api_log)
        assert logged['api'].count('Cast bind_arqs not delivered: no '
                                   'conductor queue is bound') == len(aimed)
    finally:
        for service in conductors:
            service.resume()

    _all_bound(cluster, aimed)
    taken = _taken_by(cluster, aimed)
    assert set(taken.values()) <= set(cluster.conductor_names), taken
    logged = cluster.logs_since(api_log)
    assert any('were taken by no conductor; sending them again' in
               logged[n] for n in cluster.conductor_names)


def _wait_recorded(cluster, aimed, count, what):
    """Until ``count`` of the binds are recorded; read from the database,
    often: the broker may be down meanwhile, and an outage past
    [conductor]agent_down_time (cl.AGENT_DOWN_TIME) marks the agents down."""
    cluster.wait_for(lambda: cluster.query(
        "SELECT count(*) FROM accelerator_requests WHERE state IN "
        "('BindStarted', 'Bound') AND uuid IN "
        "(SELECT unnest(CAST(:u AS text[])))", u=list(aimed))[0][0] >= count,
        30, what, interval=0.02)


def _wait_agents_back(cluster):
    """Until every agent heartbeated after now: a restart here takes about
    as long as [conductor]agent_down_time, and a bind sent before the
    hosts are heard again may find them marked down (then it fails, as
    it should)."""
    [(now,)] = cluster.query("SELECT now() AT TIME ZONE 'UTC'")
    cluster.wait_for(lambda: cluster.query(
        "SELECT count(*) FROM agents WHERE state = 'up' AND "
        "heartbeat_at > :now", now=now)[0][0] == len(cluster.agent_hosts),
        60, 'every agent heartbeating again', interval=0.1)


def test_bind_burst_across_a_broker_restart_ends_all_bound(cluster,
                                                           arq_cleanup):
    """Binds keep coming while RabbitMQ stops and starts again (half
    before, one while it is down, the rest once the hosts are heard
    again): none is lost, none is failed, each region is bound once."""
    aimed = _aimed(cluster, 'mh-rabbit-burst', 6)
    arq_cleanup.extend(aimed)
    gate = threading.Semaphore(0)
    threads, errors = _bind_all(cluster, aimed, before_each=gate.acquire)
    try:
        for _ in range(len(aimed) // 2):
            gate.release()
        _wait_recorded(cluster, aimed, len(aimed) // 2, 'the first half')
        cluster.stop_rabbitmq()
        gate.release()
        _wait_recorded(cluster, aimed, len(aimed) // 2 + 1,
                       'a bind while the broker is down')
        cluster.start_rabbitmq()
        _wait_agents_back(cluster)
        for _ in range(len(aimed) - len(aimed) // 2 - 1):
            gate.release()
    finally:
        for _ in range(len(aimed)):
            gate.release()
        for t in threads:
            t.join(120)
    assert errors == []
    _all_bound(cluster, aimed)
