"""kill -9 an agent while it programs a region.

The job is failed or retried (the conductors' reaper notices the silent
agent after [programming]heartbeat_timeout; the restarted agent's
``agent_started`` ends or requeues what its past life left), never left
active; and the database says what the region really holds (its afu_id
in the simulated sysfs), as does Placement.
"""
import pytest

from tests.unit.bitstreams import builders

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq, pytest.mark.xdist_group('multihost')]

V24 = {'OpenStack-API-Version': 'accelerator 2.4'}
NEW_AFU = '7a1e3c2a-1b2c-4d5e-8f90-a1b2c3d4e5f6'
ACTIVE = ('queued', 'downloading', 'programming', 'verifying')


def _upload_bitstream(cluster):
    image = builders.build_gbs(builders.gbs_metadata(
        interface_uuid=builders.INTERFACE_UUID, afu_uuid=NEW_AFU))
    s = cluster.session
    resp = s.post(cluster.api + '/bitstreams', headers=V24, timeout=30,
                  json={'name': 'mh-nlb', 'format': 'gbs',
                        'vendor': 'intel', 'version': '1'})
    assert resp.status_code == 201, resp.text
    bs_uuid = resp.json()['uuid']
    resp = s.put(cluster.api + '/bitstreams/%s/file' % bs_uuid, data=image,
                 headers=dict(V24, **{'Content-Type':
                                      'application/octet-stream'}),
                 timeout=30)
    assert resp.status_code == 204, resp.text
    return bs_uuid


def _job(cluster, job_uuid):
    resp = cluster.session.get(cluster.api + '/programs/' + job_uuid,
                               headers=V24, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _hardware_function(cluster, region):
    with open(cluster.afu_id_path(region)) as f:
        return f.read().strip()


def test_kill9_agent_mid_programming(cluster):
    region = [r for r in cluster.region_rps() if r.host == 'host-0'][-1]
    dep_uuid = cluster.call('GET', '/deployables', 200,
                            params={'rp_uuid': region.rp_uuid}
                            ).json()['deployables'][0]['uuid']
    bs_uuid = _upload_bitstream(cluster)
    resp = cluster.session.post(
        cluster.api + '/programs', headers=V24, timeout=30,
        json={'deployable_uuid': dep_uuid, 'bitstream_uuid': bs_uuid})
    assert resp.status_code == 202, resp.text
    job_uuid = resp.json()['uuid']

    # [fake_driver]program_delay is 3 s: kill while the write is running.
    cluster.wait_for(lambda: _job(cluster, job_uuid)['state'] ==
                     'programming', 30, 'the job programming', 0.05)
    agent = cluster.services['host-0']
    try:
        assert cluster.kill9('host-0') == -9
        first_try = _job(cluster, job_uuid)['attempts']
        # The silent agent's try is ended by a conductor's reaper.
        cluster.wait_for(
            lambda: _job(cluster, job_uuid)['state'] != 'programming' or
            _job(cluster, job_uuid)['attempts'] > first_try, 30,
            'the reaper ending the dead agent\'s try')
    finally:
        if not agent.alive():
            agent.start()
    # Back: the job ends, failed or succeeded on a retry; never active.
    job = cluster.wait_for(
        lambda: (lambda j: j if j['state'] not in ACTIVE else None)(
            _job(cluster, job_uuid)), 60, 'the job ending')
    assert job['state'] in ('succeeded', 'failed'), job
    if job['state'] == 'failed':
        assert job['error'], job
    else:
        assert job['attempts'] > first_try, job

    # Region state is true: DB and Placement follow the hardware.
    hardware = _hardware_function(cluster, region)
    cluster.wait_for(lambda: cluster.api_function_id(region) == hardware,
                     30, 'the DB matching the hardware')
    cluster.wait_for(
        lambda: 'CUSTOM_FUNCTION_ID_%s' % hardware.upper() in
        cluster.placement_traits(region), 30, 'Placement matching it')
    if job['state'] == 'succeeded':
        assert hardware == builders.hex32(NEW_AFU)
    print('job after agent kill: %s, attempts %s, error %r, region runs %s'
          % (job['state'], job['attempts'], job['error'], hardware))
