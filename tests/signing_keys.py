"""Keys, certificates and signatures for the signed-bitstream tests, made
with the cryptography library as an operator's tools would (openssl makes
the same PEM and the same signatures)."""
import base64
import datetime
import hashlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509 import oid

from cyborg_lite.bitstreams import signatures


def new_key(kind='ed25519'):
    if kind == 'ed25519':
        return ed25519.Ed25519PrivateKey.generate()
    if kind == 'ecdsa':
        return ec.generate_private_key(ec.SECP256R1())
    if kind == 'p384':
        return ec.generate_private_key(ec.SECP384R1())
    if kind == 'rsa':
        return rsa.generate_private_key(public_exponent=65537,
                                        key_size=2048)
    raise ValueError(kind)


def public_pem(key):
    return key.public_key().public_bytes(
        serialization.Encoding.PEM,
        serialization.PublicFormat.SubjectPublicKeyInfo).decode('ascii')


def private_pem(key, password=None):
    encryption = (serialization.BestAvailableEncryption(password)
                  if password else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.PKCS8, encryption)


def key_id(key):
    return signatures.key_id_of(key.public_key())


def certificate_pem(key, name='FPGA image signing', days=365,
                    not_before=None, usage=True, code_signing=True):
    """A self-signed certificate of ``key``; ``usage`` False leaves
    digitalSignature out of its key usage, ``code_signing`` False gives it
    serverAuth only as extended key usage."""
    now = datetime.datetime.now(datetime.timezone.utc)
    start = not_before or now - datetime.timedelta(days=1)
    subject = x509.Name([
        x509.NameAttribute(oid.NameOID.ORGANIZATION_NAME, 'Example Lab'),
        x509.NameAttribute(oid.NameOID.COMMON_NAME, name)])
    builder = (x509.CertificateBuilder()
               .subject_name(subject).issuer_name(subject)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(start)
               .not_valid_after(start + datetime.timedelta(days=days))
               .add_extension(x509.KeyUsage(
                   digital_signature=usage, content_commitment=False,
                   key_encipherment=False, data_encipherment=False,
                   key_agreement=False, key_cert_sign=not usage,
                   crl_sign=False, encipher_only=False,
                   decipher_only=False), critical=True)
               .add_extension(x509.ExtendedKeyUsage(
                   [oid.ExtendedKeyUsageOID.CODE_SIGNING if code_signing
                    else oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                   critical=False))
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) \
        else hashes.SHA256()
    cert = builder.sign(key, algorithm)
    return cert.public_bytes(serialization.Encoding.PEM).decode('ascii')


def sign_raw(key, data):
    """The raw detached signature of ``data``'s SHA-256 digest."""
    return signatures.sign(key, hashlib.sha256(data).hexdigest())[0]


def sign(key, data):
    """The same, base64 (what the API takes)."""
    return base64.b64encode(sign_raw(key, data)).decode('ascii')
