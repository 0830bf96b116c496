"""The agent's kubelet plugin wired to the conductor, end to end over
inproc:// messaging: a test client plays the kubelet over the real unix
sockets, the agent reads the ResourceClaim from the kube-apiserver
stand-in through the real ``kubernetes`` client, and the conductor holds
the region for the claim and programs it through the real programming
jobs, which the agent runs on the fake driver's simulated cards."""
import os

import pytest
import sqlalchemy as sa

from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import models
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.db.sql import session
from cyborg_lite.inventory import views as host_inventory
from tests import waiting
from tests.functional import programming_env as pe
from tests.functional.kubernetes import kubelet as kubelet_mod
from tests.functional.kubernetes import wired_env
from tests.unit.kubernetes import resource_claims as rc

DRIVER = rc.DRIVER
NODE = pe.HOST
REGION0 = wired_env.REGION0
REGION1 = wired_env.REGION1
NAMESPACE = 'team-a'
PROJECT = 'project-a'
_answer = kubelet_mod.answer

@pytest.fixture
def env(request, conf, sqlite_db, tmp_path, short_dir, apiserver):
    """The wired host; a test's indirect parameter overrides [fake_driver]
    options."""
    wired_env.configure(conf, tmp_path, short_dir, {NAMESPACE: PROJECT})
    for name, value in getattr(request, 'param', {}).items():
        conf.set_override(name, value, group='fake_driver')
    env = wired_env.K8sEnv(conf, apiserver).start()
    yield env
    env.stop()
    from cyborg_lite.rpc import transport as rpc
    rpc.cleanup()


def _claim(apiserver, name, device, namespace=NAMESPACE, pods=(),
           **config):
    claim = rc.allocated_claim(
        name, [('fpga', device)], namespace=namespace, pool=NODE,
        config=[rc.fpga_config(**config)] if config else [], pods=pods)
    apiserver.put_claim(claim)
    return claim


def _retried(kubelet, claim, timeout=30):
    """What the kubelet gets once it stops getting "still being
    prepared" (it retries, as the real one does)."""
    uid = claim['metadata']['uid']
    answers = []

    def done():
        answers.append(_answer(kubelet.prepare('v1', [rc.ref(claim)]), uid))
        return 'still being prepared' not in answers[-1][0]
    waiting.until(done, timeout=timeout, interval=0.2)
    return answers[-1]


def _cdi(short_dir, uid):
    import json
    path = os.path.join(short_dir, 'cdi', '%s-claim_%s.json' % (DRIVER, uid))
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def _holders():
    """{deployable name suffix: claim uid} the database holds."""
    claim = models.KubernetesClaimDevice
    with session.reader() as s:
        rows = s.execute(sa.select(models.Deployable.name, claim.claim_uid)
                         .join(claim, claim.deployable_id ==
                               models.Deployable.id)).all()
    return {name.rsplit('_', 1)[1]: uid for name, uid in rows}


def _reasons(region):
    inventory = devices_db.load_inventory(pe.HOST)
    for device in inventory.devices:
        for dep in device.deployables:
            if dep.name.endswith('_' + region):
                return host_inventory.unavailable_reasons(device, dep)


@pytest.mark.parametrize('version', ['v1', 'v1beta1'])
def test_prepare_programs_through_the_conductor_and_unprepare_releases(
        version, env, kubelet, apiserver, short_dir):
    bitstream = env.add_bitstream()
    claim = _claim(apiserver, 'aes', REGION0, bitstreamID=bitstream.uuid)
    uid = claim['metadata']['uid']
    cdi_id = '%s/claim=%s-%s' % (DRIVER, uid, REGION0)

    first = _answer(kubelet.prepare(version, [rc.ref(claim)]), uid)
    assert first == ('', [(NODE, REGION0, [cdi_id])])
    # Programmed for real by a job linked to the claim.
    assert env.hardware('region0') == pe.NEW_FUNCTION
    assert env.hardware('region1') == pe.OLD_FUNCTION
    (job,) = jobs_db.list_jobs()
    assert job.state == 'succeeded' and job.project_id == PROJECT
    assert _holders() == {'region0': uid}
    assert _reasons('region0') == ('kubernetes_claimed',)
    edits = _cdi(short_dir, uid)['devices'][0]['containerEdits']
    env_vars = dict(e.split('=', 1) for e in edits['env'])
    assert env_vars['CYBORG_LITE_FUNCTION_ID'] == pe.NEW_FUNCTION
    assert env_vars['CYBORG_LITE_BITSTREAM_ID'] == bitstream.uuid
    assert env_vars['CYBORG_LITE_DEPLOYABLE_UUID'] == env.region().uuid
    (node,) = edits['deviceNodes']
    assert node['path'] == '/dev/dfl-port.0'
    assert os.path.exists(node['hostPath'])

    # The kubelet retries: the same answer, no second job.
    assert _answer(kubelet.prepare(version, [rc.ref(claim)]), uid) == first
    assert len(jobs_db.list_jobs()) == 1

    assert kubelet.unprepare(version, [rc.ref(claim)]).claims[uid].error \
        == ''
    assert _cdi(short_dir, uid) is None
    assert _holders() == {}
    # Wiped before the next tenant, as after an unbind; then offered.
    assert env.region('region0').device_state in ('pending_cleaning',
                                                  'cleaning', 'available')
    assert waiting.until(lambda: _reasons('region0') == ())
    assert env.region('region0').device_state == 'available'


def test_a_private_bitstream_of_another_project_is_refused(
        env, kubelet, apiserver):
    bitstream = env.add_bitstream(visibility='private',
                                  project_id='someone-else')
    claim = _claim(apiserver, 'steal', REGION0, bitstreamID=bitstream.uuid)
    uid = claim['metadata']['uid']
    error, devices = _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid)
    assert 'could not be found' in error and devices == []
    assert env.hardware('region0') == pe.OLD_FUNCTION
    assert jobs_db.list_jobs() == [] and _holders() == {}
    # The project the namespace maps to may use its own (once the region,
    # held for a moment by the refused claim, is wiped).
    assert waiting.until(lambda: _reasons('region0') == ())
    own = env.add_bitstream(visibility='private', project_id=PROJECT)
    mine = _claim(apiserver, 'mine', REGION0, bitstreamID=own.uuid)
    assert _answer(kubelet.prepare('v1', [rc.ref(mine)]),
                   mine['metadata']['uid'])[0] == ''


def test_a_wrong_region_type_is_refused_and_holds_nothing(
        env, kubelet, apiserver):
    bitstream = env.add_bitstream(
        image=pe.new_image(interface='00000000-0000-0000-0000-000000000001'),
        region_type='0' * 31 + '1')
    claim = _claim(apiserver, 'wrong', REGION1, bitstreamID=bitstream.uuid)
    error, _ = _answer(kubelet.prepare('v1', [rc.ref(claim)]),
                       claim['metadata']['uid'])
    assert 'region type mismatch' in error
    assert _holders() == {} and jobs_db.list_jobs() == []


def test_function_id_already_loaded_needs_no_job(env, kubelet, apiserver):
    claim = _claim(apiserver, 'old', REGION1, functionID=pe.OLD_FUNCTION)
    uid = claim['metadata']['uid']
    assert _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid)[0] == ''
    assert jobs_db.list_jobs() == []
    assert _holders() == {'region1': uid}


def test_a_region_held_by_a_claim_is_refused_to_another(
        env, kubelet, apiserver):
    first = _claim(apiserver, 'first', REGION1)
    second = _claim(apiserver, 'second', REGION1)
    assert _answer(kubelet.prepare('v1', [rc.ref(first)]),
                   first['metadata']['uid'])[0] == ''
    error, _ = _answer(kubelet.prepare('v1', [rc.ref(second)]),
                       second['metadata']['uid'])
    assert 'in use by k8s:%s' % first['metadata']['uid'] in error


def test_slow_programming_answers_in_progress_then_the_retry_gets_it(
        conf, env, kubelet, apiserver):
    env.agent.kubelet_plugin.plugin.prepare_timeout = 0.5
    conf.set_override('program_delay', 3.0, group='fake_driver')
    bitstream = env.add_bitstream()
    claim = _claim(apiserver, 'slow', REGION0, bitstreamID=bitstream.uuid)
    uid = claim['metadata']['uid']
    error, _ = _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid)
    assert 'still being prepared' in error
    answer = _retried(kubelet, claim)
    assert answer[0] == '' and len(jobs_db.list_jobs()) == 1
    assert env.hardware('region0') == pe.NEW_FUNCTION


def test_kill_and_restart_of_the_agent_keeps_prepared_claims(
        env, kubelet, apiserver, short_dir):
    claim = _claim(apiserver, 'keep', REGION1)
    uid = claim['metadata']['uid']
    first = _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid)
    assert first[0] == ''
    env.kill_agent()
    kubelet.close()
    env.start_agent()
    kubelet.register()
    # Answered from the state file: no new claim read, same devices.
    reads = len(apiserver.requests)
    assert _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid) == first
    assert len(apiserver.requests) == reads
    assert _holders() == {'region1': uid}
    assert _cdi(short_dir, uid) is not None
    assert kubelet.unprepare('v1', [rc.ref(claim)]).claims[uid].error == ''
    assert _holders() == {}


def test_a_restart_during_programming_picks_up_the_running_job(
        conf, env, kubelet, apiserver):
    conf.set_override('program_delay', 2.0, group='fake_driver')
    env.agent.kubelet_plugin.plugin.prepare_timeout = 0.3
    bitstream = env.add_bitstream()
    claim = _claim(apiserver, 'restart', REGION0, bitstreamID=bitstream.uuid)
    uid = claim['metadata']['uid']
    assert 'still being prepared' in _answer(
        kubelet.prepare('v1', [rc.ref(claim)]), uid)[0]
    # The kubelet's call ended first; the conductor queues the job apart.
    (job,) = waiting.read_until(jobs_db.list_jobs, lambda jobs: jobs, 30,
                                what='the programming job queued')
    # Cut off as a crash would; its job's write goes on.
    env.kill_agent()
    kubelet.close()
    env.start_agent()
    kubelet.register()
    answer = _retried(kubelet, claim)
    assert answer[0] == '', answer
    assert env.hardware('region0') == pe.NEW_FUNCTION
    assert _holders() == {'region0': uid}
    assert jobs_db.get(job.uuid).state in ('failed', 'succeeded', 'queued')


def test_unpreparing_a_claim_the_plugin_never_recorded_frees_its_hold(
        env, kubelet, apiserver):
    # A prepare cut off before the plugin recorded it (agent killed) left
    # the region held in the database.
    from cyborg_lite.db import k8s_claims
    claim = _claim(apiserver, 'orphan', REGION1)
    uid = claim['metadata']['uid']
    k8s_claims.claim(env.region('region1').id, uid, NAMESPACE, 'orphan',
                     REGION1)
    assert _holders() == {'region1': uid}
    assert kubelet.unprepare('v1', [rc.ref(claim)]).claims[uid].error == ''
    assert _holders() == {}


def test_admin_access_holds_and_loads_nothing(env, kubelet, apiserver):
    tenant = _claim(apiserver, 'tenant', REGION1)
    assert _answer(kubelet.prepare('v1', [rc.ref(tenant)]),
                   tenant['metadata']['uid'])[0] == ''
    bitstream = env.add_bitstream()
    monitor = rc.allocated_claim('monitor', [('fpga', REGION1)],
                                 namespace=NAMESPACE, pool=NODE,
                                 config=[rc.fpga_config(
                                     bitstreamID=bitstream.uuid)])
    monitor['status']['allocation']['devices']['results'][0][
        'adminAccess'] = True
    apiserver.put_claim(monitor)
    uid = monitor['metadata']['uid']
    assert _answer(kubelet.prepare('v1', [rc.ref(monitor)]), uid)[0] == ''
    assert _holders() == {'region1': tenant['metadata']['uid']}
    assert jobs_db.list_jobs() == []
    assert env.hardware('region1') == pe.OLD_FUNCTION


# One function per region: a card's regions can go to one claim.
@pytest.mark.parametrize('env', [{'sriov': True}], indirect=True,
                         ids=['sriov'])
def test_a_claim_with_two_devices_holds_both_and_frees_both(
        env, kubelet, apiserver, short_dir):
    claim = rc.allocated_claim('pair', [('a', REGION0), ('b', REGION1)],
                               namespace=NAMESPACE, pool=NODE)
    apiserver.put_claim(claim)
    uid = claim['metadata']['uid']

    error, devices = _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid)

    assert error == ''
    assert sorted(d[1] for d in devices) == [REGION0, REGION1]
    assert len(_cdi(short_dir, uid)['devices']) == 2
    assert _holders() == {'region0': uid, 'region1': uid}
    assert _reasons('region0') == _reasons('region1') == (
        'kubernetes_claimed',)
    assert {env.region(r).device_state for r in ('region0', 'region1')} \
        == {'allocated'}

    assert kubelet.unprepare('v1', [rc.ref(claim)]).claims[uid].error \
        == ''
    assert _holders() == {}
    assert waiting.until(lambda: _reasons('region0') == _reasons(
        'region1') == ())


def test_one_device_of_a_tenant_and_a_monitor_in_one_claim_is_held(
        env, kubelet, apiserver):
    # An admin-access request shares the device a normal request of the
    # same claim has: prepared once, held for the tenant.
    claim = rc.allocated_claim('shared', [('tenant', REGION1),
                                          ('monitor', REGION1)],
                               namespace=NAMESPACE, pool=NODE)
    [monitor] = [r for r in claim['spec']['devices']['requests']
                 if r['name'] == 'monitor']
    monitor['exactly']['adminAccess'] = True
    claim['status']['allocation']['devices']['results'][1][
        'adminAccess'] = True
    apiserver.put_claim(claim)
    uid = claim['metadata']['uid']

    error, devices = _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid)

    assert (error, [d[1] for d in devices]) == ('', [REGION1])
    assert _holders() == {'region1': uid}
    assert env.region('region1').device_state == 'allocated'


def test_under_enforce_only_a_signed_image_is_prepared_and_the_pod_gets_only_its_port(  # noqa: E501
        env, kubelet, apiserver, short_dir):
    """Signed bitstreams on the Kubernetes path: the claim's project's
    policy decides, through the same check as a job; and the pod is given
    the region's port, never the FME through which a region is
    programmed (the agent programs; the container needs no privilege)."""
    from cyborg_lite.db import signature_policies
    from tests import signing_keys as sk
    signature_policies.set_policy(PROJECT, 'enforce')
    key = sk.new_key()
    env.trust(key)
    unsigned = env.add_bitstream()
    claim = _claim(apiserver, 'unsigned', REGION0, bitstreamID=unsigned.uuid)
    error, devices = _answer(kubelet.prepare('v1', [rc.ref(claim)]),
                             claim['metadata']['uid'])
    assert 'Signature check before programming refused' in error
    assert 'its signature is unsigned' in error and devices == []
    assert jobs_db.list_jobs() == [] and _holders() == {}
    assert env.hardware('region0') == pe.OLD_FUNCTION

    assert waiting.until(lambda: _reasons('region0') == ())
    signed = env.sign(env.add_bitstream(), key)
    claim = _claim(apiserver, 'signed', REGION0, bitstreamID=signed.uuid)
    uid = claim['metadata']['uid']
    assert _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid)[0] == ''
    assert env.hardware('region0') == pe.NEW_FUNCTION
    edits = _cdi(short_dir, uid)['devices'][0]['containerEdits']
    (node,) = edits['deviceNodes']
    assert node['path'] == '/dev/dfl-port.0'
    # The FME is there on the host, and stays there.
    assert os.path.exists(os.path.join(os.path.dirname(node['hostPath']),
                                       'dfl-fme.0'))
    assert set(edits) <= {'env', 'deviceNodes', 'mounts'}


def test_under_enforce_a_region_loaded_unsigned_is_loaded_again_or_refused(
        env, kubelet, apiserver):
    """A region loaded while the project's policy was warn is, once it is
    enforce, no longer "already loaded": a claim of that very bitstream is
    refused with the check's text, and a claim of its function gets a
    verified copy loaded first."""
    from cyborg_lite.db import signature_policies
    from tests import signing_keys as sk
    unsigned = env.add_bitstream()
    done = env.wait_job(env.program(unsigned.uuid)['uuid'])
    assert done.state == 'succeeded', done.error
    signature_policies.set_policy(PROJECT, 'enforce')
    claim = _claim(apiserver, 'by-id', REGION0, bitstreamID=unsigned.uuid)
    error, devices = _answer(kubelet.prepare('v1', [rc.ref(claim)]),
                             claim['metadata']['uid'])
    assert 'Signature check before programming refused' in error
    assert 'its signature is unsigned' in error and devices == []
    assert len(jobs_db.list_jobs()) == 1 and _holders() == {}

    assert waiting.until(lambda: _reasons('region0') == ())
    key = sk.new_key()
    env.trust(key)
    signed = env.sign(env.add_bitstream(), key)     # the same bytes
    claim = _claim(apiserver, 'by-fn', REGION0, functionID=pe.NEW_FUNCTION)
    uid = claim['metadata']['uid']
    assert _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid)[0] == ''
    assert _holders() == {'region0': uid}
    assert env.region().bitstream_id == signed.uuid
    assert [j.bitstream_id for j in jobs_db.list_jobs()] == [unsigned.id,
                                                             signed.id]


def _holder_series():
    from cyborg_lite.api import device_metrics
    (family,) = [f for f in device_metrics.DeviceCollector().collect()
                 if f.name == 'cyborg_lite_device_holder_info']
    return [{k: v for k, v in sample.labels.items()
             if k in ('namespace', 'pod', 'claim')}
            for sample in family.samples]


def test_the_holder_series_names_the_pods_the_claim_is_reserved_for(
        env, kubelet, apiserver):
    claim = _claim(apiserver, 'train', REGION0,
                   pods=('trainer-0', 'trainer-1'))
    uid = claim['metadata']['uid']
    assert _retried(kubelet, claim)[0] == ''
    assert _holder_series() == [
        {'namespace': NAMESPACE, 'pod': 'trainer-0', 'claim': 'train'},
        {'namespace': NAMESPACE, 'pod': 'trainer-1', 'claim': 'train'}]
    assert kubelet.unprepare('v1', [rc.ref(claim)]).claims[uid].error == ''
    assert _holder_series() == []
