"""The content-addressed store: streaming, limits, checksums, cleanup."""
import hashlib
import io
import os

import pytest

from cyborg_lite.bitstreams import store as image_store
from cyborg_lite.common import exception

DATA = b'bitstream bytes ' * 1000
SHA = hashlib.sha256(DATA).hexdigest()


@pytest.fixture
def store(conf, tmp_path):
    conf.set_override('chunk_size', 4096, group='bitstreams')
    return image_store.ImageStore()


def _files(directory):
    return sorted(os.path.relpath(os.path.join(root, name), directory)
                  for root, _dirs, names in os.walk(directory)
                  for name in names)


def test_default_directory_is_under_state_path(store, tmp_path):
    assert store.directory == os.path.join(str(tmp_path), 'bitstreams')


def test_save_from_file_object(store):
    assert store.save_stream(io.BytesIO(DATA), max_size=len(DATA),
                             expected_sha256=SHA.upper()) == (SHA, len(DATA))
    assert _files(store.directory) == [os.path.join(SHA[:2], SHA)]
    with store.open_for_read(SHA) as f:
        assert f.read() == DATA
    assert b''.join(store.iter_image(SHA)) == DATA


def test_save_from_iterator_and_dedupe(store):
    chunks = [DATA[:100], b'', DATA[100:]]
    assert store.save_stream(iter(chunks)) == (SHA, len(DATA))
    assert store.save_stream([DATA]) == (SHA, len(DATA))
    assert _files(store.directory) == [os.path.join(SHA[:2], SHA)]


class _Source:
    """A file object that counts how much was read from it."""

    def __init__(self, size):
        self.left, self.read_bytes = size, 0

    def read(self, n):
        n = min(n, self.left)
        self.left -= n
        self.read_bytes += n
        return b'x' * n


def test_too_large_stops_reading_and_leaves_nothing(store):
    source = _Source(10 ** 7)
    with pytest.raises(exception.ImageTooLarge, match='limit of 10000 bytes'):
        store.save_stream(source, max_size=10000)
    # One chunk past the limit, not the whole 10 MB.
    assert source.read_bytes <= 10000 + 4096
    assert _files(store.directory) == []


def test_default_max_size_from_config(store, conf):
    conf.set_override('max_size_mb', 1, group='bitstreams')
    with pytest.raises(exception.ImageTooLarge):
        store.save_stream(_Source(1024 * 1024 + 1))
    assert store.save_stream(_Source(1024 * 1024))[1] == 1024 * 1024


def test_checksum_mismatch_leaves_nothing(store):
    with pytest.raises(exception.ChecksumMismatch) as info:
        store.save_stream(io.BytesIO(DATA), expected_sha256='0' * 64)
    assert SHA in str(info.value) and '0' * 64 in str(info.value)
    assert _files(store.directory) == []
    assert not store.exists(SHA)


def test_source_error_leaves_nothing(store):
    def chunks():
        yield DATA
        raise IOError('client went away')
    with pytest.raises(IOError):
        store.save_stream(chunks())
    assert _files(store.directory) == []


def test_non_bytes_chunk_refused(store):
    with pytest.raises(exception.Invalid, match='chunks must be bytes'):
        store.save_stream(['text'])
    assert _files(store.directory) == []


@pytest.mark.parametrize('bad', ['abc', '../' + 'a' * 61, 'g' * 64, None])
def test_bad_digest_refused(store, bad):
    with pytest.raises(exception.Invalid, match='64 hex digits'):
        store.path(bad)
    with pytest.raises(exception.Invalid, match='declared sha256'):
        store.save_stream([DATA], expected_sha256=bad or 'x')


def test_missing_image(store):
    with pytest.raises(exception.ImageNotFound, match=SHA):
        store.open_for_read(SHA)


def test_delete(store):
    store.save_stream([DATA])
    assert store.delete(SHA) is True
    assert store.delete(SHA) is False
    assert not store.exists(SHA)
