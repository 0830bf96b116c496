"""kill -9 a conductor in the middle of binds it is doing.

Each bind's profile asks for a bitstream the region does not hold, so the
conductor that takes it starts a programming job and returns; the job's
end resumes the bind (the fake driver writes for 3 s). The test kills
conductor-a once it holds such binds, and the database says which ones
(``bind_taken_by``). Those whose job it started end Bound all the same:
the agent reports the job's end to conductor-b, which resumes them (or
its reaper does). Only a bind conductor-a took and died before starting
its job may end BindFailed, failed by conductor-b's reaper
[arq]bind_timeout after conductor-a took it, with a reason naming
conductor-a. Every other ARQ ends Bound, by conductor-b, whether it took
the cast first or RabbitMQ handed it over (a cast conductor-a had taken
but not started is cast again by the reaper). None stays BindStarted and
no attach handle is used twice.
"""
import re

import pytest

from tests.functional.multihost import cluster as cl

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

AFU = 'c0ffee00-1b2c-4d5e-8f90-a1b2c3d4e5f6'
REASON = ('the bind did not finish within %d seconds; conductor '
          'conductor-a, which took it, probably stopped' % cl.BIND_TIMEOUT)


def _held_by(cluster, conductor, arq_uuids):
    return {row[0] for row in cluster.query(
        "SELECT uuid FROM accelerator_requests WHERE state = 'BindStarted' "
        'AND bind_taken_by = :c AND uuid IN (SELECT unnest(CAST(:u AS '
        'text[])))', c=conductor, u=list(arq_uuids))}


def _waiting(cluster, log_from):
    """ARQs whose bind conductor-a logged as resuming at its job's end."""
    return set(re.findall(r'Bind of ARQ (\S+) resumes when programming job',
                          cluster.logs_since(log_from)['conductor-a']))


def test_kill9_conductor_holding_binds(cluster, arq_cleanup):
    bitstream = cluster.upload_bitstream('mh-kill-cond', AFU, 'public')
    regions = cluster.region_per_card()
    cluster.create_profile('mh-kill-cond',
                           extra={'accel:bitstream_id': bitstream})
    arqs = cluster.create_arqs('mh-kill-cond', count=len(regions))
    aimed = {a['uuid']: r for a, r in zip(arqs, regions)}
    arq_cleanup.extend(aimed)
    victim = cluster.services['conductor-a']
    log_from = cluster.log_offsets('conductor-a')
    try:
        for arq_uuid, region in aimed.items():
            cluster.bind(arq_uuid, region)
        cluster.wait_for(lambda: _waiting(cluster, log_from) &
                         _held_by(cluster, 'conductor-a', aimed), 60,
                         'conductor-a waiting for a job in a bind')
        assert cluster.kill9('conductor-a') == -9
        # What it held when it died: binds taken by it, at least one of
        # them waiting for its programming job (3 s of writing).
        held = _held_by(cluster, 'conductor-a', aimed)
        waiting = held & _waiting(cluster, log_from)
        assert waiting

        done = cluster.wait_resolved(aimed, timeout=cl.BIND_TIMEOUT + 60)
    finally:
        if not victim.alive():
            cluster.restart('conductor-a')

    errors = dict(cluster.query(
        'SELECT uuid, error FROM accelerator_requests WHERE uuid IN '
        '(SELECT unnest(CAST(:u AS text[])))', u=list(aimed)))
    failed = {u for u, a in done.items() if a['state'] == 'BindFailed'}
    # NOTE: each unexpected failure's whole reason, one per line (the
    # dict's repr is cut short in the report).
    assert failed <= held - waiting, '\n'.join(
        '%s held=%s waiting=%s: %s' % (u, u in held, u in waiting, errors[u])
        for u in failed - (held - waiting))
    assert all(errors[u] == REASON for u in failed), errors
    bound = set(aimed) - failed
    assert waiting <= bound
    assert all(done[u]['state'] == 'Bound' and
               done[u]['device_rp_uuid'] == aimed[u].rp_uuid for u in bound)
    assert set(dict(cluster.query(
        'SELECT uuid, bind_taken_by FROM accelerator_requests WHERE uuid IN '
        '(SELECT unnest(CAST(:u AS text[])))',
        u=list(bound - held))).values()) <= {'conductor-b'}
    assert cluster.query("SELECT count(*) FROM accelerator_requests "
                         "WHERE state = 'BindStarted'")[0][0] == 0
    assert cluster.handle_double_use() == []
    print('conductor-a died holding %d of %d binds, %d waiting for their '
          'job' % (len(held), len(aimed), len(waiting)))
