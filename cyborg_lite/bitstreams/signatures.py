"""Detached signatures of bitstream images: pure code, no database, no RPC.

What is signed is the image's SHA-256 digest, so a signature is checked
without reading the image again (the API and the agent hash every image
while they stream it anyway):

- ``ed25519``: Ed25519 (RFC 8032) over the 32 bytes of the digest; the
  signature is 64 bytes.
- ``ecdsa-p256``: ECDSA on P-256 with SHA-256, the hash being the
  image's digest (what ``openssl dgst -sha256 -sign key.pem IMAGE``
  writes): a DER ECDSA-Sig-Value.

A trusted key is given as a PEM public key (SubjectPublicKeyInfo) or as a
PEM X.509 certificate that carries one (the certificate itself is the
trust anchor: it is pinned, no chain is followed). Its id is the
lowercase hex SHA-256 of its SubjectPublicKeyInfo in DER: the same for a
key and for every certificate of it.

On the wire a signature is base64 (RFC 4648, standard alphabet, padded)
of those raw bytes; a signature *file* (the CLI's ``--signature``) holds
either the raw bytes or that base64 text (``decode_signature_file``).

``evaluate`` decides a bitstream's ``signature_status`` from its
signature and the keys trusted for its project, ``permits`` what a
``signature_policy`` does with that status. The API, the conductor and
the agent all use this module; cryptography does the mathematics.
"""
import base64
import binascii
import collections
import datetime
import functools
import hashlib
import re

from cryptography import exceptions as crypto_exc
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.hazmat.primitives.asymmetric import utils as asym_utils
from cryptography.x509 import oid

from cyborg_lite.common import enums
from cyborg_lite.common import exception

# The accelerator API microversion that brings signed bitstreams (one
# entry of api/microversion.VERSIONS); the CLI, which may not import the
# API, asks for it too.
MICROVERSION = '2.8'

ALGORITHMS = enums.SIGNATURE_ALGORITHMS
ED25519, ECDSA_P256 = ALGORITHMS

# A bitstream's signature_status.
UNSIGNED = 'unsigned'
VERIFIED = 'verified'
INVALID = 'invalid'
UNTRUSTED_KEY = 'untrusted_key'
REVOKED_KEY = 'revoked_key'
STATUSES = (UNSIGNED, VERIFIED, INVALID, UNTRUSTED_KEY, REVOKED_KEY)

# [bitstreams]signature_policy and its per-project overrides.
POLICIES = enums.SIGNATURE_POLICIES
DISABLED, WARN, ENFORCE = POLICIES

# An Ed25519 signature is 64 bytes, a DER P-256 one at most 72: anything
# much longer is not a signature of ours.
MAX_SIGNATURE_BYTES = 512
# A PEM certificate with a few extensions is 1-3 KiB.
MAX_KEY_TEXT = 64 * 1024
KEY_ID_PATTERN = '^[0-9a-f]{64}$'
_PEM_LABEL = re.compile(r'-----BEGIN ([A-Z0-9 ]+)-----')

# A key as the API registers it: ``public_key`` is its canonical PEM
# (SubjectPublicKeyInfo); certificate, subject and validity only when it
# came in a certificate.
KeyInfo = collections.namedtuple('KeyInfo', [
    'key_id', 'algorithm', 'public_key', 'certificate', 'subject',
    'not_before', 'not_after'])
# What evaluate decides: the status, the key that signed (its id and
# name, when known) and why, in words, for anything but verified.
Verdict = collections.namedtuple('Verdict', [
    'status', 'key_id', 'signer', 'reason'])


# --- keys -------------------------------------------------------------------

def _algorithm_of(key, field):
    if isinstance(key, ed25519.Ed25519PublicKey):
        return ED25519
    if isinstance(key, ec.EllipticCurvePublicKey) and \
            isinstance(key.curve, ec.SECP256R1):
        return ECDSA_P256
    what = ('an EC key on %s' % key.curve.name
            if isinstance(key, ec.EllipticCurvePublicKey)
            else 'a %s' % type(key).__name__.lstrip('_'))
    raise exception.InvalidField(
        field=field, reason='%s; the keys supported are Ed25519 and ECDSA '
                            'P-256' % what)


def spki_der(key):
    return key.public_bytes(serialization.Encoding.DER,
                            serialization.PublicFormat.SubjectPublicKeyInfo)


def key_id_of(key):
    """The id of a public key object: sha256 of its SPKI DER, hex."""
    return hashlib.sha256(spki_der(key)).hexdigest()


def _naive_utc(value):
    return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)


def _check_usage(cert, field):
    """A certificate that says what its key is for must allow signing
    code (RFC 5280 key usage and extended key usage)."""
    try:
        usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    except x509.ExtensionNotFound:
        usage = None
    if usage is not None and not usage.digital_signature:
        raise exception.InvalidField(
            field=field, reason='the certificate\'s key usage does not '
                                'include digitalSignature')
    try:
        extended = cert.extensions.get_extension_for_class(
            x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        return
    if not {oid.ExtendedKeyUsageOID.CODE_SIGNING,
            oid.ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE} & set(extended):
        raise exception.InvalidField(
            field=field, reason='the certificate\'s extended key usage does '
                                'not include codeSigning')


def _from_certificate(data, field, now):
    try:
        cert = x509.load_pem_x509_certificate(data)
        key = cert.public_key()
        not_before = _naive_utc(cert.not_valid_before_utc)
        not_after = _naive_utc(cert.not_valid_after_utc)
    except ValueError as exc:
        raise exception.InvalidField(field=field, reason='not a readable PEM '
                                     'X.509 certificate (%s)' % exc)
    algorithm = _algorithm_of(key, field)
    _check_usage(cert, field)
    if now is not None and not not_before <= now <= not_after:
        raise exception.InvalidField(
            field=field, reason='the certificate is valid from %s to %s '
                                '(UTC), not now' % (not_before, not_after))
    try:
        subject = cert.subject.rfc4514_string()
    except ValueError:
        subject = None
    return KeyInfo(key_id_of(key), algorithm, _pem(key),
                   cert.public_bytes(serialization.Encoding.PEM).decode(
                       'ascii'), subject, not_before, not_after)


def _pem(key):
    return key.public_bytes(
        serialization.Encoding.PEM,
        serialization.PublicFormat.SubjectPublicKeyInfo).decode('ascii')


def load_key(text, field='public_key', now=None):
    """KeyInfo of a PEM public key or certificate; InvalidField (naming
    ``field``) for anything else: private keys, other key types, bad PEM,
    a certificate not valid at ``now`` (naive UTC; None: not checked)."""
    if not isinstance(text, str) or not text.strip():
        raise exception.InvalidField(field=field, reason='a PEM text is '
                                                         'required')
    if len(text) > MAX_KEY_TEXT or not text.isascii():
        raise exception.InvalidField(field=field, reason='not a PEM text of '
                                     'at most %d ASCII characters'
                                     % MAX_KEY_TEXT)
    labels = _PEM_LABEL.findall(text)
    if len(labels) != 1:
        raise exception.InvalidField(
            field=field, reason='give exactly one PEM block (BEGIN PUBLIC '
                                'KEY or BEGIN CERTIFICATE), found %d'
                                % len(labels))
    label, data = labels[0], text.strip().encode('ascii')
    if 'PRIVATE' in label:
        raise exception.InvalidField(
            field=field, reason='this is a private key: register its public '
                                'key (openssl pkey -pubout) and keep the '
                                'private one secret')
    if label == 'CERTIFICATE':
        return _from_certificate(data, field, now)
    if label != 'PUBLIC KEY':
        raise exception.InvalidField(
            field=field, reason='a %s block is not supported; give a BEGIN '
                                'PUBLIC KEY or BEGIN CERTIFICATE one' % label)
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, crypto_exc.UnsupportedAlgorithm) as exc:
        raise exception.InvalidField(field=field, reason='not a readable '
                                     'PEM public key (%s)' % exc)
    return KeyInfo(key_id_of(key), _algorithm_of(key, field), _pem(key),
                   None, None, None, None)


@functools.lru_cache(maxsize=256)
def _public_key(pem):
    return serialization.load_pem_public_key(pem.encode('ascii'))


# --- signatures -------------------------------------------------------------

def decode_signature(text, field='signature'):
    """The raw bytes of a base64 signature; InvalidField otherwise."""
    if not isinstance(text, str) or not text.isascii():
        raise exception.InvalidField(field=field, reason='must be base64 '
                                                         'text')
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise exception.InvalidField(field=field, reason='not base64 (%s)'
                                     % exc)
    if not 1 <= len(raw) <= MAX_SIGNATURE_BYTES:
        raise exception.InvalidField(
            field=field, reason='a signature is 1 to %d bytes, this one %d'
                                % (MAX_SIGNATURE_BYTES, len(raw)))
    return raw


def encode_signature(raw):
    return base64.b64encode(raw).decode('ascii')


def decode_signature_file(data):
    """A signature file's raw signature: the file is the raw bytes (as
    openssl writes them) or their base64 text (whitespace ignored)."""
    text = data.strip()
    if text.isascii() and text:
        try:
            raw = base64.b64decode(b''.join(text.split()), validate=True)
        except binascii.Error:
            raw = None
        if raw:
            return raw
    if not 1 <= len(data) <= MAX_SIGNATURE_BYTES:
        raise exception.Invalid(reason='a signature file holds 1 to %d '
                                       'bytes (or their base64), this one %d'
                                % (MAX_SIGNATURE_BYTES, len(data)))
    return data


def check_form(raw, algorithm, field='signature'):
    """Refuse a signature that cannot be one of ``algorithm``'s, before
    any verification: a clear error instead of a plain "invalid"."""
    if algorithm == ED25519 and len(raw) != 64:
        raise exception.InvalidField(
            field=field, reason='an Ed25519 signature is 64 bytes, this one '
                                'is %d' % len(raw))
    if algorithm == ECDSA_P256:
        try:
            r, s = asym_utils.decode_dss_signature(raw)
            strict = asym_utils.encode_dss_signature(r, s) == raw
        except ValueError:
            strict = False
        if not strict:
            raise exception.InvalidField(
                field=field, reason='an ECDSA signature is a DER '
                                    'ECDSA-Sig-Value (SEQUENCE of r and s); '
                                    'this is not one')


def _digest_bytes(sha256_hex):
    try:
        digest = bytes.fromhex(sha256_hex)
    except (TypeError, ValueError):
        digest = b''
    if len(digest) != 32:
        raise exception.Invalid(reason='a SHA-256 digest is 64 hex digits, '
                                       'got %r' % (sha256_hex,))
    return digest


@functools.lru_cache(maxsize=4096)
def verify(public_key_pem, raw, sha256_hex):
    """Whether ``raw`` is a signature of the digest ``sha256_hex`` by the
    key ``public_key_pem`` (the same answer every time: cached)."""
    digest = _digest_bytes(sha256_hex)
    key = _public_key(public_key_pem)
    try:
        if isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(raw, digest)
        else:
            key.verify(raw, digest,
                       ec.ECDSA(asym_utils.Prehashed(hashes.SHA256())))
    except crypto_exc.InvalidSignature:
        return False
    return True


# --- signing (the CLI's ``bitstream sign``) ---------------------------------

def load_private_key(data, password=None):
    """A private key object from PEM bytes; Invalid for anything else."""
    try:
        key = serialization.load_pem_private_key(data, password=password)
    except TypeError as exc:
        # A passphrase missing, or given for an unencrypted key.
        raise exception.Invalid(reason=str(exc))
    except (ValueError, crypto_exc.UnsupportedAlgorithm) as exc:
        raise exception.Invalid(reason='not a readable PEM private key '
                                       '(%s)' % exc)
    _algorithm_of(key.public_key(), 'key')
    return key


def sign(private_key, sha256_hex):
    """(raw signature, algorithm, key id) of the digest ``sha256_hex``."""
    digest = _digest_bytes(sha256_hex)
    public = private_key.public_key()
    algorithm = _algorithm_of(public, 'key')
    if algorithm == ED25519:
        raw = private_key.sign(digest)
    else:
        raw = private_key.sign(
            digest, ec.ECDSA(asym_utils.Prehashed(hashes.SHA256())))
    return raw, algorithm, key_id_of(public)


# --- status and policy ------------------------------------------------------

def _valid_when(key, when):
    """Why a certificate's key cannot vouch for a signature received at
    ``when``; None when it can (a bare key always can)."""
    not_before = getattr(key, 'not_before', None)
    not_after = getattr(key, 'not_after', None)
    if when is None or (not_before is None and not_after is None):
        return None
    if (not_before and when < not_before) or (not_after and when > not_after):
        return ('its certificate was valid from %s to %s (UTC), and the '
                'signature came at %s' % (not_before, not_after, when))
    return None


def evaluate(signature, sha256, keys, key_id=None, signed_at=None):
    """The Verdict of a bitstream's signature.

    ``signature``: its base64 (None: unsigned); ``sha256``: the stored
    image's digest; ``keys``: the keys trusted for the bitstream's project
    (global and that project's, revoked ones too), each with ``key_id``,
    ``name``, ``public_key`` (PEM), ``revoked_at`` and, for a
    certificate, ``not_before``/``not_after``; ``key_id``: the key the
    uploader named (None: any of ``keys`` that verifies); ``signed_at``:
    when the signature was received (a certificate must be valid then).
    """
    if signature is None:
        return Verdict(UNSIGNED, None, None, 'the bitstream has no signature')
    if sha256 is None:
        return Verdict(INVALID, key_id, None, 'the bitstream has no stored '
                       'image to verify the signature over')
    candidates = [k for k in keys if key_id is None or k.key_id == key_id]
    if not candidates:
        return Verdict(UNTRUSTED_KEY, key_id, None,
                       'key %s is not trusted for the bitstream\'s project'
                       % key_id if key_id else 'no key is trusted for the '
                       'bitstream\'s project')
    raw = decode_signature(signature)
    for key in candidates:
        if verify(key.public_key, raw, sha256):
            return _verdict_of(key, signed_at)
    return Verdict(INVALID, key_id, None, (
        'the signature does not verify over sha256 %s with key %s'
        % (sha256, key_id)) if key_id else (
        'no key trusted for the bitstream\'s project verifies the signature '
        'over sha256 %s (name the key to tell an unknown key from a bad '
        'signature)' % sha256))


def _verdict_of(key, signed_at):
    if key.revoked_at is not None:
        return Verdict(REVOKED_KEY, key.key_id, key.name,
                       'key %s (%s) was revoked at %s' % (
                           key.key_id, key.name, key.revoked_at))
    outside = _valid_when(key, signed_at)
    if outside:
        return Verdict(UNTRUSTED_KEY, key.key_id, key.name,
                       'key %s (%s): %s' % (key.key_id, key.name, outside))
    return Verdict(VERIFIED, key.key_id, key.name, None)


def permits(policy, status):
    """Whether ``policy`` lets an image with ``status`` be programmed.

    ``enforce``: only a verified one. ``warn``: any but one signed with a
    revoked key (a revocation is an admin's explicit act: what the key
    signed is unprogrammable from then on, whatever the policy); the
    caller logs the rest. ``disabled``: any, signatures are not looked at.
    """
    if policy not in POLICIES:
        raise exception.Invalid(reason='signature policy must be one of %s, '
                                'got %r' % (', '.join(POLICIES), policy))
    if policy == ENFORCE:
        return status == VERIFIED
    return policy == DISABLED or status != REVOKED_KEY
