"""Content-addressed store of bitstream bytes.

An image lives at ``<store_dir>/<sha256[:2]>/<sha256>``. Uploads stream
into a temporary file in ``store_dir`` (same filesystem, so the final
rename is atomic), hashed as they are written; an image that is too large
or whose hash differs from the declared one is refused and its temporary
file removed, so a reader never sees a half-written image.
"""
import hashlib
import os
import re
import tempfile

from cyborg_lite.common import exception
from cyborg_lite.conf import CONF

_SHA256 = re.compile(r'^[0-9a-f]{64}$')
_TMP_PREFIX = '.upload-'


def validate_sha256(value, field='sha256'):
    """The sha256 as 64 lowercase hex digits, or exception.Invalid."""
    if not isinstance(value, str) or not _SHA256.match(value.lower()):
        raise exception.Invalid(reason='%s must be 64 hex digits, got %r'
                                % (field, value))
    return value.lower()


def iter_chunks(source, chunk_size):
    """Chunks of bytes from a binary file object or an iterable of bytes."""
    if hasattr(source, 'read'):
        while True:
            chunk = source.read(chunk_size)
            if not chunk:
                return
            yield chunk
    else:
        for chunk in source:
            if not isinstance(chunk, (bytes, bytearray, memoryview)):
                raise exception.Invalid(reason='image chunks must be bytes, '
                                        'got %s' % type(chunk).__name__)
            if chunk:
                yield bytes(chunk)


def copy_hashed(source, out, max_size, chunk_size):
    """Copy ``source`` into ``out``; return (sha256 hex, size).

    Stops reading as soon as more than ``max_size`` bytes came in.
    """
    digest = hashlib.sha256()
    size = 0
    for chunk in iter_chunks(source, chunk_size):
        size += len(chunk)
        if size > max_size:
            raise exception.ImageTooLarge(limit=max_size)
        digest.update(chunk)
        out.write(chunk)
    return digest.hexdigest(), size


class ImageStore:
    """The store under ``directory`` ([bitstreams]store_dir by default)."""

    def __init__(self, directory=None, chunk_size=None):
        self.directory = directory or CONF.bitstreams.store_dir
        self.chunk_size = chunk_size or CONF.bitstreams.chunk_size

    def path(self, sha256):
        # Validating first also stops path traversal through the digest.
        sha256 = validate_sha256(sha256)
        return os.path.join(self.directory, sha256[:2], sha256)

    def exists(self, sha256):
        return os.path.isfile(self.path(sha256))

    def save_stream(self, source, max_size=None, expected_sha256=None):
        """Store the bytes of ``source``; return (sha256, size).

        ``source`` is a binary file object or an iterable of bytes.
        Raises ImageTooLarge past ``max_size`` bytes (default
        [bitstreams]max_size_mb) and ChecksumMismatch when the bytes do
        not hash to ``expected_sha256``; nothing is left behind then.
        """
        if expected_sha256 is not None:
            expected_sha256 = validate_sha256(expected_sha256,
                                              'declared sha256')
        if max_size is None:
            max_size = CONF.bitstreams.max_size_mb * 1024 * 1024
        os.makedirs(self.directory, exist_ok=True)
        fd, tmp_path = tempfile.mkstemp(dir=self.directory,
                                        prefix=_TMP_PREFIX)
        try:
            with os.fdopen(fd, 'wb') as out:
                sha256, size = copy_hashed(source, out, max_size,
                                           self.chunk_size)
                out.flush()
                os.fsync(out.fileno())
            if expected_sha256 is not None and sha256 != expected_sha256:
                raise exception.ChecksumMismatch(declared=expected_sha256,
                                                 actual=sha256)
            self._publish(tmp_path, sha256)
        except BaseException:
            _remove_quietly(tmp_path)
            raise
        return sha256, size

    def _publish(self, tmp_path, sha256):
        final = self.path(sha256)
        os.makedirs(os.path.dirname(final), exist_ok=True)
        # Same content, same name: replacing an existing copy is harmless
        # and keeps concurrent uploads of one image race-free.
        os.replace(tmp_path, final)

    def open_for_read(self, sha256):
        try:
            return open(self.path(sha256), 'rb')
        except FileNotFoundError:
            raise exception.ImageNotFound(sha256=sha256)

    def iter_image(self, sha256):
        """The stored bytes in chunks (e.g. to send to an agent)."""
        with self.open_for_read(sha256) as f:
            yield from iter_chunks(f, self.chunk_size)

    def delete(self, sha256):
        """Remove an image; True if it was there."""
        try:
            os.unlink(self.path(sha256))
        except FileNotFoundError:
            return False
        return True


def _remove_quietly(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
