"""Signed bitstreams over the API: trusted keys (admin), signatures of
images and their status, revocation, per-project signature policies,
and the refusal of bad input with a 400 that changes nothing."""
import base64
import datetime

import pytest

from cyborg_lite.bitstreams import signatures
from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import signature_policies as policies_db
from cyborg_lite.db import trusted_keys as keys_db
from tests.functional.api import bitstream_helpers as bh
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import ANONYMOUS
from tests.functional.api.conftest import MANAGER_A
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import MEMBER_B
from tests.functional.api.conftest import error_of
from tests import signing_keys as sk
from tests import waiting
from tests.unit.bitstreams import builders

V = {'OpenStack-API-Version': 'accelerator ' + signatures.MICROVERSION}
BELOW = {'OpenStack-API-Version': 'accelerator 2.5'}
IMAGE = builders.build_gbs()
OTHER_IMAGE = builders.build_gbs(builders.gbs_metadata(
    afu_uuid='5f0e3c2a-1b2c-4d5e-8f90-a1b2c3d4e5f6'))


def h(*caller, **extra):
    return bh.h(*caller, **dict(V, **extra))


def register(app, key, name='lab', project_id=None, caller=ADMIN,
             status=201, pem=None):
    body = {'name': name, 'public_key': pem or sk.public_pem(key)}
    if project_id is not None:
        body['project_id'] = project_id
    return app.post_json('/v2/trusted_keys', body, headers=h(caller),
                         status=status)


def active(app, caller=MEMBER_A, data=IMAGE, **values):
    return bh.create_active(app, caller, data=data, **values)['uuid']


def put_signature(app, uuid, signature, key_id=None, caller=MEMBER_A,
                  status=200):
    body = {'signature': signature}
    if key_id is not None:
        body['key_id'] = key_id
    return app.put_json('/v2/bitstreams/%s/signature' % uuid, body,
                        headers=h(caller), status=status)


def shown(app, uuid, caller=MEMBER_A):
    return app.get('/v2/bitstreams/' + uuid, headers=h(caller)).json


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


@pytest.fixture(scope='module')
def lab():
    return sk.new_key('ed25519')


# --- trusted keys ---------------------------------------------------------

@pytest.mark.parametrize('kind', ['ed25519', 'ecdsa', 'certificate'])
def test_register_a_key_or_certificate(app, kind):
    key = sk.new_key('ecdsa' if kind == 'ecdsa' else 'ed25519')
    pem = sk.certificate_pem(key) if kind == 'certificate' else None
    resp = register(app, key, pem=pem)
    body = resp.json
    assert resp.location.endswith('/v2/trusted_keys/' + body['uuid'])
    assert (body['key_id'], body['name'], body['project_id'],
            body['revoked_at']) == (sk.key_id(key), 'lab', None, None)
    assert body['algorithm'] == ('ecdsa-p256' if kind == 'ecdsa'
                                 else 'ed25519')
    assert body['public_key'] == sk.public_pem(key)
    if kind == 'certificate':
        assert 'CN=FPGA image signing' in body['subject']
        assert body['not_after'].endswith('+00:00')
    else:
        assert body['certificate'] is None and body['not_after'] is None
    assert app.get('/v2/trusted_keys/' + body['uuid'],
                   headers=h(ADMIN)).json == body


@pytest.mark.parametrize('pem,match', [
    ('-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----',
     'not a readable PEM public key'),
    ('hello', 'exactly one PEM block'),
    ('rsa', 'the keys supported are Ed25519 and ECDSA P-256'),
    ('private', 'this is a private key'),
    ('expired', 'not now'),
    ('not yet valid', 'not now'),
    ('server certificate', 'codeSigning'),
])
def test_bad_keys_are_400_and_register_nothing(app, lab, pem, match):
    if pem == 'rsa':
        pem = sk.public_pem(sk.new_key('rsa'))
    elif pem == 'private':
        pem = sk.private_pem(lab).decode()
    elif pem == 'expired':
        pem = sk.certificate_pem(lab, days=1, not_before=datetime.datetime(
            2020, 1, 1, tzinfo=datetime.timezone.utc))
    elif pem == 'not yet valid':
        pem = sk.certificate_pem(lab, not_before=_utcnow() +
                                 datetime.timedelta(hours=1))
    elif pem == 'server certificate':
        pem = sk.certificate_pem(lab, code_signing=False)
    resp = register(app, lab, pem=pem, status=400)
    assert match in error_of(resp)
    assert 'public_key' in error_of(resp)
    assert keys_db.page_keys(keys_db.pagination.ALL) == []


@pytest.mark.parametrize('body,field', [
    ({'public_key': 'x'}, 'body.name'),
    ({'name': 'n'}, 'body.public_key'),
    ({'name': 'n', 'public_key': 'x', 'project_id': 'a b'},
     'body.project_id'),
    ({'name': 'n', 'public_key': 'x', 'colour': 'red'}, 'body.colour'),
])
def test_bad_key_bodies_name_the_field(app, body, field):
    resp = app.post_json('/v2/trusted_keys', body, headers=h(ADMIN),
                         status=400)
    assert 'Invalid value for %s' % field in error_of(resp)


def test_a_key_is_registered_once_and_a_revoked_one_never_again(app, lab):
    first = register(app, lab).json
    resp = register(app, lab, name='again', project_id='project-a',
                    status=409)
    assert first['uuid'] in error_of(resp) and 'trusted' in error_of(resp)
    revoked = app.post_json('/v2/trusted_keys/%s/revoke' % first['uuid'],
                            {'reason': 'leaked'}, headers=h(ADMIN)).json
    assert revoked['revoked_at'] and revoked['revocation_reason'] == 'leaked'
    resp = app.post('/v2/trusted_keys/%s/revoke' % first['uuid'],
                    headers=h(ADMIN), status=409)
    assert 'revoked already' in error_of(resp)
    resp = app.delete('/v2/trusted_keys/' + first['uuid'], headers=h(ADMIN),
                      status=409)
    assert 'record of the revocation' in error_of(resp)
    assert 'revoked' in error_of(register(app, lab, status=409))


def test_only_admins_change_keys_members_see_global_and_their_own(app):
    global_key = register(app, sk.new_key()).json
    key_a = register(app, sk.new_key(), project_id='project-a').json
    key_b = register(app, sk.new_key(), project_id='project-b').json
    for caller in (MEMBER_A, MANAGER_A, ANONYMOUS):
        register(app, sk.new_key(), caller=caller, status=403)
        app.post('/v2/trusted_keys/%s/revoke' % key_a['uuid'],
                 headers=h(caller), status=403)
        app.delete('/v2/trusted_keys/' + key_a['uuid'], headers=h(caller),
                   status=403)

    def listed(caller):
        return sorted(k['uuid'] for k in app.get(
            '/v2/trusted_keys', headers=h(caller)).json['trusted_keys'])
    assert listed(ADMIN) == sorted([global_key['uuid'], key_a['uuid'],
                                    key_b['uuid']])
    assert listed(MEMBER_A) == sorted([global_key['uuid'], key_a['uuid']])
    app.get('/v2/trusted_keys/' + key_b['uuid'], headers=h(MEMBER_A),
            status=404)
    app.get('/v2/trusted_keys', headers=h(ANONYMOUS), status=403)
    # Filters.
    found = app.get('/v2/trusted_keys?key_id=' + key_b['key_id'],
                    headers=h(ADMIN)).json['trusted_keys']
    assert [k['uuid'] for k in found] == [key_b['uuid']]
    app.get('/v2/trusted_keys?key_id=XYZ', headers=h(ADMIN), status=400)
    app.delete('/v2/trusted_keys/' + key_b['uuid'], headers=h(ADMIN),
               status=204)
    app.get('/v2/trusted_keys/' + key_b['uuid'], headers=h(ADMIN),
            status=404)


def test_the_routes_need_the_signatures_microversion(app):
    uuid = active(app)
    for method, path in (('GET', '/v2/trusted_keys'),
                         ('GET', '/v2/signature_policies'),
                         ('GET', '/v2/bitstreams/%s/signature' % uuid)):
        resp = app.request(path, method=method,
                           headers=bh.h(ADMIN, **BELOW), expect_errors=True)
        assert resp.status_int == 404
        assert signatures.MICROVERSION in error_of(resp)


# --- signatures -------------------------------------------------------------

def test_verified_signature_shown_from_the_microversion_on(app, lab):
    key = register(app, lab).json
    uuid = active(app)
    assert shown(app, uuid)['signature_status'] == 'unsigned'
    body = put_signature(app, uuid, sk.sign(lab, IMAGE)).json
    assert (body['signature_status'], body['signer'], body['key_id'],
            body['reason']) == ('verified', 'lab', key['key_id'], None)
    assert body['signed_at'].endswith('+00:00')
    bitstream = shown(app, uuid)
    assert (bitstream['signature_status'], bitstream['signer'],
            bitstream['key_id'], bitstream['signed_at']) == (
        'verified', 'lab', key['key_id'], body['signed_at'])
    # 2.5 and older show none of it.
    old = app.get('/v2/bitstreams/' + uuid,
                  headers=bh.h(MEMBER_A, **BELOW)).json
    assert 'signature_status' not in old and 'signer' not in old
    listed = app.get('/v2/bitstreams', headers=h(MEMBER_A)).json
    assert [b['signature_status'] for b in listed['bitstreams']] == [
        'verified']
    assert app.get('/v2/bitstreams/%s/signature' % uuid,
                   headers=h(MEMBER_A)).json == body


@pytest.mark.parametrize('kind', ['ed25519', 'ecdsa'])
def test_each_failure_has_its_status(app, kind):
    signer = sk.new_key(kind)
    stranger = sk.new_key(kind)
    key = register(app, signer).json
    uuid = active(app)

    def status(signature, key_id=None):
        return put_signature(app, uuid, signature, key_id).json
    # A signature over another image.
    other = status(sk.sign(signer, OTHER_IMAGE))
    assert other['signature_status'] == 'invalid'
    assert 'no key trusted' in other['reason']
    # The wrong key: unnamed, nothing verifies; named, nobody trusts it.
    assert status(sk.sign(stranger, IMAGE))['signature_status'] == 'invalid'
    untrusted = status(sk.sign(stranger, IMAGE), sk.key_id(stranger))
    assert (untrusted['signature_status'], untrusted['key_id']) == (
        'untrusted_key', sk.key_id(stranger))
    # A trusted key named for another signer's signature.
    named = status(sk.sign(stranger, IMAGE), key['key_id'])
    assert named['signature_status'] == 'invalid'
    assert 'does not verify' in named['reason']
    # Revocation changes the status on the next read.
    assert status(sk.sign(signer, IMAGE))['signature_status'] == 'verified'
    app.post('/v2/trusted_keys/%s/revoke' % key['uuid'], headers=h(ADMIN))
    assert shown(app, uuid)['signature_status'] == 'revoked_key'


def test_keys_are_trusted_for_their_project_only(app, lab):
    register(app, lab, project_id='project-b')
    uuid = active(app)
    assert put_signature(app, uuid, sk.sign(lab, IMAGE),
                         sk.key_id(lab)).json['signature_status'] == \
        'untrusted_key'
    # Trusting it for project A too is a new key registration: refused
    # (one registration per key); trusted globally it would do.
    register(app, lab, project_id='project-a', status=409)


def test_a_certificate_vouches_for_no_signature_received_before_it(
        app, lab):
    """A certificate valid from a moment after the signature was
    received: the signature is not verified by it, as one received
    after it expired is not."""
    uuid = active(app)
    received = datetime.datetime.fromisoformat(put_signature(
        app, uuid, sk.sign(lab, IMAGE)).json['signed_at'])
    # X.509 counts whole seconds: the next one after the signature.
    valid_from = received.replace(microsecond=0) + datetime.timedelta(
        seconds=1)
    assert waiting.until(lambda: _utcnow() >= valid_from, timeout=5)
    register(app, lab, pem=sk.certificate_pem(lab, not_before=valid_from))

    body = app.get('/v2/bitstreams/%s/signature' % uuid,
                   headers=h(MEMBER_A)).json

    assert body['signature_status'] == 'untrusted_key'
    assert 'its certificate was valid from %s' % valid_from.replace(
        tzinfo=None) in body['reason']
    assert 'and the signature came at' in body['reason']


def test_a_key_registered_later_verifies_an_earlier_signature(app, lab):
    uuid = active(app)
    assert put_signature(app, uuid, sk.sign(lab, IMAGE), sk.key_id(lab)
                         ).json['signature_status'] == 'untrusted_key'
    register(app, lab, project_id='project-a')
    assert shown(app, uuid)['signature_status'] == 'verified'


@pytest.mark.parametrize('body,match', [
    ({'signature': 'not base64!'}, 'not base64'),
    ({'signature': base64.b64encode(b'x' * 10).decode()},
     'an Ed25519 signature is 64 bytes'),
    ({'signature': ''}, 'body.signature'),
    ({'signature': base64.b64encode(b'x' * 64).decode(), 'key_id': 'AB'},
     'body.key_id'),
    ({'signature': base64.b64encode(b'x' * 64).decode(), 'extra': 1},
     'body.extra'),
    ({'key_id': 'a' * 64}, 'body.signature'),
])
def test_bad_signatures_are_400_and_change_nothing(app, lab, body, match):
    uuid = active(app)
    put_signature(app, uuid, sk.sign(lab, IMAGE))
    before = bitstreams_db.get(uuid)
    resp = app.put_json('/v2/bitstreams/%s/signature' % uuid, body,
                        headers=h(MEMBER_A), status=400)
    assert match in error_of(resp)
    after = bitstreams_db.get(uuid)
    assert (after.signature, after.signed_at) == (before.signature,
                                                  before.signed_at)


def test_the_form_is_checked_against_the_named_key(app):
    ecdsa = sk.new_key('ecdsa')
    key = register(app, ecdsa).json
    uuid = active(app)
    ed = sk.sign(sk.new_key('ed25519'), IMAGE)
    resp = put_signature(app, uuid, ed, key['key_id'], status=400)
    assert 'DER ECDSA-Sig-Value' in error_of(resp)
    # Unnamed, a 64-byte value may be an Ed25519 signature: stored.
    assert put_signature(app, uuid, ed).json['signature_status'] == 'invalid'


def test_signature_needs_the_image_and_the_owner(app, lab):
    queued = bh.create(app, MEMBER_A).json['uuid']
    resp = put_signature(app, queued, sk.sign(lab, IMAGE), status=409)
    assert 'upload it first' in error_of(resp)
    uuid = active(app)
    # Another project does not see it; a reader-only caller may not sign.
    put_signature(app, uuid, sk.sign(lab, IMAGE), caller=MEMBER_B,
                  status=404)
    put_signature(app, uuid, sk.sign(lab, IMAGE), caller=ANONYMOUS,
                  status=403)
    public = active(app, caller=ADMIN, visibility='public')
    resp = put_signature(app, public, sk.sign(lab, IMAGE), status=403)
    assert 'cyborg:bitstream:sign' in error_of(resp)
    put_signature(app, public, sk.sign(lab, IMAGE), caller=ADMIN)


def test_delete_signature(app, lab):
    register(app, lab)
    uuid = active(app)
    put_signature(app, uuid, sk.sign(lab, IMAGE))
    app.delete('/v2/bitstreams/%s/signature' % uuid, headers=h(MEMBER_A),
               status=204)
    assert shown(app, uuid)['signature_status'] == 'unsigned'
    assert shown(app, uuid)['signed_at'] is None
    app.delete('/v2/bitstreams/%s/signature' % uuid, headers=h(MEMBER_A),
               status=204)
    app.delete('/v2/bitstreams/%s/signature' % uuid, headers=h(MEMBER_B),
               status=404)


# --- signature policies -----------------------------------------------------

def test_policies_default_override_and_who_may(app, conf):
    conf.set_override('signature_policy', 'warn', group='bitstreams')
    url = '/v2/signature_policies/project-a'
    assert app.get(url, headers=h(MEMBER_A)).json == {
        'project_id': 'project-a', 'policy': 'warn',
        'source': 'configuration', 'created_at': None, 'updated_at': None}
    app.get(url, headers=h(MEMBER_B), status=403)
    app.put_json(url, {'policy': 'enforce'}, headers=h(MEMBER_A),
                 status=403)
    set_ = app.put_json(url, {'policy': 'enforce'}, headers=h(ADMIN)).json
    assert (set_['policy'], set_['source']) == ('enforce', 'project')
    assert app.get(url, headers=h(MEMBER_A)).json == set_
    assert app.put_json(url, {'policy': 'disabled'},
                        headers=h(ADMIN)).json['policy'] == 'disabled'
    listed = app.get('/v2/signature_policies', headers=h(ADMIN)).json
    assert listed['default_policy'] == 'warn'
    assert [(p['project_id'], p['policy']) for p in
            listed['signature_policies']] == [('project-a', 'disabled')]
    app.get('/v2/signature_policies', headers=h(MEMBER_A), status=403)
    app.delete(url, headers=h(MEMBER_A), status=403)
    app.delete(url, headers=h(ADMIN), status=204)
    app.delete(url, headers=h(ADMIN), status=404)
    assert policies_db.get('project-a') is None


@pytest.mark.parametrize('path,body,field', [
    ('/v2/signature_policies/project-a', {'policy': 'strict'},
     'body.policy'),
    ('/v2/signature_policies/project-a', {}, 'body.policy'),
    ('/v2/signature_policies/a%20b', {'policy': 'warn'}, 'project_id'),
])
def test_bad_policy_requests_are_400(app, path, body, field):
    resp = app.put_json(path, body, headers=h(ADMIN), status=400)
    assert 'Invalid value for %s' % field in error_of(resp)
    assert policies_db.list_all() == []
