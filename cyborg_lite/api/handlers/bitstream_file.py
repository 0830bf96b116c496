"""/v2/bitstreams/{uuid}/file: the bytes of a bitstream (from 2.4).

PUT streams the request body from wsgi.input, a chunk at a time, into the
bitstream's staging directory inside the store ([bitstreams]store_dir),
hashing as it writes. Only a file that is complete, within
[bitstreams]max_size_mb, equal to the declared sha256, and whose header
agrees with the declared metadata is moved into the content-addressed
store; anything else is refused and leaves no file and the bitstream
``queued`` (the upload may be retried). GET streams the stored file back.

The upload holds the staging area's lock (bitstreams/staging) from
before the bitstream becomes ``saving`` until it is ``active`` or
``queued`` again: a second upload meanwhile is a 409. A process killed
mid-upload leaves the bitstream ``saving`` and its staging directory, but
its lock dies with it: the next PUT or DELETE of that bitstream takes the
lock, and so learns the upload is abandoned, and clears it; and every API
process clears all abandoned uploads when it starts
(``recover_abandoned_uploads``).

deploy.py's BodySizeLimit lets this one route through (see
middleware.STREAMED_UPLOADS): its limit is the image limit, enforced here.
"""
import base64
import contextlib
import os

from oslo_log import log
import webob
import webob.exc

from cyborg_lite.api.handlers import bitstreams as metadata
from cyborg_lite.api.policies import bitstreams as policies
from cyborg_lite.api import utils
from cyborg_lite.bitstreams import formats as bitstream_formats
from cyborg_lite.bitstreams import staging as image_staging
from cyborg_lite.bitstreams import store as image_store
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF
from cyborg_lite.db import bitstreams as db

LOG = log.getLogger(__name__)
CONTENT_TYPE = 'application/octet-stream'


def _max_size():
    return CONF.bitstreams.max_size_mb * 1024 * 1024


def _is_chunked(environ):
    return ('chunked' in environ.get('HTTP_TRANSFER_ENCODING', '').lower()
            or environ.get('wsgi.input_terminated', False))


def body_source(req, max_size, chunk_size):
    """The request body as an iterator of chunks, refusing what can be
    refused before a byte is read: a wrong Content-Type (415), a declared
    length over the limit (413), an empty body (400), no length and no
    chunked encoding (411). A chunked body's limit is enforced while it
    is streamed (image_store.copy_hashed)."""
    utils.require_content_type(req, CONTENT_TYPE, what='image')
    stream = req.environ['wsgi.input']
    length = utils.declared_length(req.environ)
    if length is None:
        if not _is_chunked(req.environ):
            raise webob.exc.HTTPLengthRequired(
                detail='Send Content-Length, or the body chunked.')
        return utils.iter_until_eof(stream, chunk_size)
    if length > max_size:
        raise exception.ImageTooLarge(limit=max_size)
    if length == 0:
        raise exception.InvalidField(field='body', reason='the image is '
                                                          'empty')
    return utils.iter_exact(stream, length, chunk_size)


def _checked_fields(path, bitstream):
    """What the header says, checked against the declared metadata
    (BitstreamHeaderMismatch names the contradicted field)."""
    declared = {'format': bitstream.format,
                'region_type': bitstream.region_type,
                'function_id': bitstream.function_id,
                'function_name': bitstream.function_name,
                'vendor': bitstream.vendor}
    checked = bitstream_formats.cross_check(bitstream_formats.parse(path),
                                            declared)
    return {key: checked[key] for key in db.UPLOAD_FIELDS}


def stage_and_store(store, staging, source, bitstream):
    """Stream ``source`` into the directory ``staging``, then into the
    store; (sha256, size, header fields).

    Staged inside the store (same filesystem, so moving it in is one
    atomic rename): the file is parsed and checked before it is at its
    content address, where another bitstream with the same bytes might be
    reading it.
    """
    staged = image_store.ImageStore(staging, store.chunk_size)
    sha256, size = staged.save_stream(source, _max_size(), bitstream.sha256)
    fields = _checked_fields(staged.path(sha256), bitstream)
    final = store.path(sha256)
    os.makedirs(os.path.dirname(final), exist_ok=True)
    os.replace(staged.path(sha256), final)
    return sha256, size, fields


def _back_to_queued(uuid):
    """saving -> queued; False when it was not saving (any more)."""
    # NOTE: never hide the upload's own error behind this one (the row
    # may have been deleted meanwhile).
    with contextlib.suppress(exception.CyborgLiteException):
        db.set_status(uuid, ('saving',), 'queued')
        return True
    return False


def _record(store, uuid, sha256, size, fields):
    try:
        return db.set_uploaded(uuid, sha256, size, **fields)
    except Exception:
        # Deleted or changed while uploading: keep no orphan bytes.
        if not db.sha256_in_use(sha256, except_uuid=uuid):
            store.delete(sha256)
        raise


def upload_image(req, uuid):
    """204 once the image is stored and the bitstream active."""
    metadata.require_version(req)
    utils.authorize(req, policies.UPLOAD)
    bitstream = metadata.find_visible(req, uuid)
    utils.authorize(req, policies.UPLOAD,
                    {'project_id': bitstream.project_id})
    store = image_store.ImageStore()
    source = body_source(req, _max_size(), store.chunk_size)
    claim = metadata.claim_staging(uuid)
    try:
        if bitstream.status == 'saving':
            LOG.warning('Bitstream %s: taking over an upload whose process '
                        'died', uuid)
        db.begin_upload(uuid)
        try:
            sha256, size, fields = stage_and_store(
                store, claim.fresh_dir(), source, bitstream)
        except BaseException:
            _back_to_queued(uuid)
            raise
        _record(store, uuid, sha256, size, fields)
    finally:
        claim.release()
    LOG.info('Bitstream %s: stored %d bytes, sha256 %s', uuid, size, sha256)
    return utils.response(status=204)


def recover_abandoned_uploads(store_dir=None):
    """Uploads whose process died: their bitstream back to ``queued``,
    their staging area removed; live ones (lock held) are left alone.
    Any number of processes may run this at once. Returns the uuids of
    the bitstreams it moved back to ``queued``."""
    directory = store_dir or CONF.bitstreams.store_dir
    saving = set(db.uuids_saving())
    recovered = []
    for key in sorted(saving | image_staging.leftover_keys(directory)):
        claim = image_staging.claim(directory, key)
        if claim is None:
            continue
        try:
            if key in saving and _back_to_queued(key):
                recovered.append(key)
        finally:
            claim.release()
    if recovered:
        LOG.warning('Uploads of bitstreams %s died with their process: '
                    'queued again, upload them anew', ', '.join(recovered))
    return recovered


class FileChunks:
    """A WSGI app_iter over an open file: read a chunk at a time, closed
    by the server when the response ends (or the client goes away)."""

    def __init__(self, fileobj, chunk_size):
        self.fileobj = fileobj
        self.chunk_size = chunk_size

    def __iter__(self):
        return image_store.iter_chunks(self.fileobj, self.chunk_size)

    def close(self):
        self.fileobj.close()


def download_image(req, uuid):
    """The stored bytes, with their sha256 as ETag and Digest."""
    metadata.require_version(req)
    utils.authorize(req, policies.DOWNLOAD)
    bitstream = metadata.find_visible(req, uuid)
    if bitstream.status != 'active':
        raise exception.Conflict(
            reason='bitstream %s is %s: it has no image yet (PUT it to '
                   '/v2/bitstreams/%s/file)' % (uuid, bitstream.status,
                                                uuid))
    store = image_store.ImageStore()
    fileobj = store.open_for_read(bitstream.sha256)
    resp = webob.Response(status=200, charset=None,
                          content_type=CONTENT_TYPE,
                          app_iter=FileChunks(fileobj, store.chunk_size))
    resp.content_length = os.fstat(fileobj.fileno()).st_size
    resp.etag = bitstream.sha256
    # RFC 3230 instance digest: what clients verify a download against.
    resp.headers['Digest'] = 'sha-256=' + base64.b64encode(
        bytes.fromhex(bitstream.sha256)).decode('ascii')
    return resp
