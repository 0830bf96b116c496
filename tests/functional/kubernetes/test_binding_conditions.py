"""FPGAs ready before the pod binds (KEP-5007 binding conditions), end to
end: the conductor (its Kubernetes sink and claim watch, started by the
real ConductorService from its options) publishes the regions with our
binding condition to the kube-apiserver stand-in; test code plays the
kube-scheduler (allocating a published device, its binding conditions
copied into the result) and the kubelet (NodePrepareResources over the
plugin's real socket); the agent runs the job on the fake driver, whose
write takes 60 modelled seconds held open by the test, never slept.

On a cluster with the feature, Prepare neither programs nor waits for the
job, and the claim's condition turns True only once the region runs the
bitstream; a failed job sets the failure condition with its error. On a
cluster without it (the gate off: the fields dropped), Prepare programs,
as before binding conditions."""
import threading

import kubernetes
import pytest

from cyborg_lite.db import k8s_claims as claims_db
from cyborg_lite.db import programming_jobs as jobs_db
from tests import waiting
from tests.functional import programming_env as pe
from tests.functional.kubernetes import wired_env
from tests.unit.kubernetes import fake_claims
from tests.unit.kubernetes import resource_claims as rc

DRIVER = rc.DRIVER
NODE = pe.HOST
REGION0 = wired_env.REGION0
NAMESPACE = 'team-a'
PROGRAMMED = DRIVER + '/programmed'
FAILED = DRIVER + '/programming-failed'
DELAY = 60.0


class HeldWrite:
    """The fake driver's program_wait: records the seconds asked and holds
    the simulated write open until ``finish()``."""

    def __init__(self):
        self.asked = []
        self._done = threading.Event()

    def __call__(self, seconds):
        self.asked.append(seconds)
        assert self._done.wait(60), 'the test never finished the write'

    def finish(self):
        self._done.set()


class BindingEnv(wired_env.K8sEnv):

    def __init__(self, conf, apiserver, write):
        super().__init__(conf, apiserver)
        self.write = write

    def new_driver(self):
        driver = super().new_driver()
        driver.program_wait = self.write
        return driver


@pytest.fixture
def write():
    held = HeldWrite()
    yield held
    held.finish()


@pytest.fixture
def env(request, conf, sqlite_db, tmp_path, short_dir, apiserver, write):
    """The wired host whose conductor publishes to the stand-in (the
    kubernetes sink) with binding conditions; ``request.param``:
    [fake_driver] overrides, and ``gate`` False for a cluster without
    the feature gate."""
    overrides = dict(getattr(request, 'param', {}))
    apiserver.binding_conditions = overrides.pop('gate', True)
    apiserver.add_node(NODE)
    wired_env.configure(conf, tmp_path, short_dir, {NAMESPACE: 'project-a'})
    conf.set_override('program_delay', DELAY, group='fake_driver')
    for name, value in overrides.items():
        conf.set_override(name, value, group='fake_driver')
    conf.set_override('inventory_sinks', ['kubernetes'], group='conductor')
    conf.set_override('kubeconfig', apiserver.write_kubeconfig(
        tmp_path / 'kubeconfig'), group='kubernetes')
    env = BindingEnv(conf, apiserver, write).start()
    assert waiting.until(lambda: _published(apiserver, REGION0))
    yield env
    write.finish()
    env.stop()
    from cyborg_lite.rpc import transport as rpc
    rpc.cleanup()
    # The conductor's stop ended its claim watch.
    assert not [t for t in threading.enumerate()
                if t.name == 'resourceclaim-watch']


def _published(apiserver, name):
    return next((d for s in list(apiserver.slices.values())
                 for d in s['spec'].get('devices') or []
                 if d['name'] == name), None)


def _allocated(apiserver, bitstream_uuid, name='aes'):
    """A claim for a region with the bitstream, allocated by the
    scheduler; the claim as stored."""
    claim = rc.allocated_claim(
        name, [('fpga', REGION0)], namespace=NAMESPACE, pool=NODE,
        config=[rc.fpga_config(bitstreamID=bitstream_uuid)])
    claim['status'] = {}
    apiserver.add_claim(claim)
    return fake_claims.schedule(apiserver, NAMESPACE, name, REGION0, NODE)


def _conditions(apiserver, claim):
    meta = claim['metadata']
    stored = apiserver.claims[(meta['namespace'], meta['name'])]
    return {c['type']: c for d in (stored.get('status') or {}).get(
        'devices') or [] for c in d.get('conditions') or []}


def _prepare(kubelet, claim):
    uid = claim['metadata']['uid']
    entry = kubelet.prepare('v1', [rc.ref(claim)]).claims[uid]
    return entry.error, [d.device_name for d in entry.devices]


def test_the_region_is_programmed_before_the_pod_binds(env, kubelet,
                                                       apiserver, write):
    published = _published(apiserver, REGION0)
    assert published['bindingConditions'] == [PROGRAMMED]
    assert published['bindingFailureConditions'] == [FAILED]
    bitstream = env.add_bitstream()
    claim = _allocated(apiserver, bitstream.uuid)
    assert claim['status']['allocation']['devices']['results'][0][
        'bindingConditions'] == [PROGRAMMED]

    # The conductor saw the allocation and started the job; the write
    # is held open (60 s modelled), its progress in the condition.
    assert waiting.until(lambda: write.asked == [DELAY])
    (job,) = jobs_db.list_jobs()
    assert waiting.until(lambda: _conditions(apiserver, claim).get(
        PROGRAMMED, {}).get('message') ==
        'programming job %s is programming' % job.uuid)
    condition = _conditions(apiserver, claim)[PROGRAMMED]
    assert (condition['status'], condition['reason']) == ('False',
                                                          'Programming')
    assert FAILED not in _conditions(apiserver, claim)

    # The kubelet's Prepare (were it asked now) neither programs nor
    # waits for the job: it answers while the write is still held open.
    error, devices = _prepare(kubelet, claim)
    assert devices == [] and 'still being programmed' in error
    assert jobs_db.get(job.uuid).state == 'programming'
    assert len(jobs_db.list_jobs()) == 1
    assert env.hardware('region0') == pe.OLD_FUNCTION
    assert _conditions(apiserver, claim)[PROGRAMMED]['status'] == 'False'

    # The write ends: the region runs the bitstream, then the condition
    # turns True and the pod may bind.
    write.finish()
    assert waiting.until(lambda: _conditions(apiserver, claim).get(
        PROGRAMMED, {}).get('status') == 'True')
    assert env.hardware('region0') == pe.NEW_FUNCTION
    assert jobs_db.get(job.uuid).state == 'succeeded'
    assert _conditions(apiserver, claim)[PROGRAMMED]['reason'] == \
        'Programmed'

    # Prepare after the bind: the region is ready, no job is started.
    assert _prepare(kubelet, claim) == ('', [REGION0])
    assert len(jobs_db.list_jobs()) == 1


@pytest.mark.parametrize('env', [{'fail_program': True}], indirect=True)
def test_a_failed_job_fails_the_binding_with_its_error(env, kubelet,
                                                       apiserver, write):
    bitstream = env.add_bitstream()
    claim = _allocated(apiserver, bitstream.uuid)
    assert waiting.until(lambda: write.asked == [DELAY])
    write.finish()
    assert waiting.until(lambda: FAILED in _conditions(apiserver, claim))
    (job,) = jobs_db.list_jobs()
    job = jobs_db.get(job.uuid)
    assert job.state == 'failed' and 'simulated failure' in job.error
    conditions = _conditions(apiserver, claim)
    assert conditions[FAILED]['status'] == 'True'
    assert job.error in conditions[FAILED]['message']
    assert job.uuid in conditions[FAILED]['message']
    assert conditions[PROGRAMMED]['status'] == 'False'
    assert env.hardware('region0') == pe.OLD_FUNCTION
    # A watch event of the claim as it was before (delivered late, its
    # region freed meanwhile) starts nothing: decided on the claim now.
    env.conductor.manager.binding.seen(claim)
    assert len(jobs_db.list_jobs()) == 1
    assert _conditions(apiserver, claim) == conditions


@pytest.mark.parametrize('env', [{'gate': False}], indirect=True)
def test_without_the_feature_prepare_programs_as_before(env, kubelet,
                                                        apiserver, write):
    assert 'bindingConditions' not in _published(apiserver, REGION0)
    bitstream = env.add_bitstream()
    claim = _allocated(apiserver, bitstream.uuid)
    assert 'bindingConditions' not in \
        claim['status']['allocation']['devices']['results'][0]
    assert jobs_db.list_jobs() == []        # the conductor leaves it
    write.finish()                          # the 60 s pass at once
    answers = []

    def prepared():
        answers.append(_prepare(kubelet, claim))
        return 'still being prepared' not in answers[-1][0]
    assert waiting.until(prepared, timeout=30, interval=0.2)
    assert answers[-1] == ('', [REGION0])
    (job,) = jobs_db.list_jobs()
    assert job.state == 'succeeded' and write.asked == [DELAY]
    assert env.hardware('region0') == pe.NEW_FUNCTION
    assert _conditions(apiserver, claim) == {}


def test_a_job_end_missed_by_the_watch_is_written_when_it_lists_again(
        env, apiserver, write):
    """The conductor that saw the job's end could not move the condition
    (its claim watch and binding stopped, as a conductor killed between
    the job's end and the write): the next list of the claims, at a
    start or a resync, writes it."""
    manager = env.conductor.manager
    bitstream = env.add_bitstream()
    claim = _allocated(apiserver, bitstream.uuid)
    assert waiting.until(lambda: write.asked == [DELAY])
    manager.stop_watching_claims()
    manager.binding = None
    write.finish()
    (job,) = jobs_db.list_jobs()
    env.wait_job(job.uuid)
    assert env.hardware('region0') == pe.NEW_FUNCTION
    assert _conditions(apiserver, claim)[PROGRAMMED]['status'] == 'False'
    client = apiserver.api_client()
    try:
        manager.watch_claims(client)
        assert waiting.until(lambda: _conditions(apiserver, claim)[
            PROGRAMMED]['status'] == 'True')
    finally:
        manager.stop_watching_claims()
        client.close()
    assert len(jobs_db.list_jobs()) == 1        # nothing programmed again


def test_a_claim_deleted_before_its_pod_binds_frees_its_region(
        env, apiserver, write):
    bitstream = env.add_bitstream()
    claim = _allocated(apiserver, bitstream.uuid)
    assert waiting.until(lambda: write.asked == [DELAY])
    (job,) = jobs_db.list_jobs()
    assert claims_db.of_job(job.uuid).claim_uid == claim['metadata']['uid']
    client = apiserver.api_client()
    try:
        api = kubernetes.client.ResourceV1Api(client)
        api.delete_namespaced_resource_claim('aes', NAMESPACE)
    finally:
        client.close()
    assert waiting.until(lambda: claims_db.of_job(job.uuid) is None)
