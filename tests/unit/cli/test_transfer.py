"""Streaming an image up (a sized iterable requests sends with a
Content-Length) and down (atomic, checked, no partial file left)."""
import hashlib
import io
import os

import pytest
import requests

from cyborg_lite.cli import client as cl_client
from cyborg_lite.cli import progress
from cyborg_lite.cli import transfer

DATA = bytes(range(256)) * 40  # 10240 bytes


class RecordingFile(io.BytesIO):
    def __init__(self, data):
        super().__init__(data)
        self.reads = []

    def read(self, size=-1):
        self.reads.append(size)
        return super().read(size)


def _quiet():
    return progress.Progress(stream=io.StringIO())


def test_body_is_streamed_in_chunks_with_a_content_length():
    fileobj = RecordingFile(DATA)
    body = transfer.FileBody(fileobj, len(DATA), _quiet(), chunk_size=4096)
    prepared = requests.Request('PUT', 'http://127.0.0.1:1/x',
                                data=body).prepare()
    assert prepared.headers['Content-Length'] == str(len(DATA))
    assert 'Transfer-Encoding' not in prepared.headers
    assert fileobj.reads == []  # nothing read before it is sent
    chunks = list(prepared.body)
    assert [len(c) for c in chunks] == [4096, 4096, 2048]
    assert max(fileobj.reads) <= 4096
    assert body.sha256.hexdigest() == hashlib.sha256(DATA).hexdigest()


def test_body_counts_into_the_progress_bar():
    bar = _quiet()
    list(transfer.FileBody(io.BytesIO(DATA), len(DATA), bar, 1000))
    assert bar.done == len(DATA)


def test_body_never_sends_more_than_announced():
    # The file grew after its size was taken.
    body = transfer.FileBody(io.BytesIO(DATA + b'more'), len(DATA),
                             _quiet(), 4096)
    assert b''.join(body) == DATA


def test_body_refuses_a_file_that_shrank():
    body = transfer.FileBody(io.BytesIO(DATA[:100]), len(DATA), _quiet())
    with pytest.raises(cl_client.ClientError, match='100 bytes sent'):
        list(body)


def _chunks(data, fail_after=None):
    for i in range(0, len(data), 1000):
        if fail_after is not None and i >= fail_after:
            raise requests.ConnectionError('connection reset')
        yield data[i:i + 1000]


def test_save_stream_writes_atomically(tmp_path):
    target = tmp_path / 'image.gbs'
    sha256, size = transfer.save_stream(
        _chunks(DATA), str(target), _quiet(),
        hashlib.sha256(DATA).hexdigest(), len(DATA))
    assert (sha256, size) == (hashlib.sha256(DATA).hexdigest(), len(DATA))
    assert target.read_bytes() == DATA
    assert os.listdir(tmp_path) == ['image.gbs']
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize('chunks,sha256,size,error', [
    (_chunks(DATA, fail_after=5000), None, None, requests.ConnectionError),
    (_chunks(DATA), '0' * 64, None, cl_client.ClientError),
    (_chunks(DATA[:5000]), None, len(DATA), cl_client.ClientError),
])
def test_failed_download_keeps_the_old_file_and_no_partial(
        tmp_path, chunks, sha256, size, error):
    target = tmp_path / 'image.gbs'
    target.write_bytes(b'previous')
    with pytest.raises(error):
        transfer.save_stream(chunks, str(target), _quiet(), sha256, size)
    assert target.read_bytes() == b'previous'
    assert os.listdir(tmp_path) == ['image.gbs']


def test_check_download_messages():
    with pytest.raises(cl_client.ClientError,
                       match='ended after 5 of 9 bytes'):
        transfer.check_download('a' * 64, 5, None, 9)
    with pytest.raises(cl_client.ClientError, match='announced ' + 'B' * 64):
        transfer.check_download('a' * 64, 5, 'B' * 64, 5)
    transfer.check_download('a' * 64, 5, 'A' * 64, 5)
