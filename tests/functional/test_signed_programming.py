"""Signed bitstreams end to end over inproc://: ConductorAPI -> conductor
(its check before a job) -> agent (its check over the bytes it is about to
write) -> the FAKE driver, whose simulated region is the hardware.

Every refusal leaves the region with its old function (0 programs) and
says which check refused: the conductor's ("Signature check before
programming") or the agent's ("Signature check on the agent").
"""
import contextlib

import pytest

from cyborg_lite.api import deploy
from cyborg_lite.bitstreams import signatures
from cyborg_lite.common import exception
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.db import signature_policies as policies_db
from cyborg_lite.db import trusted_keys as keys_db
from tests import servers
from tests import signing_keys as sk
from tests import waiting
from tests.functional import programming_env as pe
from tests.functional.programming_env import make_env  # noqa: F401
from tests.unit.conductor import bind_helpers

CONDUCTOR_CHECK = 'Signature check before programming refused'
AGENT_CHECK = 'Signature check on the agent failed'


@pytest.fixture(scope='module')
def key():
    return sk.new_key('ed25519')


def _policy(conf, policy):
    conf.set_override('signature_policy', policy, group='bitstreams')


def _signed(env, key, **values):
    env.trust(key)
    return env.sign(env.add_bitstream(**values), key)


def _flipped(image):
    return image[:-1] + bytes([image[-1] ^ 0xff])


def _refused_at_once(env, bitstream, status):
    with pytest.raises(exception.SignatureRefused) as caught:
        env.program(bitstream.uuid)
    assert caught.value.code == 409
    assert CONDUCTOR_CHECK in str(caught.value)
    assert 'its signature is %s' % status in str(caught.value)
    assert jobs_db.list_jobs() == []
    assert env.hardware() == pe.OLD_FUNCTION
    return str(caught.value)


def _failed_on_the_agent(env, bitstream):
    done = env.wait_job(env.program(bitstream.uuid)['uuid'])
    assert done.state == 'failed'
    assert env.hardware() == pe.OLD_FUNCTION
    assert env.region().function_id == pe.OLD_FUNCTION
    return done.error


@pytest.mark.parametrize('policy', ['disabled', 'warn', 'enforce'])
@pytest.mark.parametrize('kind', ['ed25519', 'ecdsa'])
def test_a_valid_signed_image_programs_under_every_policy(
        conf, make_env, policy, kind):  # noqa: F811
    _policy(conf, policy)
    env = make_env()
    bitstream = _signed(env, sk.new_key(kind))
    done = env.wait_job(env.program(bitstream.uuid)['uuid'])
    assert done.state == 'succeeded', done.error
    assert env.hardware() == pe.NEW_FUNCTION


@pytest.mark.parametrize('policy', ['disabled', 'warn'])
def test_unsigned_and_untrusted_images_program_outside_enforce(
        conf, make_env, key, policy):  # noqa: F811
    _policy(conf, policy)
    env = make_env()
    unsigned = env.add_bitstream()
    stranger = env.sign(env.add_bitstream(), sk.new_key(), key_id='e' * 64)
    for bitstream, region in ((unsigned, 'region0'), (stranger, 'region1')):
        done = env.wait_job(env.program(bitstream.uuid, region)['uuid'])
        assert done.state == 'succeeded', done.error
        assert env.hardware(region) == pe.NEW_FUNCTION


# --- under enforce: each failure, 0 programs, a specific error ------------

def test_unsigned_image_refused(conf, make_env):  # noqa: F811
    _policy(conf, 'enforce')
    env = make_env()
    _refused_at_once(env, env.add_bitstream(), 'unsigned')


def test_wrong_key_refused(conf, make_env, key):  # noqa: F811
    _policy(conf, 'enforce')
    env = make_env()
    env.trust(key)
    stranger = sk.new_key()
    named = env.sign(env.add_bitstream(), stranger,
                     key_id=sk.key_id(stranger))
    assert 'not trusted' in _refused_at_once(env, named, 'untrusted_key')
    # Unnamed, no trusted key verifies it.
    unnamed = env.sign(env.add_bitstream(), stranger)
    _refused_at_once(env, unnamed, 'invalid')


def test_signature_over_another_image_refused(
        conf, make_env, key):  # noqa: F811
    _policy(conf, 'enforce')
    env = make_env()
    env.trust(key)
    bitstream = env.sign(env.add_bitstream(), key,
                         image=pe.new_image(afu_uuid=pe.builders.AFU_UUID))
    _refused_at_once(env, bitstream, 'invalid')


def test_revoked_key_refused_from_that_moment(
        conf, make_env, key):  # noqa: F811
    _policy(conf, 'enforce')
    env = make_env(program_delay=1.0)
    bitstream = _signed(env, key)
    trusted = keys_db.trusted_for([None])[None][0]
    # A job already writing when the key is revoked finishes...
    running = env.program(bitstream.uuid)
    env.wait_job(running['uuid'], states=('programming',))
    keys_db.revoke(trusted.uuid, 'leaked')
    assert env.wait_job(running['uuid']).state == 'succeeded'
    assert env.hardware() == pe.NEW_FUNCTION
    # ...a new one is refused.
    with pytest.raises(exception.SignatureRefused, match='revoked_key'):
        env.program(bitstream.uuid, region='region1')
    assert env.hardware('region1') == pe.OLD_FUNCTION
    assert len(jobs_db.list_jobs()) == 1


@pytest.mark.parametrize('policy,refused', [
    ('warn', True), ('disabled', False)])
def test_a_revoked_key_is_refused_under_warn_too(
        conf, make_env, key, policy, refused):  # noqa: F811
    """A revocation is an admin's explicit act: only a policy that does
    not look at signatures at all lets its images through."""
    _policy(conf, policy)
    env = make_env()
    bitstream = _signed(env, key)
    keys_db.revoke(keys_db.trusted_for([None])[None][0].uuid, 'leaked')
    if refused:
        assert 'policy of this deployment ([bitstreams]signature_policy) ' \
               'is warn' in _refused_at_once(env, bitstream, 'revoked_key')
    else:
        done = env.wait_job(env.program(bitstream.uuid)['uuid'])
        assert done.state == 'succeeded', done.error
        assert env.hardware() == pe.NEW_FUNCTION


def test_under_warn_a_bind_reloads_a_region_whose_key_was_revoked(
        conf, make_env, key):  # noqa: F811
    _policy(conf, 'warn')
    env = make_env()
    revoked = _signed(env, key)
    assert env.wait_job(env.program(revoked.uuid)['uuid']).state == \
        'succeeded'
    keys_db.revoke(keys_db.trusted_for([None])[None][0].uuid, 'leaked')
    unsigned = env.add_bitstream()      # the same bytes, unsigned
    arq = _bind(env, pe.NEW_FUNCTION, by='accel:function_id')
    assert arq.state == 'Bound', arq.error
    assert env.region().bitstream_id == unsigned.uuid
    assert len(jobs_db.list_jobs()) == 2


def test_a_queued_job_whose_key_is_revoked_fails_when_sent(
        conf, make_env, key):  # noqa: F811
    _policy(conf, 'enforce')
    env = make_env()
    bitstream = _signed(env, key)
    env.agent.stop()            # nothing takes the job: it stays queued
    job = env.program(bitstream.uuid)
    keys_db.revoke(keys_db.trusted_for([None])[None][0].uuid)
    env.start_agent()           # agent_started sends queued jobs again
    done = env.wait_job(job['uuid'])
    assert done.state == 'failed'
    assert CONDUCTOR_CHECK in done.error and 'revoked_key' in done.error
    assert env.hardware() == pe.OLD_FUNCTION


def test_byte_flipped_in_the_store_after_upload(
        conf, make_env, key):  # noqa: F811
    _policy(conf, 'enforce')
    env = make_env()
    env.trust(key)
    image = pe.new_image()
    bitstream = env.sign(env.add_bitstream(image, stored=_flipped(image)),
                         key)
    error = _failed_on_the_agent(env, bitstream)
    assert AGENT_CHECK in error
    assert 'does not verify' in error


def test_a_project_override_decides_for_that_project(
        conf, make_env):  # noqa: F811
    _policy(conf, 'warn')
    env = make_env()
    policies_db.set_policy('p1', 'enforce')
    unsigned = env.add_bitstream()
    member = pe.context.RequestContext(project_id='p1', user_id='u1',
                                       roles=['member'])
    other = pe.context.RequestContext(project_id='p2', user_id='u2',
                                      roles=['member'])
    with pytest.raises(exception.SignatureRefused,
                       match='policy of project p1 is enforce'):
        env.program(unsigned.uuid, ctxt=member)
    done = env.wait_job(env.program(unsigned.uuid, ctxt=other)['uuid'])
    assert done.state == 'succeeded'


def test_a_bind_under_enforce_fails_with_the_signature_check(
        conf, make_env, key):  # noqa: F811
    _policy(conf, 'enforce')
    env = make_env()
    env.trust(key)
    unsigned = env.add_bitstream()
    arq = _bind(env, unsigned.uuid)
    assert arq.state == 'BindFailed'
    assert CONDUCTOR_CHECK in arq.error and 'unsigned' in arq.error
    assert env.hardware() == pe.OLD_FUNCTION and jobs_db.list_jobs() == []
    signed = env.sign(env.add_bitstream(), key)
    arq = _bind(env, signed.uuid)
    assert arq.state == 'Bound', arq.error
    assert env.hardware() == pe.NEW_FUNCTION


def _bind(env, wanted, by='accel:bitstream_id'):
    region = env.region()
    arq_uuid = bind_helpers.make_arq(profile_id=bind_helpers.make_profile(
        [{'resources:FPGA': '1', by: wanted}]))
    env.api.bind_arqs(pe.context.get_admin_context(), {arq_uuid: {
        'hostname': pe.HOST, 'device_rp_uuid': region.rp_uuid,
        'instance_uuid': 'c0ffee00-0000-4000-8000-000000000001'}})

    def resolved():
        arq = bind_helpers.get_arq(arq_uuid)
        return arq if arq.state in ('Bound', 'BindFailed') else None
    return waiting.until(resolved)


# --- under enforce, a region already loaded is handed out only with a
# --- verified image; else it is loaded again, or the bind fails -----------

def _loaded_under_warn(conf, make_env, region='region0'):
    """An env whose ``region`` holds an unsigned image, loaded while the
    policy was warn; the policy is enforce from now on."""
    _policy(conf, 'warn')
    env = make_env()
    unsigned = env.add_bitstream()
    done = env.wait_job(env.program(unsigned.uuid, region)['uuid'])
    assert done.state == 'succeeded', done.error
    _policy(conf, 'enforce')
    return env, unsigned


def test_a_bind_by_bitstream_refuses_the_unsigned_image_it_finds_loaded(
        conf, make_env):  # noqa: F811
    env, unsigned = _loaded_under_warn(conf, make_env)
    arq = _bind(env, unsigned.uuid)
    assert arq.state == 'BindFailed'
    assert CONDUCTOR_CHECK in arq.error and 'unsigned' in arq.error
    assert len(jobs_db.list_jobs()) == 1


def test_a_bind_by_function_loads_a_verified_copy_over_an_unsigned_image(
        conf, make_env, key):  # noqa: F811
    env, unsigned = _loaded_under_warn(conf, make_env)
    signed = _signed(env, key)      # the same bytes, signed
    arq = _bind(env, pe.NEW_FUNCTION, by='accel:function_id')
    assert arq.state == 'Bound', arq.error
    assert arq.deployable_id == env.region().id
    assert env.region().bitstream_id == signed.uuid
    assert [j.bitstream_id for j in jobs_db.list_jobs()] == [
        unsigned.id, signed.id]
    assert env.hardware() == pe.NEW_FUNCTION


def test_a_bind_by_function_prefers_the_region_with_a_verified_image(
        conf, make_env, key):  # noqa: F811
    env, _unsigned = _loaded_under_warn(conf, make_env)
    signed = _signed(env, key)
    done = env.wait_job(env.program(signed.uuid, 'region1')['uuid'])
    assert done.state == 'succeeded', done.error
    arq = _bind(env, pe.NEW_FUNCTION, by='accel:function_id')
    assert arq.state == 'Bound', arq.error
    assert arq.deployable_id == env.region('region1').id
    assert len(jobs_db.list_jobs()) == 2       # no job for this bind


def test_an_image_loaded_outside_cyborg_lite_is_not_trusted(
        conf, make_env, key):  # noqa: F811
    _policy(conf, 'enforce')
    env = make_env()                # both regions hold OLD_FUNCTION
    arq = _bind(env, pe.OLD_FUNCTION, by='accel:function_id')
    assert arq.state == 'BindFailed'
    assert 'No active bitstream' in arq.error and jobs_db.list_jobs() == []
    env.trust(key)
    image = pe.new_image(afu_uuid=pe.builders.AFU_UUID)
    old = env.sign(env.add_bitstream(image, function_id=pe.OLD_FUNCTION),
                   key, image=image)
    arq = _bind(env, pe.OLD_FUNCTION, by='accel:function_id')
    assert arq.state == 'Bound', arq.error
    assert env.region().bitstream_id == old.uuid
    assert [j.state for j in jobs_db.list_jobs()] == ['succeeded']


# --- the HTTP image source: a byte flipped in transit -----------------------

class FlipOneByte:
    """Between the agent and the API: the body of every image download
    reaches the agent with its last byte flipped (what a broken or hostile
    hop would do)."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        body = b''.join(self.app(environ, start_response))
        if environ['PATH_INFO'].endswith('/file') and body:
            body = _flipped(body)
        return [body]


@contextlib.contextmanager
def _http_images(conf):
    with servers.serving(FlipOneByte(deploy.loadapp(conf))) as url:
        conf.set_override('auth_strategy', 'noauth', group='api')
        conf.set_override('image_source', 'http', group='agent')
        conf.set_override('endpoint_override', url, group='image_api')
        yield


@pytest.mark.parametrize('policy,check', [
    ('enforce', AGENT_CHECK), ('warn', 'sha256 mismatch')])
def test_byte_flipped_in_transit(conf, sqlite_db, make_env, key, policy,
                                 check):  # noqa: F811
    conf.set_override('auth_strategy', 'noauth', group='api')
    with _http_images(conf):
        _policy(conf, policy)
        env = make_env()
        error = _failed_on_the_agent(env, _signed(env, key))
    assert check in error


# --- a key revoked while the agent fetches the image ------------------------

class RevokeOnDownload:
    """The API serving image downloads; an admin revokes ``key_uuid``
    while the agent's download is under way (the job was sent with the
    key: its signature verifies on the agent)."""

    def __init__(self, app, key_uuid):
        self.app, self.key_uuid = app, key_uuid

    def __call__(self, environ, start_response):
        if environ['PATH_INFO'].endswith('/file'):
            keys_db.revoke(self.key_uuid, 'leaked during the download')
        return self.app(environ, start_response)


@pytest.mark.parametrize('policy', ['enforce', 'warn'])
def test_a_key_revoked_during_the_download_stops_the_write(
        conf, sqlite_db, make_env, key, policy):  # noqa: F811
    conf.set_override('auth_strategy', 'noauth', group='api')
    _policy(conf, policy)
    key_uuid = keys_db.create(signatures.load_key(sk.public_pem(key)),
                              'lab').uuid
    app = RevokeOnDownload(deploy.loadapp(conf), key_uuid)
    with servers.serving(app) as url:
        conf.set_override('image_source', 'http', group='agent')
        conf.set_override('endpoint_override', url, group='image_api')
        env = make_env()
        bitstream = env.sign(env.add_bitstream(), key)
        error = _failed_on_the_agent(env, bitstream)
    assert CONDUCTOR_CHECK in error and 'revoked_key' in error


# --- whose keys vouch: the bitstream's own project's -------------------------

@pytest.mark.parametrize('trusted_by,programs', [
    ('project-a', True),      # its owner's key: verified for everyone
    ('project-b', False)])    # the requester's key vouches for nothing here
def test_the_bitstreams_own_projects_keys_decide_its_trust(
        conf, make_env, key, trusted_by, programs):  # noqa: F811
    """Project A's public bitstream, programmed on behalf of project B
    under enforce: what A trusts vouches for it, what B trusts does
    not."""
    _policy(conf, 'enforce')
    env = make_env()
    env.trust(key, project_id=trusted_by)
    bitstream = env.sign(env.add_bitstream(project_id='project-a'), key)
    member_b = pe.context.RequestContext(project_id='project-b',
                                         user_id='bob', roles=['member'])
    if programs:
        done = env.wait_job(env.program(bitstream.uuid,
                                        ctxt=member_b)['uuid'])
        assert done.state == 'succeeded', done.error
        assert env.hardware() == pe.NEW_FUNCTION
    else:
        with pytest.raises(exception.SignatureRefused,
                           match='untrusted_key'):
            env.program(bitstream.uuid, ctxt=member_b)
        assert env.hardware() == pe.OLD_FUNCTION and \
            jobs_db.list_jobs() == []
