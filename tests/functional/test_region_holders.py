"""Who holds a region, asked over the conductor's RPC the way the API
(a programming job), Nova (a bind) and the kubelet plugin (a Prepare)
reach it: a region an instance or a Kubernetes claim holds, or that a
job is loading, goes to nobody else, and a Prepare on a host the
conductors do not serve for Kubernetes holds nothing.

The real ConductorService and an agent with the FAKE driver over
inproc:// (tests/functional/programming_env.py); the host serves
Kubernetes too, so the conductor's Kubernetes sink writes its
ResourceSlices to the kube-apiserver stand-in, and a bind there is
published with its claim before the ARQ is Bound.
"""
import pytest
import sqlalchemy as sa

from cyborg_lite.common import context
from cyborg_lite.common import exception
from cyborg_lite.db import models
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import session
from tests import waiting
from tests.functional import programming_env as pe
from tests.functional.programming_env import make_env  # noqa: F401
from tests.unit.conductor import bind_helpers as h
from tests.unit.kubernetes import fake_apiserver

REGION0 = 'fpga-0000-5e-00-0-region0'
INSTANCE = 'c0ffee00-0000-4000-8000-00000000a001'
# Nova's service user; a member of another project than the ARQ's.
NOVA = context.RequestContext(user_id='nova', project_id='service',
                              roles=['service'])
MEMBER_B = context.RequestContext(user_id='bob', project_id='project-b',
                                  roles=['member'])


@pytest.fixture
def apiserver():
    server = fake_apiserver.FakeKubeApiServer().start()
    server.add_node(pe.HOST)
    yield server
    server.stop()


def _serving_kubernetes(conf, make_env, apiserver, tmp_path, sriov):
    conf.set_override('hosts', [pe.HOST], group='kubernetes')
    conf.set_override('kubeconfig', apiserver.write_kubeconfig(
        str(tmp_path / 'kubeconfig')), group='kubernetes')
    conf.set_override('inventory_sinks', ['kubernetes'], group='conductor')
    env = make_env(sriov=sriov)
    # The host's first publish is over: the next write is the test's.
    assert waiting.until(lambda: _published(apiserver) == 2 and
                         not publish_requests.pending())
    return env


@pytest.fixture
def env(conf, make_env, apiserver, tmp_path):  # noqa: F811
    """pe.HOST serving Kubernetes, its slices published by the
    conductor's Kubernetes sink; each region behind its own VF."""
    return _serving_kubernetes(conf, make_env, apiserver, tmp_path, True)


@pytest.fixture
def pf_env(conf, make_env, apiserver, tmp_path):  # noqa: F811
    """As ``env``, on a card without SR-IOV: both regions behind its PF,
    one accelerator (common/shared_functions.py)."""
    return _serving_kubernetes(conf, make_env, apiserver, tmp_path, False)


def _published(apiserver):
    return sum(len(s['spec'].get('devices', []))
               for s in apiserver.slices.values())


def _claim(uid, device=REGION0):
    return {'claim_uid': uid, 'namespace': 'team-a', 'claim_name': 'fpga',
            'pool': pe.HOST, 'device': device}


def _prepare(env, uid, hostname=pe.HOST, device=REGION0):
    return env.api.prepare_k8s_device(context.get_admin_context(),
                                      hostname, _claim(uid, device), wait=5)


def _held_by_claims():
    with session.reader() as s:
        return s.scalars(sa.select(
            models.KubernetesClaimDevice.claim_uid)).all()


def _bind(env, arq_uuid, ctxt=NOVA):
    env.api.bind_arqs(ctxt, {arq_uuid: {
        'hostname': pe.HOST, 'device_rp_uuid': env.region().rp_uuid,
        'instance_uuid': INSTANCE}})
    return waiting.read_until(
        lambda: h.get_arq(arq_uuid),
        lambda arq: arq.state in ('Bound', 'BindFailed'),
        what='ARQ %s resolved' % arq_uuid)


def test_a_region_whose_bind_is_being_published_takes_no_job(
        env, apiserver):
    """Project A's instance gets the region while its claim is published
    (the ARQ BindStarted, holding the handle): project B's member cannot
    load its own image into it meanwhile."""
    arq_uuid = h.make_arq(project_id='project-a')
    theirs = env.add_bitstream(visibility='private', project_id='project-b')
    tried = []

    def while_published(server):
        arq = h.get_arq(arq_uuid)
        try:
            outcome = env.api.program(MEMBER_B, theirs.uuid,
                                      env.region().uuid)
        except exception.CyborgLiteException as exc:
            outcome = exc
        tried.append((arq.state, arq.attach_handle_id is not None,
                      outcome))
    apiserver.before_write = while_published

    bound = _bind(env, arq_uuid)

    assert bound.state == 'Bound', bound.error
    [(state, holding, outcome)] = tried
    assert (state, holding) == ('BindStarted', True)
    assert isinstance(outcome, exception.Conflict), outcome
    assert 'in use by accelerator request %s' % arq_uuid in str(outcome)
    assert jobs_db.list_jobs() == []
    assert env.hardware() == pe.OLD_FUNCTION


def test_a_region_a_kubernetes_claim_holds_takes_no_job(env):
    uid = 'c1a1a000-0000-4000-8000-0000000000a1'
    assert _prepare(env, uid)['deployable_uuid'] == env.region().uuid
    image = env.add_bitstream()

    with pytest.raises(exception.Conflict,
                       match='in use by Kubernetes ResourceClaim %s' % uid):
        env.program(image.uuid)

    assert jobs_db.list_jobs() == []
    assert env.hardware() == pe.OLD_FUNCTION


def test_a_prepare_for_a_region_a_job_is_loading_is_refused(env):
    # NOTE: no agent takes the job, so it stays queued: active, as a job
    # writing the region is, for as long as the test needs.
    env.kill_agent()
    job = env.program(env.add_bitstream().uuid)
    assert jobs_db.get(job['uuid']).state == 'queued'

    with pytest.raises(exception.ClaimRefused,
                       match='being programmed by job %s' % job['uuid']):
        _prepare(env, 'c1a1a000-0000-4000-8000-0000000000a2')

    assert _held_by_claims() == []


def test_a_prepare_on_a_host_outside_kubernetes_hosts_holds_nothing(
        conf, make_env):  # noqa: F811
    conf.set_override('hosts', ['another-host'], group='kubernetes')
    env = make_env(sriov=True)

    with pytest.raises(exception.ClaimRefused,
                       match='host %s does not serve Kubernetes' % pe.HOST):
        _prepare(env, 'c1a1a000-0000-4000-8000-0000000000a3')

    assert _held_by_claims() == []
    assert not any(handle.in_use for handle in h.handles_of(
        {'deployable_id': env.region().id}))


def _through(holder, region):
    return 'in use by %s, which holds region %s behind the same PCI ' \
        'function' % (holder, region.name)


def test_a_region_whose_sibling_a_bind_holds_takes_no_job(pf_env,
                                                          apiserver):
    """A card without SR-IOV: Nova's instance gets its PF through one
    region, so the other region is the instance's too. Project B's
    member can load nothing into it, while the bind is published (the
    ARQ BindStarted, holding the handle) nor once it is Bound: refused as
    for the region itself, naming the holder and its region."""
    env = pf_env
    arq_uuid = h.make_arq(project_id='project-a')
    theirs = env.add_bitstream(visibility='private', project_id='project-b')
    tried = []

    def program_the_sibling(ctxt):
        arq = h.get_arq(arq_uuid)
        [held] = [r for r in env.regions() if r.id == arq.deployable_id]
        [sibling] = [r for r in env.regions() if r.id != held.id]
        try:
            outcome = env.api.program(ctxt, theirs.uuid, sibling.uuid)
        except exception.CyborgLiteException as exc:
            outcome = exc
        tried.append((arq.state, arq.attach_handle_id is not None,
                      held, outcome))
    apiserver.before_write = lambda server: program_the_sibling(MEMBER_B)

    bound = _bind(env, arq_uuid)
    apiserver.before_write = None
    program_the_sibling(context.get_admin_context())

    assert bound.state == 'Bound', bound.error
    assert [t[:2] for t in tried] == [('BindStarted', True), ('Bound', True)]
    for _state, _holding, held, outcome in tried:
        assert isinstance(outcome, exception.Conflict), outcome
        assert _through('accelerator request %s' % arq_uuid, held) in \
            str(outcome)
    assert jobs_db.list_jobs() == []
    assert env.hardware('region0') == env.hardware('region1') == \
        pe.OLD_FUNCTION


def test_what_a_claim_holds_through_a_sibling_is_held_for_all(pf_env):
    """A claim holds region0 of a card without SR-IOV: a job, a Prepare
    and a bind of region1 (behind the same PF) ask who holds the function
    (db/attach_handles.holders) and are refused, naming the claim."""
    env = pf_env
    uid = 'c1a1a000-0000-4000-8000-0000000000b1'
    region0, region1 = env.region('region0'), env.region('region1')
    assert _prepare(env, uid)['deployable_uuid'] == region0.uuid
    holder = 'k8s:' + uid

    with pytest.raises(exception.Conflict, match=_through(
            'Kubernetes ResourceClaim %s' % uid, region0)):
        env.program(env.add_bitstream().uuid, 'region1')
    with pytest.raises(exception.ClaimRefused,
                       match='handle_shared_in_use.*held by %s on %s' % (
                           holder, region0.name)):
        _prepare(env, 'c1a1a000-0000-4000-8000-0000000000b2',
                 device=REGION0.replace('region0', 'region1'))
    failed = _bind(env, h.make_arq(project_id='team-a'))
    assert failed.state == 'BindFailed'
    assert 'held by %s on %s' % (holder, region0.name) in failed.error

    assert jobs_db.list_jobs() == []
    assert _held_by_claims() == [uid]
    assert not any(handle.in_use for handle in h.handles_of(
        {'deployable_id': region1.id}))


def test_no_guest_or_pod_gets_a_function_a_job_programs_a_region_behind(
        pf_env):
    """A job loads region1 of a card without SR-IOV: attaching the PF
    would hand region1 over mid-write, so a bind (Nova would take
    region0) and a Prepare of region0 are refused, naming the job."""
    env = pf_env
    # NOTE: no agent takes the job, so it stays queued: active, as a job
    # writing the region is, for as long as the test needs.
    env.kill_agent()
    job = env.program(env.add_bitstream().uuid, 'region1')
    region1 = env.region('region1')
    busy = 'shares its PCI function with region %s, which job %s is ' \
        'programming' % (region1.name, job['uuid'])

    failed = _bind(env, h.make_arq(project_id='team-a'))
    assert failed.state == 'BindFailed'
    assert busy in failed.error
    with pytest.raises(exception.ClaimRefused, match=busy):
        _prepare(env, 'c1a1a000-0000-4000-8000-0000000000b3')

    assert _held_by_claims() == []
    assert not any(handle.in_use for region in env.regions()
                   for handle in h.handles_of({'deployable_id': region.id}))
