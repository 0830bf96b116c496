"""``cyborg-lite bitstream sign``, ``bitstream create --signature``,
``bitstream signature``, ``trusted key`` and ``signature policy`` against
the real API (the real entry point, in process): what they show, and
every failure as one line (a failed create leaves no bitstream behind)."""
import base64

import pytest

from cyborg_lite.db import bitstreams as bitstreams_db
from tests.functional.cli import bitstream_cli as b
from tests.functional.cli import conftest as c
from tests import signing_keys as sk


@pytest.fixture
def files(tmp_path):
    """An image, an Ed25519 key pair on disk (the private key encrypted)."""
    key = sk.new_key('ed25519')
    (tmp_path / 'signer.pem').write_bytes(sk.private_pem(key, b'secret'))
    (tmp_path / 'signer.pub').write_text(sk.public_pem(key))
    return {'image': b.write_image(tmp_path), 'key': key,
            'private': str(tmp_path / 'signer.pem'),
            'public': str(tmp_path / 'signer.pub'), 'dir': tmp_path}


def _sign(files, *extra):
    """``bitstream sign`` with the key's passphrase in the environment
    (it talks to no API)."""
    return c.run('cyborg-lite', ('bitstream', 'sign', str(files['image']),
                                 '--key', files['private'],
                                 '--passphrase-env', 'TEST_PASSPHRASE',
                                 '-f', 'json') + extra,
                 c.clean_env(TEST_PASSPHRASE='secret'))


def test_sign_trust_create_and_revoke(cli, files):
    signed = _sign(files).json
    assert (signed['algorithm'], signed['key_id']) == (
        'ed25519', sk.key_id(files['key']))
    raw = open(signed['signature_file'], 'rb').read()
    assert raw == sk.sign_raw(files['key'], files['image'].read_bytes())
    key = cli('trusted', 'key', 'create', 'lab', '--public-key',
              files['public'], '-f', 'json').json
    assert (key['key_id'], key['project_id']) == (signed['key_id'], None)
    made = b.create(cli, files['image'], 'signed', '--signature',
                    signed['signature_file'])
    assert made.stderr == ''
    assert (made.json['signature_status'], made.json['signer'],
            made.json['key_id']) == ('verified', 'lab', signed['key_id'])
    rows = cli('bitstream', 'list', '-f', 'json').json
    assert [r['signature_status'] for r in rows] == ['verified']
    assert cli('trusted', 'key', 'revoke', key['uuid'], '--reason',
               'leaked', '-f', 'json').json['revocation_reason'] == 'leaked'
    shown = cli('bitstream', 'signature', 'show', made.json['uuid'],
                '-f', 'json').json
    assert shown['signature_status'] == 'revoked_key'
    assert 'was revoked' in shown['reason']
    b.one_line_error(cli('trusted', 'key', 'delete', key['uuid']),
                     'record of the revocation', 'HTTP 409')


def test_a_base64_signature_file_and_a_later_signature(cli, files):
    cli('trusted', 'key', 'create', 'lab', '--public-key', files['public'])
    made = b.create(cli, files['image']).json
    assert made['signature_status'] == 'unsigned'
    path = files['dir'] / 'sig.b64'
    path.write_text(sk.sign(files['key'], files['image'].read_bytes()))
    shown = cli('bitstream', 'signature', 'set', made['uuid'],
                '--signature', str(path), '--signing-key-id',
                sk.key_id(files['key']), '-f', 'json').json
    assert shown['signature_status'] == 'verified'
    assert cli('bitstream', 'signature', 'delete', made['uuid']).rc == 0
    assert cli('bitstream', 'show', made['uuid'], '-f', 'json').json[
        'signature_status'] == 'unsigned'


def test_a_signature_nobody_trusts_is_stored_with_a_warning(cli, files):
    sig = _sign(files).json
    made = b.create(cli, files['image'], 'nlb', '--signature',
                    sig['signature_file'], '--signing-key-id', sig['key_id'])
    assert made.json['signature_status'] == 'untrusted_key'
    assert made.stderr.startswith('Warning: the signature of bitstream ')
    assert 'untrusted_key' in made.stderr


def test_failures_are_one_line_and_leave_nothing(cli, files, tmp_path):
    # An unreadable signature file: refused before anything is created.
    b.one_line_error(b.create(cli, files['image'], 'nlb', '--signature',
                              str(tmp_path / 'missing.sig')),
                     'Cannot read signature file')
    empty = tmp_path / 'empty.sig'
    empty.write_bytes(b'')
    b.one_line_error(b.create(cli, files['image'], 'nlb', '--signature',
                              str(empty)), '1 to 512 bytes')
    # One the API refuses (the wrong form for the named ECDSA key): the
    # bitstream created for it is deleted.
    ecdsa = sk.new_key('ecdsa')
    (tmp_path / 'ec.pub').write_text(sk.public_pem(ecdsa))
    cli('trusted', 'key', 'create', 'ec', '--public-key',
        str(tmp_path / 'ec.pub'))
    ed = tmp_path / 'ed.sig'
    ed.write_bytes(base64.b64encode(b'x' * 64))
    b.one_line_error(b.create(cli, files['image'], 'nlb', '--signature',
                              str(ed), '--signing-key-id',
                              sk.key_id(ecdsa)),
                     'bitstream deleted', 'DER ECDSA-Sig-Value')
    assert bitstreams_db.list_bitstreams() == []
    # Keys the CLI cannot sign with, and files that are not keys.
    (tmp_path / 'rsa.pem').write_bytes(sk.private_pem(sk.new_key('rsa')))
    b.one_line_error(cli('bitstream', 'sign', str(files['image']), '--key',
                         str(tmp_path / 'rsa.pem')),
                     'supported are Ed25519 and ECDSA P-256')
    b.one_line_error(cli('bitstream', 'sign', str(files['image']), '--key',
                         files['private']), 'encrypted')
    b.one_line_error(cli('trusted', 'key', 'create', 'oops', '--public-key',
                         files['private']),
                     'this is a private key', 'HTTP 400')


def test_policies(cli):
    rows = cli('signature', 'policy', 'list', '-f', 'json').json
    assert rows == [{'project_id': '*', 'policy': 'warn',
                     'source': 'configuration'}]
    assert cli('signature', 'policy', 'set', 'project-a', 'enforce',
               '-f', 'json').json['source'] == 'project'
    shown = cli('signature', 'policy', 'show', 'project-a', '-f',
                'json').json
    assert (shown['policy'], shown['source']) == ('enforce', 'project')
    assert cli('signature', 'policy', 'unset', 'project-a').rc == 0
    b.one_line_error(cli('signature', 'policy', 'unset', 'project-a'),
                     'HTTP 404')
    assert cli('signature', 'policy', 'set', 'p', 'strict').rc == 2


def test_openstack_accelerator_trusted_key(openstack, files):
    made = openstack('accelerator', 'trusted', 'key', 'create', 'lab',
                     '--public-key', files['public'], '-f', 'json')
    assert made.json['key_id'] == sk.key_id(files['key'])
    rows = openstack('accelerator', 'trusted', 'key', 'list', '-f',
                     'json').json
    assert [r['uuid'] for r in rows] == [made.json['uuid']]
