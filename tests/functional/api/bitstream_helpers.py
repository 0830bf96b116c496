"""Helpers of the /v2/bitstreams and /v2/programs tests."""
import hashlib
import os

import webob

from tests.unit.bitstreams import builders

V24 = {'OpenStack-API-Version': 'accelerator 2.4'}
OCTETS = 'application/octet-stream'
REGION_TYPE = builders.hex32(builders.INTERFACE_UUID)
FUNCTION_ID = builders.hex32(builders.AFU_UUID)


def h(*caller, **extra):
    """Request headers: version 2.4, the caller's identity, ``extra``."""
    headers = dict(V24)
    for part in caller:
        headers.update(part)
    headers.update(extra)
    return headers


def metadata(**values):
    body = {'name': 'nlb', 'format': 'gbs', 'vendor': 'intel',
            'version': '1.0'}
    body.update(values)
    # None leaves a field out (to see what an upload fills in).
    return {key: value for key, value in body.items() if value is not None}


def create(app, caller, status=201, **values):
    return app.post_json('/v2/bitstreams', metadata(**values),
                         headers=h(caller), status=status)


def upload(app, caller, uuid, data, status=204, content_type=OCTETS):
    return app.put('/v2/bitstreams/%s/file' % uuid, data,
                   headers=h(caller, **{'Content-Type': content_type}),
                   status=status)


def create_active(app, caller, data=None, **values):
    """A bitstream with its image stored; the body of GET after upload."""
    data = builders.build_gbs() if data is None else data
    uuid = create(app, caller, **values).json['uuid']
    upload(app, caller, uuid, data)
    return app.get('/v2/bitstreams/' + uuid, headers=h(caller)).json


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def stored_files(store_dir):
    """Every file under the store (staging and temporaries included)."""
    found = []
    for root, _dirs, files in os.walk(store_dir):
        found.extend(os.path.join(root, f) for f in files)
    return sorted(found)


class RecordingInput:
    """A wsgi.input that records the size of every read."""

    def __init__(self, data):
        self.data = data
        self.pos = 0
        self.reads = []

    def read(self, size=-1):
        self.reads.append(size)
        if size is None or size < 0:
            size = len(self.data) - self.pos
        chunk = self.data[self.pos:self.pos + size]
        self.pos += len(chunk)
        return chunk

    def readline(self, size=-1):
        raise AssertionError('an image is not read by lines')


def put_stream(app, caller, uuid, stream, length=None, status=204,
               chunked=True):
    """PUT with ``stream`` as wsgi.input: a Content-Length when ``length``
    is given, else chunked transfer encoding (or, ``chunked`` False,
    nothing saying where the body ends)."""
    req = webob.Request.blank(
        '/v2/bitstreams/%s/file' % uuid, method='PUT',
        environ={'wsgi.input': stream, 'CONTENT_TYPE': OCTETS})
    if length is None:
        req.environ.pop('CONTENT_LENGTH', None)
        if chunked:
            req.environ['HTTP_TRANSFER_ENCODING'] = 'chunked'
    else:
        req.environ['CONTENT_LENGTH'] = str(length)
    for name, value in h(caller).items():
        req.headers[name] = value
    # NOTE: straight to the WSGI app, without webtest's lint, which
    # wraps wsgi.input (hiding the reads) and refuses odd lengths.
    resp = req.get_response(app.app)
    assert resp.status_int == status, resp.text
    return resp
