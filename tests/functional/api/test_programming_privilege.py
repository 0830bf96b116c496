"""Who may program what, over the real API, conductor and agent (inproc://
RPC, the FAKE driver's simulated card as hardware): the matrix of
docs/deployment.md "Programming privilege".

- starting a job: a member (or manager) of a project, with a bitstream
  its project may see (its own or a public one), on a region no Bound ARQ
  or claim holds; a reader or an anonymous caller never; a region in use
  only by an admin's ``force``;
- which images: under ``enforce`` only those whose signature verifies
  with a key an admin trusts for the bitstream's project; a member may
  sign its project's bitstreams but neither trust a key nor loosen a
  policy, so it cannot make its own image programmable;
- a refusal runs no job and leaves the hardware as it was.
"""
import pytest

from cyborg_lite.bitstreams import signatures
from cyborg_lite.db import programming_jobs as jobs_db
from tests.functional.api import bitstream_helpers as bh
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import ANONYMOUS
from tests.functional.api.conftest import MANAGER_A
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import MEMBER_B
from tests.functional.api.conftest import error_of
from tests import signing_keys as sk
from tests import waiting
from tests.functional import programming_env as pe
from tests.functional.api.test_programs import env  # noqa: F401
from tests.functional.api.test_programs import rpc_app  # noqa: F401
from tests.functional.programming_env import make_env  # noqa: F401

READER_A = {'X-Roles': 'reader', 'X-Project-Id': 'project-a',
            'X-User-Id': 'rita'}
V = {'OpenStack-API-Version': 'accelerator ' + signatures.MICROVERSION}


@pytest.fixture
def api(rpc_app):  # noqa: F811
    """The API over the real conductor and agent (test_programs')."""
    return rpc_app


def h(caller):
    return bh.h(caller, **V)


def _bitstream(api, caller=MEMBER_A, **values):
    return bh.create_active(api, caller, pe.new_image(), **values)['uuid']


def _program(api, caller, env, bitstream, status=202, region='region0'):
    return api.post_json('/v2/programs', {
        'deployable_uuid': env.region(region).uuid,
        'bitstream_uuid': bitstream}, headers=h(caller), status=status)


def _succeeds(api, env, caller, bitstream, region='region0'):
    job = _program(api, caller, env, bitstream, region=region).json

    def ended():
        shown = api.get('/v2/programs/' + job['uuid'], headers=h(caller)).json
        return shown if shown['state'] in ('succeeded', 'failed') else None
    done = waiting.until(ended)
    assert done and done['state'] == 'succeeded', done
    assert env.hardware(region) == pe.NEW_FUNCTION


@pytest.mark.parametrize('caller,status', [
    (READER_A, 403), (ANONYMOUS, 403), (MEMBER_B, 404)])
def test_who_may_not_start_a_job(api, env, caller, status):
    bitstream = _bitstream(api)
    resp = _program(api, caller, env, bitstream, status=status)
    assert error_of(resp)
    assert jobs_db.list_jobs() == []
    assert env.hardware() == pe.OLD_FUNCTION


@pytest.mark.parametrize('caller', [MEMBER_A, MANAGER_A, ADMIN])
def test_members_managers_and_admins_may(api, env, caller):
    _succeeds(api, env, caller, _bitstream(api))


def test_a_member_may_load_a_public_image_of_the_admins(api, env):
    public = _bitstream(api, ADMIN, visibility='public')
    _succeeds(api, env, MEMBER_B, public)


def test_under_enforce_a_member_cannot_make_its_own_image_trusted(
        api, env):
    api.put_json('/v2/signature_policies/project-a', {'policy': 'enforce'},
                 headers=h(ADMIN))
    own_key = sk.new_key()
    bitstream = _bitstream(api)
    api.put_json('/v2/bitstreams/%s/signature' % bitstream,
                 {'signature': sk.sign(own_key, pe.new_image()),
                  'key_id': sk.key_id(own_key)}, headers=h(MEMBER_A))
    # Neither trusting its key nor loosening its project's policy.
    api.post_json('/v2/trusted_keys', {
        'name': 'mine', 'public_key': sk.public_pem(own_key),
        'project_id': 'project-a'}, headers=h(MEMBER_A), status=403)
    api.put_json('/v2/signature_policies/project-a', {'policy': 'warn'},
                 headers=h(MEMBER_A), status=403)
    resp = _program(api, MEMBER_A, env, bitstream, status=409)
    assert 'its signature is untrusted_key' in error_of(resp)
    assert 'policy of project project-a is enforce' in error_of(resp)
    # Not even an admin's force passes the signature check (an admin
    # acting in project A: the requesting project's policy applies).
    admin_a = dict(ADMIN, **{'X-Project-Id': 'project-a'})
    resp = api.post_json('/v2/programs', {
        'deployable_uuid': env.region().uuid, 'bitstream_uuid': bitstream,
        'force': True}, headers=h(admin_a), status=409)
    assert 'untrusted_key' in error_of(resp)
    assert jobs_db.list_jobs() == [] and env.hardware() == pe.OLD_FUNCTION
    # Once an admin trusts the key for project A, it programs.
    api.post_json('/v2/trusted_keys', {
        'name': 'project A release key',
        'public_key': sk.certificate_pem(own_key),
        'project_id': 'project-a'}, headers=h(ADMIN), status=201)
    assert api.get('/v2/bitstreams/' + bitstream, headers=h(MEMBER_A)).json[
        'signer'] == 'project A release key'
    _succeeds(api, env, MEMBER_A, bitstream)


def test_another_project_keeps_its_own_policy(api, env):
    api.put_json('/v2/signature_policies/project-a', {'policy': 'enforce'},
                 headers=h(ADMIN))
    _program(api, MEMBER_A, env, _bitstream(api), status=409)
    # Project B is under the configured policy (warn): unsigned programs.
    _succeeds(api, env, MEMBER_B, _bitstream(api, MEMBER_B), 'region1')
