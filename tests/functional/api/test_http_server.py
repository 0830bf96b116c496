"""The API served over a real socket by the all-in-one's server
(cyborg_lite.api.server): body limits are the API's, answered in JSON
from the headers alone, and uploads stream."""
import http.client
import json
import socket

import pytest

from cyborg_lite.api import deploy
from cyborg_lite.api import server
from cyborg_lite.db import bitstreams as bitstreams_db
from tests.functional.api import bitstream_helpers as bh
from tests.functional.api.conftest import MEMBER_A
from tests.unit.bitstreams import builders

MIB = 1024 * 1024
TIMEOUT = 20


def exchange(port, head, body=b''):
    """Send ``head`` (request line and headers) and ``body``; read one
    response: (status, {lower-case header: value}, body bytes). A server
    that waits for more than was sent makes this time out."""
    with socket.create_connection(('127.0.0.1', port),
                                  timeout=TIMEOUT) as sock:
        sock.sendall(head.encode('latin-1') + b'\r\n' + body)
        data = b''
        while b'\r\n\r\n' not in data:
            chunk = sock.recv(65536)
            assert chunk, 'connection closed without a response'
            data += chunk
        raw_head, rest = data.split(b'\r\n\r\n', 1)
        lines = raw_head.decode('latin-1').split('\r\n')
        if lines[0].split()[1] == '100':   # interim: the final one follows
            return exchange_rest(sock, rest)
        return _parse(sock, lines, rest)


def exchange_rest(sock, data):
    while b'\r\n\r\n' not in data:
        data += sock.recv(65536)
    raw_head, rest = data.split(b'\r\n\r\n', 1)
    return _parse(sock, raw_head.decode('latin-1').split('\r\n'), rest)


def _parse(sock, lines, rest):
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, value = line.split(':', 1)
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get('content-length', 0))
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, 'connection closed mid-body'
        rest += chunk
    return status, headers, rest[:length]


def json_error(headers, body):
    """The faultstring of a JSON error body in Cyborg's form."""
    assert headers['content-type'] == 'application/json'
    return json.loads(json.loads(body)['error_message'])['faultstring']


def head(method, path, **headers):
    lines = ['%s %s HTTP/1.1' % (method, path), 'Host: 127.0.0.1']
    for name, value in dict(bh.h(MEMBER_A), **headers).items():
        lines.append('%s: %s' % (name, value))
    return '\r\n'.join(lines) + '\r\n'


@pytest.fixture
def api(sqlite_db, api_conf):
    api_conf.set_override('max_size_mb', 1, group='bitstreams')
    api_conf.set_override('chunk_size', 64 * 1024, group='bitstreams')
    served = server.Server(deploy.loadapp(api_conf), '127.0.0.1', 0)
    served.start()
    yield served.port
    served.stop()


def _create(port):
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=TIMEOUT)
    conn.request('POST', '/v2/bitstreams', json.dumps(bh.metadata()),
                 headers=dict(bh.h(MEMBER_A),
                              **{'Content-Type': 'application/json'}))
    resp = conn.getresponse()
    assert resp.status == 201
    return json.loads(resp.read())['uuid']


def _image(size):
    """A valid GBS image of exactly ``size`` bytes."""
    header = len(builders.build_gbs(payload=b''))
    return builders.build_gbs(payload=b'\0' * (size - header))


def test_image_of_exactly_max_size_mb_is_stored(api):
    uuid = _create(api)
    data = _image(MIB)
    status, headers, body = exchange(api, head(
        'PUT', '/v2/bitstreams/%s/file' % uuid,
        **{'Content-Type': bh.OCTETS, 'Content-Length': len(data)}), data)
    assert status == 204, body
    row = bitstreams_db.get(uuid)
    assert (row.status, row.size) == ('active', MIB)


def test_one_byte_over_is_413_before_the_body_is_sent(api):
    uuid = _create(api)
    # Only the headers go out: the answer must not wait for the body.
    status, headers, body = exchange(api, head(
        'PUT', '/v2/bitstreams/%s/file' % uuid,
        **{'Content-Type': bh.OCTETS, 'Content-Length': MIB + 1}))
    assert status == 413
    assert str(MIB) in json_error(headers, body)
    assert bitstreams_db.get(uuid).status == 'queued'


def test_a_client_sending_the_whole_oversized_body_reads_the_413(api):
    """http.client (as requests) sends the whole body before it reads: the
    413 answered from the headers must still reach it, not a reset."""
    uuid = _create(api)
    body = b'\0' * (32 * MIB)   # far more than the sockets' buffers hold
    conn = http.client.HTTPConnection('127.0.0.1', api, timeout=TIMEOUT)
    conn.request('PUT', '/v2/bitstreams/%s/file' % uuid, body,
                 headers=dict(bh.h(MEMBER_A),
                              **{'Content-Type': bh.OCTETS}))
    resp = conn.getresponse()
    assert resp.status == 413
    assert resp.getheader('Connection') == 'close'
    assert str(MIB) in json_error({'content-type': resp.getheader(
        'Content-Type')}, resp.read())
    assert bitstreams_db.get(uuid).status == 'queued'


def test_expect_continue_over_the_limit_is_413_too(api):
    uuid = _create(api)
    status, headers, body = exchange(api, head(
        'PUT', '/v2/bitstreams/%s/file' % uuid,
        **{'Content-Type': bh.OCTETS, 'Content-Length': 2 * MIB,
           'Expect': '100-continue'}))
    assert status == 413
    assert json_error(headers, body)


def test_no_length_and_not_chunked_is_411(api):
    uuid = _create(api)
    status, headers, body = exchange(api, head(
        'PUT', '/v2/bitstreams/%s/file' % uuid,
        **{'Content-Type': bh.OCTETS}))
    assert status == 411
    assert 'Content-Length' in json_error(headers, body)
    assert bitstreams_db.get(uuid).status == 'queued'


def test_chunked_upload_streams_and_is_cut_at_the_limit(api):
    uuid = _create(api)
    data = _image(MIB // 2)
    conn = http.client.HTTPConnection('127.0.0.1', api, timeout=TIMEOUT)
    chunks = (data[i:i + 10000] for i in range(0, len(data), 10000))
    conn.request('PUT', '/v2/bitstreams/%s/file' % uuid, chunks,
                 headers=dict(bh.h(MEMBER_A),
                              **{'Content-Type': bh.OCTETS}),
                 encode_chunked=True)
    resp = conn.getresponse()
    assert resp.status == 204, resp.read()
    assert bitstreams_db.get(uuid).size == len(data)

    other = _create(api)
    conn = http.client.HTTPConnection('127.0.0.1', api, timeout=TIMEOUT)
    big = (b'\0' * 65536 for _ in range(512))   # 32 MiB, cut at 1 MiB
    conn.request('PUT', '/v2/bitstreams/%s/file' % other, big,
                 headers=dict(bh.h(MEMBER_A),
                              **{'Content-Type': bh.OCTETS}),
                 encode_chunked=True)
    resp = conn.getresponse()
    assert resp.status == 413
    assert bitstreams_db.get(other).status == 'queued'


def test_json_body_over_the_api_limit_is_413_before_the_body(api, api_conf):
    declared = api_conf.api.max_request_body_size + 1
    status, headers, body = exchange(api, head(
        'POST', '/v2/device_profiles',
        **{'Content-Type': 'application/json',
           'Content-Length': declared}))
    assert status == 413
    assert json_error(headers, body)
