"""Signed bitstreams on the command line (API 2.8,
bitstreams/signatures.MICROVERSION).

``bitstream sign`` signs an image with a local private key (PEM, Ed25519
or ECDSA P-256) and writes the raw detached signature of its SHA-256
digest; it talks to no API. ``bitstream signature set|show|delete``
attach, show and remove a bitstream's signature; ``trusted key
create|list|show|revoke|delete`` are the keys an admin trusts;
``signature policy list|show|set|unset`` the projects' own policies.

A signature file holds the raw signature (as ``bitstream sign`` and
openssl write it) or its base64 text. ``bitstreams/signatures`` (and with it
the cryptography library) is imported only by the commands that use it:
``cyborg-lite --help`` does not pay for it.
"""
import hashlib
import os

from cyborg_lite.cli import base
from cyborg_lite.cli import client as cl_client
from cyborg_lite.cli import transfer
from cyborg_lite.cli import versioned
from cyborg_lite.common import exception

KEY_COLUMNS = ('uuid', 'name', 'key_id', 'algorithm', 'project_id',
               'revoked_at')
POLICIES = ('disabled', 'warn', 'enforce')
# Larger than any PEM key or certificate of ours, or any signature file.
MAX_FILE = 256 * 1024


def _signatures():
    from cyborg_lite.bitstreams import signatures
    return signatures


def read_small(path, what):
    """The bytes of a small file; ClientError naming it otherwise."""
    try:
        with open(path, 'rb') as f:
            data = f.read(MAX_FILE + 1)
    except OSError as exc:
        raise cl_client.ClientError('Cannot read %s %s: %s'
                                    % (what, path, exc.strerror or exc))
    if len(data) > MAX_FILE:
        raise cl_client.ClientError('%s %s is larger than %d bytes: not a '
                                    '%s' % (what, path, MAX_FILE, what))
    return data


def signature_body(path, key_id=None):
    """The body of PUT .../signature from a signature file."""
    sig = _signatures()
    try:
        raw = sig.decode_signature_file(read_small(path, 'signature file'))
    except exception.Invalid as exc:
        raise cl_client.ClientError('%s: %s' % (path, exc))
    body = {'signature': sig.encode_signature(raw)}
    if key_id:
        body['key_id'] = key_id
    return body


def put_signature(api, uuid, path, key_id=None):
    return api.put('/bitstreams/%s/signature' % uuid,
                   signature_body(path, key_id))


class Mixin(versioned.Mixin):
    """Requests at the signed bitstreams microversion (or the one given,
    if newer)."""

    @property
    def min_api_version(self):
        return _signatures().MICROVERSION


def add_key_id(parser):
    parser.add_argument('--signing-key-id', dest='key_id', metavar='<id>',
                        help='Id of the key that made the signature (64 '
                             'hex digits, as `bitstream sign` prints it); '
                             'without it any key trusted for the '
                             'bitstream\'s project that verifies it')


class SignBitstream(base.ShowCommand):
    """Sign an image file with a local private key (no API involved)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('file', metavar='<image>')
        parser.add_argument('--key', metavar='<private-key.pem>',
                            required=True,
                            help='PEM private key, Ed25519 or ECDSA P-256 '
                                 '(e.g. openssl genpkey -algorithm ed25519)')
        parser.add_argument('--output', metavar='<path>',
                            help='Where to write the signature (default: '
                                 '<image>.sig)')
        parser.add_argument('--passphrase-env', metavar='<VAR>',
                            help='Environment variable holding the key\'s '
                                 'passphrase, if it is encrypted')
        return parser

    def _key(self, parsed_args):
        sig = _signatures()
        password = None
        if parsed_args.passphrase_env:
            if parsed_args.passphrase_env not in os.environ:
                raise cl_client.ClientError('%s is not set'
                                            % parsed_args.passphrase_env)
            password = os.environ[parsed_args.passphrase_env].encode()
        try:
            return sig.load_private_key(
                read_small(parsed_args.key, 'key file'), password)
        except exception.Invalid as exc:
            raise cl_client.ClientError('%s: %s' % (parsed_args.key, exc))

    def fetch(self, parsed_args):
        key = self._key(parsed_args)
        digest = hashlib.sha256()
        try:
            with open(parsed_args.file, 'rb') as f:
                for chunk in transfer.read_chunks(f):
                    digest.update(chunk)
        except OSError as exc:
            raise cl_client.ClientError('Cannot read %s: %s' % (
                parsed_args.file, exc.strerror or exc))
        raw, algorithm, key_id = _signatures().sign(key, digest.hexdigest())
        output = parsed_args.output or parsed_args.file + '.sig'
        try:
            with open(output, 'wb') as f:
                f.write(raw)
        except OSError as exc:
            raise cl_client.ClientError('Cannot write %s: %s' % (
                output, exc.strerror or exc))
        return {'file': os.path.abspath(parsed_args.file),
                'sha256': digest.hexdigest(), 'algorithm': algorithm,
                'key_id': key_id, 'signature_file': os.path.abspath(output)}


class SetSignature(Mixin, base.ShowCommand):
    """Attach a detached signature to a bitstream (its image uploaded)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('bitstream', metavar='<uuid>')
        parser.add_argument('--signature', metavar='<file>', required=True,
                            help='The signature: raw bytes or base64')
        add_key_id(parser)
        return parser

    def fetch(self, parsed_args):
        return put_signature(self.api, parsed_args.bitstream,
                             parsed_args.signature, parsed_args.key_id)


class ShowSignature(Mixin, base.ShowCommand):
    """Show a bitstream's signature, its status and why."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('bitstream', metavar='<uuid>')
        return parser

    def fetch(self, parsed_args):
        return self.api.get('/bitstreams/%s/signature'
                            % parsed_args.bitstream)


class DeleteSignature(Mixin, base.Command):
    """Remove a bitstream's signature."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('bitstream', metavar='<uuid>')
        return parser

    def take_action(self, parsed_args):
        self.api.delete('/bitstreams/%s/signature' % parsed_args.bitstream)


# --- trusted keys ---------------------------------------------------------

class CreateTrustedKey(Mixin, base.ShowCommand):
    """Trust a public key or certificate to sign bitstreams (admin)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>',
                            help='Shown as the signer of what it signed')
        parser.add_argument('--public-key', metavar='<file>', required=True,
                            help='PEM public key (openssl pkey -pubout) or '
                                 'X.509 certificate')
        parser.add_argument('--project', metavar='<project-id>',
                            help='Trusted for this project\'s bitstreams '
                                 'only (default: every project)')
        return parser

    def fetch(self, parsed_args):
        data = read_small(parsed_args.public_key, 'public key file')
        try:
            text = data.decode('ascii')
        except UnicodeDecodeError:
            raise cl_client.ClientError('%s is not a PEM text file'
                                        % parsed_args.public_key)
        body = {'name': parsed_args.name, 'public_key': text}
        if parsed_args.project:
            body['project_id'] = parsed_args.project
        return self.api.post('/trusted_keys', body)


class ListTrustedKey(Mixin, base.ListCommand):
    """List the keys trusted to sign bitstreams."""

    columns = KEY_COLUMNS

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--project', metavar='<project-id>',
                            help='Only the keys of this project')
        return parser

    def fetch(self, parsed_args):
        params = {}
        if parsed_args.project:
            params['project_id'] = parsed_args.project
        return self.api.get_all('/trusted_keys', 'trusted_keys', params)


class ShowTrustedKey(Mixin, base.ShowCommand):
    """Show one trusted key."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('key', metavar='<uuid>')
        return parser

    def fetch(self, parsed_args):
        return self.api.get('/trusted_keys/%s' % parsed_args.key)


class RevokeTrustedKey(Mixin, base.ShowCommand):
    """Revoke a trusted key for good: nothing it signed is programmed
    from now on (admin)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('key', metavar='<uuid>')
        parser.add_argument('--reason', metavar='<text>',
                            help='Why, kept with the key')
        return parser

    def fetch(self, parsed_args):
        body = {'reason': parsed_args.reason} if parsed_args.reason else {}
        return self.api.post('/trusted_keys/%s/revoke' % parsed_args.key,
                             body)


class DeleteTrustedKey(Mixin, base.Command):
    """Delete a key registered by mistake (a revoked one is kept)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('key', metavar='<uuid>')
        return parser

    def take_action(self, parsed_args):
        self.api.delete('/trusted_keys/%s' % parsed_args.key)


# --- signature policies ---------------------------------------------------

class ListSignaturePolicy(Mixin, base.ListCommand):
    """The projects' own signature policies (admin); the default is the
    row with project ``*``."""

    columns = ('project_id', 'policy', 'source')

    def fetch(self, parsed_args):
        body = self.api.get('/signature_policies')
        return [{'project_id': '*', 'policy': body['default_policy'],
                 'source': 'configuration'}] + body['signature_policies']


class ShowSignaturePolicy(Mixin, base.ShowCommand):
    """The signature policy that applies to a project."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('project', metavar='<project-id>')
        return parser

    def fetch(self, parsed_args):
        return self.api.get('/signature_policies/%s' % parsed_args.project)


class SetSignaturePolicy(Mixin, base.ShowCommand):
    """Set a project's own signature policy (admin)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('project', metavar='<project-id>')
        parser.add_argument('policy', choices=POLICIES)
        return parser

    def fetch(self, parsed_args):
        return self.api.put('/signature_policies/%s' % parsed_args.project,
                            {'policy': parsed_args.policy})


class UnsetSignaturePolicy(Mixin, base.Command):
    """Drop a project's own signature policy: the default applies."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('project', metavar='<project-id>')
        return parser

    def take_action(self, parsed_args):
        self.api.delete('/signature_policies/%s' % parsed_args.project)
