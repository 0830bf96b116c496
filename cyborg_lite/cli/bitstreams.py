"""``bitstream create|list|show|download|delete``: FPGA images (API 2.4).

``create`` is Glance-like in two requests: the metadata (the bitstream is
``queued``), then the file, streamed (``active``). The file is hashed as it
is sent and compared with the sha256 the server stored; with
``--signature`` a third request attaches the image's detached signature
(cli/signatures.py). A failed upload or signature deletes the bitstream,
so a failed create leaves nothing behind.

``create``, ``list`` and ``show`` ask for the signed bitstreams
microversion (2.8: ``signature_status``, ``signer``, ``key_id``,
``signed_at``) and, from an API without it (406), show the rest at 2.4.
"""
import contextlib
import os
import sys

from cyborg_lite.cli import client as cl_client
from cyborg_lite.cli import progress
from cyborg_lite.cli import signatures
from cyborg_lite.cli import transfer
from cyborg_lite.cli import versioned

OCTETS = 'application/octet-stream'
COLUMNS = ('uuid', 'name', 'version', 'vendor', 'format', 'status',
           'visibility', 'size', 'signature_status')
BITSTREAMS_API_VERSION = '2.4'
# Metadata options of create: (option, API field, argparse type). Not
# --version nor --format: cliff's global --version takes it anywhere on
# the line, and -f/--format is the output format.
METADATA = (('--bitstream-version', 'version', str),
            ('--vendor', 'vendor', str),
            ('--region-type', 'region_type', str),
            ('--function-id', 'function_id', str),
            ('--function-name', 'function_name', str),
            ('--local-memory-mb', 'local_memory_mb', int),
            ('--sha256', 'sha256', str))
# Filters of list: (option, API query parameter).
FILTERS = (('--name', 'name'), ('--vendor', 'vendor'),
           ('--bitstream-format', 'format'), ('--region-type', 'region_type'),
           ('--function-id', 'function_id'), ('--visibility', 'visibility'),
           ('--status', 'status'))


def bitstream_path(uuid, suffix=''):
    return '/bitstreams/%s%s' % (uuid, suffix)


def file_size(path):
    """The size of a regular, non-empty file; ClientError otherwise."""
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        raise cl_client.ClientError('Cannot read %s: %s'
                                    % (path, exc.strerror))
    if size == 0:
        raise cl_client.ClientError('%s is empty' % path)
    return size


def metadata_body(parsed_args):
    body = {'name': parsed_args.name, 'format': parsed_args.format}
    for _option, field, _type in METADATA:
        value = getattr(parsed_args, field)
        if value is not None:
            body[field] = value
    if parsed_args.public:
        body['visibility'] = 'public'
    return body


class _WithSignatures(signatures.Mixin):
    """At the signed bitstreams microversion, or at 2.4 when the API
    refuses it with 406."""

    def fetch_any_version(self, call):
        try:
            return call(self.api)
        except cl_client.ApiError as exc:
            if exc.status != 406:
                raise
            return call(versioned.VersionedApi(
                self.app.client_manager.cyborg_lite, BITSTREAMS_API_VERSION))


class CreateBitstream(_WithSignatures, versioned.ShowCommand):
    """Create a bitstream and upload its image file (and signature)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>')
        parser.add_argument('--file', metavar='<path>', required=True,
                            help='The image (GBS, xclbin, ...)')
        parser.add_argument('--bitstream-format', dest='format',
                            metavar='<format>', required=True,
                            help='Image format, e.g. gbs or xclbin')
        for option, field, type_ in METADATA:
            parser.add_argument(option, dest=field, type=type_,
                                metavar='<%s>' % option[2:])
        parser.add_argument('--public', action='store_true',
                            help='Visible to every project (admin)')
        parser.add_argument('--signature', metavar='<file>',
                            help='Detached signature of the image\'s '
                                 'SHA-256 digest (`bitstream sign`, or '
                                 'openssl; raw bytes or base64)')
        signatures.add_key_id(parser)
        return parser

    @staticmethod
    def _upload(api, uuid, path, size):
        with open(path, 'rb') as fileobj, \
                progress.Progress(total=size, label='upload') as bar:
            body = transfer.FileBody(fileobj, size, bar)
            api.request('PUT', bitstream_path(uuid, '/file'), data=body,
                        headers={'Content-Type': OCTETS})
        return body.sha256.hexdigest()

    def _checked(self, uuid, sha256):
        stored = self.fetch_any_version(
            lambda api: api.get(bitstream_path(uuid)))
        if stored.get('sha256') != sha256:
            raise cl_client.ClientError(
                'The server stored sha256 %s, the file has %s'
                % (stored.get('sha256'), sha256))
        return stored

    def _sign(self, uuid, parsed_args):
        signed = signatures.put_signature(self.api, uuid,
                                          parsed_args.signature,
                                          parsed_args.key_id)
        if signed['signature_status'] != 'verified':
            self.app.stderr.write(
                'Warning: the signature of bitstream %s is %s: %s\n' % (
                    uuid, signed['signature_status'], signed['reason']))

    def fetch(self, parsed_args):
        size = file_size(parsed_args.file)
        if parsed_args.signature:
            # Read and checked before anything is created.
            signatures.signature_body(parsed_args.signature)
        # NOTE: the metadata and the image at 2.4, which every
        # cyborg_lite serves; only the signature needs more.
        api = versioned.VersionedApi(self.app.client_manager.cyborg_lite,
                                     BITSTREAMS_API_VERSION)
        uuid = api.post('/bitstreams', metadata_body(parsed_args))['uuid']
        try:
            sha256 = self._upload(api, uuid, parsed_args.file, size)
            if parsed_args.signature:
                self._sign(uuid, parsed_args)
            return self._checked(uuid, sha256)
        except (cl_client.ClientError, OSError) as exc:
            with contextlib.suppress(cl_client.ClientError):
                api.delete(bitstream_path(uuid))
            raise cl_client.ClientError(
                'Upload of bitstream %s failed, bitstream deleted: %s'
                % (uuid, exc))


class ListBitstream(_WithSignatures, versioned.ListCommand):
    """List bitstreams."""

    columns = COLUMNS

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        for option, field in FILTERS:
            parser.add_argument(option, dest=field, metavar='<%s>'
                                % option[2:], help='Only bitstreams with '
                                                   'this ' + option[2:])
        return parser

    def fetch(self, parsed_args):
        params = {f: getattr(parsed_args, f) for _option, f in FILTERS
                  if getattr(parsed_args, f) is not None}
        return self.fetch_any_version(
            lambda api: api.get_all('/bitstreams', 'bitstreams', params))


class ShowBitstream(_WithSignatures, versioned.ShowCommand):
    """Show one bitstream."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('bitstream', metavar='<uuid>')
        return parser

    def fetch(self, parsed_args):
        return self.fetch_any_version(
            lambda api: api.get(bitstream_path(parsed_args.bitstream)))


def _etag(response):
    return (response.headers.get('ETag') or '').strip('"') or None


def _length(response):
    text = response.headers.get('Content-Length')
    return int(text) if text and text.isdigit() else None


class DownloadBitstream(versioned.Command):
    """Download a bitstream's image, checked against its sha256."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('bitstream', metavar='<uuid>')
        parser.add_argument('--file', metavar='<path>', required=True,
                            help='Where to write it (replaced only once '
                                 'complete and checked); - for stdout')
        return parser

    def _save(self, response, path):
        chunks = response.iter_content(transfer.CHUNK_SIZE)
        size = _length(response)
        with progress.Progress(total=size, label='download') as bar:
            if path == '-':
                digest, got = transfer.copy_hashed(
                    chunks, sys.stdout.buffer, bar)
                transfer.check_download(digest, got, _etag(response), size)
            else:
                transfer.save_stream(chunks, path, bar, _etag(response),
                                     size)

    def take_action(self, parsed_args):
        import requests  # only a download needs it: keeps --help quick
        response = self.api.request(
            'GET', bitstream_path(parsed_args.bitstream, '/file'),
            stream=True, headers={'Accept': OCTETS})
        try:
            self._save(response, parsed_args.file)
        except requests.RequestException as exc:
            raise cl_client.ClientError('Download of bitstream %s failed: '
                                        '%s' % (parsed_args.bitstream, exc))
        except OSError as exc:
            raise cl_client.ClientError('Cannot write %s: %s' % (
                parsed_args.file, exc.strerror or exc))
        finally:
            response.close()


class DeleteBitstream(versioned.Command):
    """Delete bitstreams."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('bitstreams', metavar='<uuid>', nargs='+')
        return parser

    def take_action(self, parsed_args):
        failures = []
        for uuid in parsed_args.bitstreams:
            try:
                self.api.delete(bitstream_path(uuid))
            except cl_client.ClientError as exc:
                failures.append('%s: %s' % (uuid, exc))
        if failures:
            raise cl_client.ClientError(
                'Failed to delete %d of %d bitstreams: %s' % (
                    len(failures), len(parsed_args.bitstreams),
                    '; '.join(failures)))
