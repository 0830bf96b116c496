"""bitstreams/signatures: keys, key ids, the signature forms, verification,
the status of a bitstream's signature and what a policy lets through."""
import base64
import datetime
import hashlib
import subprocess
import types

import pytest

from cyborg_lite.bitstreams import signatures as sig
from cyborg_lite.common import exception
from tests import servers
from tests import signing_keys as sk

IMAGE = b'GBS image bytes ' * 64
SHA = hashlib.sha256(IMAGE).hexdigest()
OTHER_SHA = hashlib.sha256(IMAGE + b'x').hexdigest()
NOW = datetime.datetime(2026, 12, 10, 9, 0, 0)


@pytest.fixture(scope='module', params=['ed25519', 'ecdsa'])
def key(request):
    return sk.new_key(request.param)


def _trusted(private, name='lab', revoked_at=None, cert=False, **kw):
    text = sk.certificate_pem(private, **kw) if cert else \
        sk.public_pem(private)
    info = sig.load_key(text)
    return types.SimpleNamespace(name=name, revoked_at=revoked_at,
                                 **info._asdict())


# --- keys -------------------------------------------------------------------

def test_key_id_is_the_spki_digest_for_key_and_certificate(key):
    bare = sig.load_key(sk.public_pem(key))
    cert = sig.load_key(sk.certificate_pem(key), now=NOW.now())
    assert bare.key_id == cert.key_id == sk.key_id(key)
    assert len(bare.key_id) == 64 and bare.key_id == bare.key_id.lower()
    assert bare.public_key == cert.public_key
    assert bare.algorithm == cert.algorithm == (
        sig.ED25519 if 'ED25519' in type(key).__name__.upper()
        else sig.ECDSA_P256)
    assert bare.certificate is None and cert.certificate.startswith(
        '-----BEGIN CERTIFICATE-----')
    assert 'CN=FPGA image signing' in cert.subject
    assert cert.not_before < cert.not_after


@pytest.mark.parametrize('text,match', [
    ('', 'a PEM text is required'),
    ('   ', 'a PEM text is required'),
    ('not a key', 'exactly one PEM block'),
    ('-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n',
     'not a readable PEM public key'),
    ('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
     'not a readable PEM X.509 certificate'),
    ('-----BEGIN RSA PUBLIC KEY-----\nAAAA\n-----END RSA PUBLIC KEY-----\n',
     'RSA PUBLIC KEY block is not supported'),
    ('é' * 10, 'ASCII'),
    ('A' * (sig.MAX_KEY_TEXT + 1), 'at most'),
    (None, 'a PEM text is required'),
])
def test_bad_key_texts_are_refused_with_the_reason(text, match):
    with pytest.raises(exception.InvalidField, match=match) as info:
        sig.load_key(text)
    assert info.value.code == 400
    assert 'public_key' in str(info.value)


@pytest.mark.parametrize('kind,match', [
    ('rsa', 'RSAPublicKey; the keys supported are Ed25519 and ECDSA P-256'),
    ('p384', 'an EC key on secp384r1'),
])
def test_unsupported_key_types(kind, match):
    with pytest.raises(exception.InvalidField, match=match):
        sig.load_key(sk.public_pem(sk.new_key(kind)))


def test_private_key_and_two_blocks_refused(key):
    with pytest.raises(exception.InvalidField, match='this is a private key'):
        sig.load_key(sk.private_pem(key).decode())
    with pytest.raises(exception.InvalidField, match='found 2'):
        sig.load_key(sk.public_pem(key) * 2)


def test_certificates_must_allow_signing_and_be_valid_now(key):
    with pytest.raises(exception.InvalidField, match='digitalSignature'):
        sig.load_key(sk.certificate_pem(key, usage=False))
    with pytest.raises(exception.InvalidField, match='codeSigning'):
        sig.load_key(sk.certificate_pem(key, code_signing=False))
    old = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    expired = sk.certificate_pem(key, not_before=old, days=30)
    with pytest.raises(exception.InvalidField, match='not now'):
        sig.load_key(expired, now=NOW)
    # Without ``now`` (the evaluation of a stored key) it is read.
    assert sig.load_key(expired).not_after == datetime.datetime(2020, 1, 31)


# --- signatures -------------------------------------------------------------

def test_sign_and_verify_over_the_digest(key):
    raw, algorithm, key_id = sig.sign(key, SHA)
    pem = sk.public_pem(key)
    assert key_id == sk.key_id(key)
    assert algorithm in sig.ALGORITHMS
    sig.check_form(raw, algorithm)
    assert sig.verify(pem, raw, SHA)
    assert not sig.verify(pem, raw, OTHER_SHA)
    assert not sig.verify(sk.public_pem(sk.new_key('ed25519')), raw, SHA)
    flipped = bytes([raw[0] ^ 1]) + raw[1:]
    assert not sig.verify(pem, flipped, SHA)
    with pytest.raises(exception.Invalid, match='64 hex digits'):
        sig.verify(pem, raw, 'zz')


def test_ecdsa_is_openssls_sha256_signature_of_the_image():
    """ECDSA over the digest is ECDSA-with-SHA-256 over the image: what
    ``openssl dgst -sha256 -sign`` writes verifies, and the reverse."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    key = sk.new_key('ecdsa')
    whole = key.sign(IMAGE, ec.ECDSA(hashes.SHA256()))
    assert sig.verify(sk.public_pem(key), whole, SHA)
    key.public_key().verify(sig.sign(key, SHA)[0], IMAGE,
                            ec.ECDSA(hashes.SHA256()))


@pytest.mark.parametrize('kind', ['ed25519', 'ecdsa'])
def test_signatures_made_by_openssl_verify(tmp_path, kind):
    """The documented recipes (docs/deployment.md) work as written."""
    openssl = servers.require_binary('openssl', 'openssl')
    key = sk.new_key(kind)
    (tmp_path / 'key.pem').write_bytes(sk.private_pem(key))
    (tmp_path / 'image').write_bytes(IMAGE)
    if kind == 'ed25519':
        (tmp_path / 'digest').write_bytes(bytes.fromhex(SHA))
        argv = [openssl, 'pkeyutl', '-sign', '-rawin', '-inkey', 'key.pem',
                '-in', 'digest', '-out', 'image.sig']
    else:
        argv = [openssl, 'dgst', '-sha256', '-sign', 'key.pem', '-out',
                'image.sig', 'image']
    subprocess.run(argv, cwd=tmp_path, check=True, capture_output=True)
    raw = sig.decode_signature_file((tmp_path / 'image.sig').read_bytes())
    assert sig.verify(sk.public_pem(key), raw, SHA)
    # The key id recipe of docs/api.md.
    (tmp_path / 'key.pub').write_text(sk.public_pem(key))
    der = subprocess.run([openssl, 'pkey', '-pubin', '-in', 'key.pub',
                          '-outform', 'DER'], cwd=tmp_path, check=True,
                         capture_output=True).stdout
    assert hashlib.sha256(der).hexdigest() == sk.key_id(key)


def test_decode_signature():
    assert sig.decode_signature(base64.b64encode(b'x' * 64).decode()) == \
        b'x' * 64
    for text, match in (('not base64!', 'not base64'), ('', 'a signature '
                        'is 1 to'), ('é', 'base64 text'), (None, 'base64'),
                        (base64.b64encode(b'x' * 513).decode(), 'this one '
                         '513')):
        with pytest.raises(exception.InvalidField, match=match):
            sig.decode_signature(text)


def test_signature_files_raw_or_base64(key):
    raw = sig.sign(key, SHA)[0]
    assert sig.decode_signature_file(raw) == raw
    text = base64.b64encode(raw)
    assert sig.decode_signature_file(text) == raw
    assert sig.decode_signature_file(text[:20] + b'\n' + text[20:] +
                                     b'\n') == raw
    with pytest.raises(exception.Invalid, match='1 to 512 bytes'):
        sig.decode_signature_file(b'\0' * 600)
    with pytest.raises(exception.Invalid, match='1 to 512 bytes'):
        sig.decode_signature_file(b'')


def test_check_form():
    ed = sig.sign(sk.new_key('ed25519'), SHA)[0]
    ec_raw = sig.sign(sk.new_key('ecdsa'), SHA)[0]
    sig.check_form(ed, sig.ED25519)
    sig.check_form(ec_raw, sig.ECDSA_P256)
    with pytest.raises(exception.InvalidField, match='64 bytes, this one '
                                                     'is %d' % len(ec_raw)):
        sig.check_form(ec_raw, sig.ED25519)
    for bad in (ed, ec_raw + b'\0', b'\x30\x00'):
        with pytest.raises(exception.InvalidField, match='DER'):
            sig.check_form(bad, sig.ECDSA_P256)


# --- status -----------------------------------------------------------------

def test_evaluate_each_status(key):
    trusted = _trusted(key)
    other = _trusted(sk.new_key('ed25519'), name='other')
    signature = sk.sign(key, IMAGE)

    def status(signature=signature, sha=SHA, keys=(trusted, other),
               key_id=None, signed_at=None):
        return sig.evaluate(signature, sha, list(keys), key_id=key_id,
                            signed_at=signed_at)
    assert status(signature=None) == (sig.UNSIGNED, None, None,
                                      'the bitstream has no signature')
    assert status()[:3] == (sig.VERIFIED, trusted.key_id, 'lab')
    assert status(key_id=trusted.key_id).status == sig.VERIFIED
    # Another image's signature, and the named key of another signer.
    assert status(sha=OTHER_SHA).status == sig.INVALID
    assert 'no key trusted' in status(sha=OTHER_SHA).reason
    wrong = status(key_id=other.key_id)
    assert (wrong.status, wrong.key_id) == (sig.INVALID, other.key_id)
    assert 'does not verify over sha256 %s with key %s' % (
        SHA, other.key_id) in wrong.reason
    # A key nobody trusts (for this project).
    unknown = status(key_id='e' * 64)
    assert (unknown.status, unknown.key_id) == (sig.UNTRUSTED_KEY, 'e' * 64)
    assert status(keys=[other]).status == sig.INVALID
    assert status(keys=[]).status == sig.UNTRUSTED_KEY
    assert status(sha=None).status == sig.INVALID
    revoked = types.SimpleNamespace(**dict(vars(trusted), revoked_at=NOW))
    assert status(keys=[revoked])[:3] == (sig.REVOKED_KEY, trusted.key_id,
                                          'lab')


def test_a_certificate_vouches_only_for_signatures_received_in_its_time(key):
    trusted = _trusted(key, cert=True)
    signature = sk.sign(key, IMAGE)
    inside = trusted.not_before + datetime.timedelta(hours=1)
    after = trusted.not_after + datetime.timedelta(seconds=1)
    assert sig.evaluate(signature, SHA, [trusted],
                        signed_at=inside).status == sig.VERIFIED
    late = sig.evaluate(signature, SHA, [trusted], signed_at=after)
    assert late.status == sig.UNTRUSTED_KEY
    assert 'certificate was valid from' in late.reason


@pytest.mark.parametrize('policy,allowed', [
    ('disabled', sig.STATUSES),
    # A revoked key's images are refused unless signatures are off.
    ('warn', (sig.UNSIGNED, sig.VERIFIED, sig.INVALID, sig.UNTRUSTED_KEY)),
    ('enforce', (sig.VERIFIED,))])
def test_permits(policy, allowed):
    for status in sig.STATUSES:
        assert sig.permits(policy, status) == (status in allowed)


def test_permits_refuses_an_unknown_policy():
    with pytest.raises(exception.Invalid, match='one of disabled, warn, '
                                                'enforce'):
        sig.permits('Enforce', sig.VERIFIED)
