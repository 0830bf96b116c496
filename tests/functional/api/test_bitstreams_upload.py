"""PUT/GET /v2/bitstreams/{uuid}/file: streamed upload into the store,
header parsed and cross-checked, sha256 and size enforced; a refused
upload leaves no file and the bitstream queued."""
import io
import os

import pytest

from cyborg_lite.db import bitstreams as bitstreams_db
from tests.functional.api import bitstream_helpers as bh
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import MEMBER_B
from tests.functional.api.conftest import error_of
from tests.unit.bitstreams import builders

MIB = 1024 * 1024
OTHER_UUID = '00000000-0000-0000-0000-0000000000aa'


@pytest.fixture
def store_dir(conf):
    return conf.bitstreams.store_dir


def _refused_and_untouched(uuid, store_dir, status='queued'):
    row = bitstreams_db.get(uuid)
    assert (row.status, row.size) == (status, None)
    assert bh.stored_files(store_dir) == []
    # No staging directory left behind either.
    names = os.listdir(store_dir) if os.path.isdir(store_dir) else []
    assert [n for n in names if n.startswith('.')] == []


def test_gbs_upload_fills_metadata_and_downloads_the_same_bytes(app):
    data = builders.build_gbs()
    made = bh.create_active(app, MEMBER_A, data, vendor=None)
    assert (made['status'], made['size'], made['sha256']) == (
        'active', len(data), bh.sha256(data))
    assert (made['region_type'], made['function_id'],
            made['function_name']) == (bh.REGION_TYPE, bh.FUNCTION_ID,
                                       'nlb_400')
    # The GBS format is Intel's: the vendor the header names is stored.
    assert made['vendor'] == '0x8086'
    resp = app.get('/v2/bitstreams/%s/file' % made['uuid'],
                   headers=bh.h(MEMBER_A), status=200)
    assert resp.body == data
    assert resp.content_type == bh.OCTETS
    assert resp.headers['Content-Length'] == str(len(data))
    assert resp.headers['ETag'] == '"%s"' % bh.sha256(data)
    assert resp.headers['Digest'].startswith('sha-256=')


def test_xclbin_upload_fills_region_type_from_interface_uuid(app):
    data = builders.build_xclbin()
    made = bh.create_active(app, MEMBER_A, data, format='xclbin',
                            region_type=builders.INTERFACE_UUID, vendor=None)
    assert (made['format'], made['region_type'], made['function_id']) == (
        'xclbin', bh.REGION_TYPE, builders.hex32(builders.XCLBIN_UUID))
    assert made['vendor'] == '0x10ee'
    assert app.get('/v2/bitstreams/%s/file' % made['uuid'],
                   headers=bh.h(MEMBER_A)).body == data


def test_declared_vendor_is_kept_on_upload(app):
    made = bh.create_active(app, MEMBER_A, builders.build_gbs(),
                            vendor='acme')
    assert made['vendor'] == 'acme'


@pytest.mark.parametrize('declared,field', [
    ({'region_type': '0' * 31 + '1'}, 'region_type'),
    ({'function_id': builders.XCLBIN_UUID}, 'function_id'),
    ({'format': 'xclbin'}, 'format'),
    ({'format': 'raw'}, 'format'),
])
def test_header_contradicting_metadata_is_400_naming_it(app, store_dir,
                                                        declared, field):
    uuid = bh.create(app, MEMBER_A, **declared).json['uuid']
    resp = bh.upload(app, MEMBER_A, uuid, builders.build_gbs(), status=400)
    assert 'contradicts the declared %s' % field in error_of(resp)
    _refused_and_untouched(uuid, store_dir)


def test_wrong_sha256_is_400_and_a_retry_may_follow(app, store_dir):
    data = builders.build_gbs()
    uuid = bh.create(app, MEMBER_A, sha256=bh.sha256(data)).json['uuid']
    resp = bh.upload(app, MEMBER_A, uuid, data + b'x', status=400)
    assert 'sha256 mismatch' in error_of(resp)
    _refused_and_untouched(uuid, store_dir)
    bh.upload(app, MEMBER_A, uuid, data)
    assert bitstreams_db.get(uuid).status == 'active'


def test_truncated_gbs_is_400(app, store_dir):
    uuid = bh.create(app, MEMBER_A).json['uuid']
    resp = bh.upload(app, MEMBER_A, uuid, builders.build_gbs()[:30],
                     status=400)
    assert 'Invalid GBS file: metadata length' in error_of(resp)
    _refused_and_untouched(uuid, store_dir)


def test_declared_length_over_limit_is_413_before_reading(app, conf,
                                                          store_dir):
    conf.set_override('max_size_mb', 1, group='bitstreams')
    uuid = bh.create(app, MEMBER_A, format='raw').json['uuid']
    stream = bh.RecordingInput(b'\0' * (MIB + 1))
    resp = bh.put_stream(app, MEMBER_A, uuid, stream, length=MIB + 1,
                         status=413)
    assert 'limit of %d bytes' % MIB in error_of(resp)
    assert stream.reads == []
    _refused_and_untouched(uuid, store_dir)


def test_chunked_body_over_limit_is_413_while_streaming(app, conf,
                                                        store_dir):
    conf.set_override('max_size_mb', 1, group='bitstreams')
    conf.set_override('chunk_size', 64 * 1024, group='bitstreams')
    uuid = bh.create(app, MEMBER_A, format='raw').json['uuid']
    stream = bh.RecordingInput(b'\1' * (3 * MIB))
    bh.put_stream(app, MEMBER_A, uuid, stream, status=413)
    # Reading stopped at the first chunk past the limit.
    assert stream.pos == MIB + 64 * 1024
    _refused_and_untouched(uuid, store_dir)


def test_chunked_body_within_limit_is_stored(app):
    uuid = bh.create(app, MEMBER_A).json['uuid']
    data = builders.build_gbs()
    bh.put_stream(app, MEMBER_A, uuid, io.BytesIO(data))
    assert bitstreams_db.get(uuid).sha256 == bh.sha256(data)


def test_body_is_streamed_in_chunks(app, conf):
    conf.set_override('chunk_size', 4096, group='bitstreams')
    uuid = bh.create(app, MEMBER_A, format='raw').json['uuid']
    # Larger than [api]max_request_body_size: that limit is not this one.
    data = bytes(range(256)) * 1024
    stream = bh.RecordingInput(data)
    bh.put_stream(app, MEMBER_A, uuid, stream, length=len(data))
    assert max(stream.reads) == 4096
    assert len(stream.reads) == len(data) // 4096
    assert app.get('/v2/bitstreams/%s/file' % uuid,
                   headers=bh.h(MEMBER_A)).body == data


def test_body_shorter_than_its_length_is_400(app, store_dir):
    uuid = bh.create(app, MEMBER_A, format='raw').json['uuid']
    resp = bh.put_stream(app, MEMBER_A, uuid, io.BytesIO(b'x' * 10),
                         length=100, status=400)
    assert 'ended after 10 of the 100 bytes' in error_of(resp)
    _refused_and_untouched(uuid, store_dir)


@pytest.mark.parametrize('content_type,data,status,message', [
    ('application/json', b'{}', 415, 'application/octet-stream'),
    (bh.OCTETS, b'', 400, 'the image is empty'),
])
def test_wrong_type_or_empty_body(app, store_dir, content_type, data,
                                  status, message):
    uuid = bh.create(app, MEMBER_A, format='raw').json['uuid']
    resp = bh.upload(app, MEMBER_A, uuid, data, status=status,
                     content_type=content_type)
    assert message in error_of(resp)
    _refused_and_untouched(uuid, store_dir)


def test_no_length_and_not_chunked_is_411(app, store_dir):
    uuid = bh.create(app, MEMBER_A, format='raw').json['uuid']
    stream = bh.RecordingInput(b'abc')
    resp = bh.put_stream(app, MEMBER_A, uuid, stream, chunked=False,
                         status=411)
    assert 'Content-Length' in error_of(resp)
    assert stream.reads == []
    _refused_and_untouched(uuid, store_dir)


def test_malformed_content_length_is_400(app, store_dir):
    uuid = bh.create(app, MEMBER_A, format='raw').json['uuid']
    resp = bh.put_stream(app, MEMBER_A, uuid, io.BytesIO(b'abc'),
                         length='3²', status=400)
    assert 'Content-Length' in error_of(resp)
    _refused_and_untouched(uuid, store_dir)


def test_second_upload_is_409_and_keeps_the_first(app):
    data = builders.build_gbs()
    made = bh.create_active(app, MEMBER_A, data)
    resp = bh.upload(app, MEMBER_A, made['uuid'], data + b'more',
                     status=409)
    assert 'active' in error_of(resp)
    assert bitstreams_db.get(made['uuid']).sha256 == bh.sha256(data)


def test_upload_policy(app, store_dir):
    private = bh.create(app, MEMBER_A).json['uuid']
    public = bh.create(app, ADMIN, visibility='public').json['uuid']
    data = builders.build_gbs()
    bh.upload(app, MEMBER_B, private, data, status=404)
    resp = bh.upload(app, MEMBER_B, public, data, status=403)
    assert 'cyborg:bitstream:upload' in error_of(resp)
    bh.upload(app, MEMBER_B, OTHER_UUID, data, status=404)
    assert bh.stored_files(store_dir) == []
    bh.upload(app, ADMIN, private, data)


def test_download_before_upload_is_409(app):
    uuid = bh.create(app, MEMBER_A).json['uuid']
    resp = app.get('/v2/bitstreams/%s/file' % uuid, headers=bh.h(MEMBER_A),
                   status=409)
    assert 'queued' in error_of(resp)


def test_download_policy(app):
    data = builders.build_gbs()
    private = bh.create_active(app, MEMBER_A, data)['uuid']
    public = bh.create_active(app, ADMIN, data, visibility='public')['uuid']
    url = '/v2/bitstreams/%s/file'
    app.get(url % private, headers=bh.h(MEMBER_B), status=404)
    assert app.get(url % public, headers=bh.h(MEMBER_B)).body == data
    assert app.get(url % private, headers=bh.h(ADMIN)).body == data


def test_path_without_version_segment_streams_too(app):
    uuid = bh.create(app, MEMBER_A, format='raw').json['uuid']
    data = b'\7' * (200 * 1024)  # over [api]max_request_body_size
    app.put('/bitstreams/%s/file' % uuid, data,
            headers=bh.h(MEMBER_A, **{'Content-Type': bh.OCTETS}),
            status=204)
    assert bitstreams_db.get(uuid).size == len(data)
