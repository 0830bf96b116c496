"""``cyborg-lite bitstream ...`` against the real API: upload, list,
show, download, delete, and the API's errors as one line."""
import hashlib
import os
import uuid

from cyborg_lite.bitstreams import store as image_store
from tests.functional.cli import bitstream_cli as b


def test_create_uploads_and_shows_active(cli, tmp_path):
    path = b.write_image(tmp_path)
    made = b.create(cli, path, 'nlb', '--vendor', 'intel',
                    '--bitstream-version', '1.2').json
    data = path.read_bytes()
    assert (made['name'], made['status'], made['vendor'], made['version'],
            made['format']) == ('nlb', 'active', 'intel', '1.2', 'gbs')
    assert made['sha256'] == hashlib.sha256(data).hexdigest()
    assert made['size'] == len(data)
    # Filled from the image header by the API.
    assert (made['region_type'], made['function_id']) == (
        b.REGION_TYPE, b.FUNCTION_ID)
    assert 'links' not in made
    shown = cli('bitstream', 'show', made['uuid'], '-f', 'json').json
    assert shown['uuid'] == made['uuid'] and shown['status'] == 'active'


def test_list_filters_and_long(cli, tmp_path):
    first = b.create(cli, b.write_image(tmp_path), 'one', '--vendor',
                     'intel').json
    other = b.write_image(tmp_path, 'other.gbs',
                          afu_uuid='5f0e3c2a-1b2c-4d5e-8f90-a1b2c3d4e5f6')
    second = b.create(cli, other, 'two', '--vendor', 'acme').json
    rows = cli('bitstream', 'list', '-f', 'json').json
    assert sorted(r['uuid'] for r in rows) == sorted(
        [first['uuid'], second['uuid']])
    assert set(rows[0]) == {'uuid', 'name', 'version', 'vendor', 'format',
                            'status', 'visibility', 'size',
                            'signature_status'}
    assert {r['signature_status'] for r in rows} == {'unsigned'}
    by_vendor = cli('bitstream', 'list', '--vendor', 'acme',
                    '-f', 'json').json
    assert [r['uuid'] for r in by_vendor] == [second['uuid']]
    by_function = cli('bitstream', 'list', '--function-id', b.FUNCTION_ID,
                      '--region-type', b.REGION_TYPE, '--visibility',
                      'private', '--bitstream-format', 'gbs',
                      '-f', 'json').json
    assert [r['uuid'] for r in by_function] == [first['uuid']]
    long_rows = cli('bitstream', 'list', '--long', '-f', 'json').json
    assert {'sha256', 'function_id', 'created_at'} <= set(long_rows[0])
    names = cli('bitstream', 'list', '-f', 'value', '-c', 'name')
    assert sorted(names.stdout.split()) == ['one', 'two']


def test_download_to_file_and_stdout(cli, api_url, tmp_path):
    path = b.write_image(tmp_path, payload=os.urandom(3 * 1024 * 1024))
    made = b.create(cli, path).json
    target = tmp_path / 'out' / 'copy.gbs'
    target.parent.mkdir()
    result = cli('bitstream', 'download', made['uuid'], '--file',
                 str(target))
    assert (result.rc, result.stdout, result.stderr) == (0, '', '')
    assert target.read_bytes() == path.read_bytes()
    assert os.listdir(target.parent) == ['copy.gbs']
    raw = b.run_binary(api_url, 'bitstream', 'download', made['uuid'],
                       '--file', '-')
    assert raw.returncode == 0 and raw.stdout == path.read_bytes()


def test_corrupt_download_leaves_no_file(cli, tmp_path):
    made = b.create(cli, b.write_image(tmp_path)).json
    stored = image_store.ImageStore().path(made['sha256'])
    data = bytearray(open(stored, 'rb').read())
    data[-1] ^= 0xFF
    with open(stored, 'wb') as f:
        f.write(data)
    target = tmp_path / 'out' / 'copy.gbs'
    target.parent.mkdir()
    target.write_bytes(b'previous')
    result = cli('bitstream', 'download', made['uuid'], '--file',
                 str(target))
    b.one_line_error(result, 'sha256', made['sha256'])
    assert target.read_bytes() == b'previous'
    assert os.listdir(target.parent) == ['copy.gbs']


def test_delete(cli, tmp_path):
    made = b.create(cli, b.write_image(tmp_path)).json
    result = cli('bitstream', 'delete', made['uuid'])
    assert (result.rc, result.stdout) == (0, '')
    assert cli('bitstream', 'list', '-f', 'json').json == []
    missing = str(uuid.uuid4())
    b.one_line_error(cli('bitstream', 'delete', missing),
                     'Failed to delete 1 of 1 bitstreams',
                     'Bitstream %s could not be found' % missing,
                     'HTTP 404')


def test_api_errors_are_one_line(cli, tmp_path):
    missing = str(uuid.uuid4())
    b.one_line_error(cli('bitstream', 'show', missing),
                     'Bitstream %s could not be found. (HTTP 404)' % missing)
    b.one_line_error(cli('bitstream', 'download', missing, '--file',
                         str(tmp_path / 'x')), 'HTTP 404')
    assert not (tmp_path / 'x').exists()
    b.one_line_error(cli('bitstream', 'list', '--status', 'bogus'),
                     'status', 'HTTP 400')


def test_refused_upload_deletes_the_queued_bitstream(cli, tmp_path):
    path = b.write_image(tmp_path)
    wrong = '0' * 32
    line = b.one_line_error(
        b.create(cli, path, 'nlb', '--function-id', wrong),
        'Upload of bitstream', 'failed, bitstream deleted', 'HTTP 400')
    assert 'function_id' in line
    assert cli('bitstream', 'list', '-f', 'json').json == []


def test_unreadable_or_empty_file_fails_before_any_request(cli, tmp_path):
    b.one_line_error(b.create(cli, tmp_path / 'nope.gbs'),
                     'Cannot read', 'nope.gbs')
    empty = tmp_path / 'empty.gbs'
    empty.write_bytes(b'')
    b.one_line_error(b.create(cli, empty), 'empty.gbs is empty')
    assert cli('bitstream', 'list', '-f', 'json').json == []
