"""kill -9 an agent while it writes a region, then start it again.

The agent downloads the image from the API ([agent] image_source = http)
and the fake driver takes [fake_driver]program_delay (3 s) to write it;
the kill lands in that write. The try it was running is abandoned (by the
restarted agent's ``agent_started``, or by a conductor's reaper if that
noticed the silence first), the job is retried on the restarted agent and
succeeds: two tries, the first abandoned with its reason, the second
succeeded; DB and Placement then say what the (simulated) hardware holds.
"""
import pytest

from tests.functional.multihost import cluster as cl
from tests.unit.bitstreams import builders

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

NEW_AFU = '7a1e3c2a-1b2c-4d5e-8f90-a1b2c3d4e5f6'
ACTIVE = ('queued', 'downloading', 'programming', 'verifying')
# What ends the dead agent's try, whichever comes first.
ABANDONED_BY = ('the agent on host-0 restarted during the job',
                'no progress from the agent within 4 s')


def _hardware_function(cluster, region):
    with open(cluster.afu_id_path(region)) as f:
        return f.read().strip()


def test_kill9_agent_mid_programming_then_retried_on_restart(cluster):
    region = [r for r in cluster.region_rps() if r.host == 'host-0'][-1]
    new_function = builders.hex32(NEW_AFU)
    old_function = _hardware_function(cluster, region)
    assert old_function != new_function
    dep_uuid = cluster.call('GET', '/deployables', 200,
                            params={'rp_uuid': region.rp_uuid}
                            ).json()['deployables'][0]['uuid']
    bs_uuid = cluster.upload_bitstream('mh-nlb', NEW_AFU)
    job_uuid = cluster.call('POST', '/programs', 202, headers=cl.V24, json={
        'deployable_uuid': dep_uuid, 'bitstream_uuid': bs_uuid}).json()[
            'uuid']

    # Downloaded over HTTP, checked, now writing: kill it there.
    cluster.wait_for(lambda: cluster.job(job_uuid)['state'] ==
                     'programming', 30, 'the job programming', 0.05)
    agent = cluster.services['host-0']
    try:
        assert cluster.kill9('host-0') == -9
        # The fault happened mid-write, in try 1: the job is still
        # programming (nobody is left to report), the region untouched.
        killed = cluster.job(job_uuid)
        assert (killed['state'], killed['attempts']) == ('programming', 1)
        assert [(t['number'], t['hostname'], t['outcome'])
                for t in killed['tries']] == [(1, 'host-0', 'running')]
        assert _hardware_function(cluster, region) == old_function
    finally:
        if not agent.alive():
            agent.start()

    job = cluster.wait_for(
        lambda: (lambda j: j if j['state'] not in ACTIVE else None)(
            cluster.job(job_uuid)), 90, 'the job ending')
    # Exactly: retried once on the restarted agent, succeeded.
    assert (job['state'], job['attempts'], job['error']) == (
        'succeeded', 2, None), job
    first, second = job['tries']
    assert (first['number'], first['hostname'], first['outcome']) == (
        1, 'host-0', 'abandoned')
    assert any(reason in first['error'] for reason in ABANDONED_BY), first
    assert (second['number'], second['hostname'], second['outcome'],
            second['error']) == (2, 'host-0', 'succeeded', None)
    assert first['ended_at'] <= second['started_at']

    # Region state is true: hardware, DB and Placement agree.
    assert _hardware_function(cluster, region) == new_function
    cluster.wait_for(lambda: cluster.api_function_id(region) == new_function,
                     30, 'the DB matching the hardware')
    cluster.wait_for(
        lambda: 'CUSTOM_FUNCTION_ID_%s' % new_function.upper() in
        cluster.placement_traits(region), 30, 'Placement matching it')
