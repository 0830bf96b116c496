"""Request framing over real sockets, on both servers the API runs under:
the all-in-one's cheroot (api/server.py) and cyborg-lite-api's gunicorn.

A body shorter than its Content-Length (the client sent part of it and
closed its side) is refused and stores nothing; a Content-Length that is
not one whole number of bytes is refused before the application reads a
byte; every such answer is the API's JSON error, whichever server gives
it."""
import json
import os
import signal
import socket

import pytest

from cyborg_lite.api import deploy
from cyborg_lite.api import server
from cyborg_lite.db import migration
from tests.functional.api import bitstream_helpers as bh
from tests.functional.api import test_http_server as hs
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.test_upload_recovery import ApiProcess
from tests.unit.bitstreams import builders

pytestmark = pytest.mark.xdist_group('gunicorn_framing')

PROFILE = json.dumps([{'name': 'dp-short', 'groups': [
    {'resources:FPGA': '1'}]}]).encode()


@pytest.fixture(scope='module')
def gunicorn_port(tmp_path_factory):
    """cyborg-lite-api under gunicorn, shared by this module's tests."""
    tmp_path = tmp_path_factory.mktemp('gunicorn')
    url = 'sqlite:///%s' % os.path.join(str(tmp_path), 'api.sqlite')
    migration.upgrade(url=url)
    api = ApiProcess(tmp_path, url).start()
    yield api.port
    api.signal(signal.SIGTERM)


@pytest.fixture(params=['cheroot', 'gunicorn'])
def port(request):
    if request.param == 'gunicorn':
        return request.getfixturevalue('gunicorn_port')
    request.getfixturevalue('sqlite_db')
    conf = request.getfixturevalue('api_conf')
    served = server.Server(deploy.loadapp(conf), '127.0.0.1', 0).start()
    request.addfinalizer(served.stop)
    return served.port


def _half_closed(port, head, body):
    """Send ``head`` and ``body``, close our sending side, read the one
    response (status, headers, body)."""
    with socket.create_connection(('127.0.0.1', port),
                                  timeout=hs.TIMEOUT) as sock:
        sock.sendall(head.encode('latin-1') + b'\r\n' + body)
        sock.shutdown(socket.SHUT_WR)
        return hs.exchange_rest(sock, sock.recv(65536))


def _raw(port, lines, body=b''):
    """One request made of raw header ``lines`` (bytes), and its answer."""
    with socket.create_connection(('127.0.0.1', port),
                                  timeout=hs.TIMEOUT) as sock:
        sock.sendall(b'\r\n'.join(lines) + b'\r\n\r\n' + body)
        return hs.exchange_rest(sock, sock.recv(65536))


def _profiles(port):
    status, headers, body = hs.exchange(port, hs.head(
        'GET', '/v2/device_profiles'))
    assert status == 200
    return json.loads(body)['device_profiles']


@pytest.fixture
def profiles_before(port):
    """The profiles before the test (gunicorn's API serves the whole
    module); a test compares with them."""
    return _profiles(port)


def _post_head(length, **extra):
    return hs.head('POST', '/v2/device_profiles',
                   **dict({'Content-Type': 'application/json',
                           'Content-Length': length}, **extra))


def test_a_json_body_shorter_than_its_length_is_400_and_stores_nothing(
        port, profiles_before):
    # The part sent is a whole, valid document: only its length tells.
    status, headers, body = _half_closed(port, _post_head(len(PROFILE) + 10),
                                         PROFILE)
    assert status == 400, body
    assert 'ended after %d of the %d bytes' % (
        len(PROFILE), len(PROFILE) + 10) in hs.json_error(headers, body)
    assert _profiles(port) == profiles_before


def test_a_chunked_json_body_cut_short_is_400_and_stores_nothing(
        port, profiles_before):
    chunk = b'%x\r\n%s\r\n' % (len(PROFILE), PROFILE)
    status, headers, body = _half_closed(port, hs.head(
        'POST', '/v2/device_profiles',
        **{'Content-Type': 'application/json',
           'Transfer-Encoding': 'chunked'}), chunk)
    assert status == 400, body
    assert hs.json_error(headers, body)
    assert _profiles(port) == profiles_before


def test_the_whole_body_is_still_stored(port, profiles_before):
    status, headers, body = hs.exchange(port, _post_head(len(PROFILE)),
                                        PROFILE)
    assert status == 201, body
    assert len(_profiles(port)) == len(profiles_before) + 1


def _bitstream(port):
    metadata = json.dumps(bh.metadata()).encode()
    status, headers, body = hs.exchange(port, hs.head(
        'POST', '/v2/bitstreams', **{'Content-Type': 'application/json',
                                     'Content-Length': len(metadata)}),
        metadata)
    assert status == 201, body
    return json.loads(body)['uuid']


def _bitstream_status(port, uuid):
    status, headers, body = hs.exchange(port, hs.head(
        'GET', '/v2/bitstreams/%s' % uuid))
    return json.loads(body)['status']


@pytest.mark.parametrize('chunked', [False, True])
def test_a_truncated_image_upload_is_400_and_the_bitstream_stays_queued(
        port, chunked):
    uuid = _bitstream(port)
    image = builders.build_gbs()
    if chunked:
        framing = {'Transfer-Encoding': 'chunked'}
        sent = b'%x\r\n%s\r\n' % (len(image), image)
    else:
        framing = {'Content-Length': len(image) + 100}
        sent = image
    status, headers, body = _half_closed(port, hs.head(
        'PUT', '/v2/bitstreams/%s/file' % uuid,
        **dict(framing, **{'Content-Type': bh.OCTETS})), sent)
    assert status == 400, body
    assert hs.json_error(headers, body)
    assert _bitstream_status(port, uuid) == 'queued'


@pytest.mark.parametrize('length', [
    b'abc', b'1, 2', b'-1', b'+5', b'1_0', b'0x10', b'5 5', b'3\xb2',
    '\u0663'.encode('utf-8'), b''])
def test_a_malformed_content_length_is_a_json_400(port, profiles_before,
                                                 length):
    lines = [b'POST /v2/device_profiles HTTP/1.1', b'Host: x',
             b'Content-Type: application/json',
             b'Content-Length: ' + length]
    status, headers, body = _raw(port, lines, PROFILE)
    assert status == 400, body
    assert hs.json_error(headers, body)
    assert headers.get('connection') == 'close'
    assert _profiles(port) == profiles_before


@pytest.mark.parametrize('extra', [
    [b'Content-Length: %d' % len(PROFILE)] * 2,
    [b'Content-Length: 1', b'Content-Length: %d' % len(PROFILE)],
    [b'Content-Length: %d' % len(PROFILE), b'Transfer-Encoding: chunked'],
])
def test_an_ambiguous_framing_is_a_json_400(port, profiles_before, extra):
    lines = [b'POST /v2/device_profiles HTTP/1.1', b'Host: x',
             b'Content-Type: application/json'] + extra
    status, headers, body = _raw(port, lines, PROFILE)
    assert status == 400, body
    assert hs.json_error(headers, body)
    assert _profiles(port) == profiles_before


def test_a_huge_content_length_is_a_json_413(port):
    status, headers, body = hs.exchange(port, _post_head('9' * 40))
    assert status == 413
    assert hs.json_error(headers, body)


def test_a_malformed_request_line_is_a_json_400(port):
    status, headers, body = _raw(port, [b'GET /v2/devices HTTP/1.1 extra',
                                        b'Host: x'])
    assert status == 400
    assert hs.json_error(headers, body)
