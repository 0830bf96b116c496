"""Streaming a bitstream image up and down, a chunk at a time.

Upload: ``FileBody`` hands requests a sized iterable, so the request has a
Content-Length (no chunked encoding) and the file is read one chunk at a
time while it is sent, never whole. Download: ``save_stream`` writes the
chunks to a temporary file next to the target and renames it into place
only once every byte has arrived and matches the server's sha256; on any
failure the partial file is removed. Both count bytes into a
progress.Progress (a bar on a terminal, silent otherwise) and hash what
passes through.
"""
import contextlib
import hashlib
import os
import tempfile

from cyborg_lite.cli import client as cl_client

CHUNK_SIZE = 1024 * 1024


def read_chunks(fileobj, chunk_size=CHUNK_SIZE, limit=None):
    """The file's bytes, ``chunk_size`` at a time, at most ``limit``."""
    left = limit
    while left is None or left > 0:
        chunk = fileobj.read(chunk_size if left is None
                             else min(chunk_size, left))
        if not chunk:
            return
        if left is not None:
            left -= len(chunk)
        yield chunk


class FileBody:
    """An open file as a request body of ``size`` bytes, in chunks."""

    def __init__(self, fileobj, size, progress, chunk_size=CHUNK_SIZE):
        self.fileobj = fileobj
        self.size = size
        self.progress = progress
        self.chunk_size = chunk_size
        self.sha256 = hashlib.sha256()
        self.sent = 0

    def __len__(self):
        # requests sends Content-Length: len(body) for a sized iterable.
        return self.size

    def __iter__(self):
        # Never past ``size``: more bytes than the Content-Length
        # announced would corrupt the connection.
        chunks = read_chunks(self.fileobj, self.chunk_size, self.size)
        for chunk in self.progress.wrap(chunks):
            self.sha256.update(chunk)
            self.sent += len(chunk)
            yield chunk
        if self.sent != self.size:
            raise cl_client.ClientError(
                'The file changed while it was read: %d bytes sent, %d '
                'expected' % (self.sent, self.size))


def copy_hashed(chunks, out, progress):
    """Write ``chunks`` to ``out``; (sha256 hex, bytes written)."""
    digest = hashlib.sha256()
    size = 0
    for chunk in progress.wrap(chunks):
        out.write(chunk)
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def check_download(sha256, size, expected_sha256, expected_size):
    if expected_size is not None and size != expected_size:
        raise cl_client.ClientError(
            'Download ended after %d of %d bytes' % (size, expected_size))
    if expected_sha256 and sha256 != expected_sha256.lower():
        raise cl_client.ClientError(
            'Downloaded data has sha256 %s, the server announced %s'
            % (sha256, expected_sha256))


def _default_mode():
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def save_stream(chunks, path, progress, expected_sha256=None,
                expected_size=None):
    """Stream ``chunks`` into ``path`` atomically; (sha256, size)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, partial = tempfile.mkstemp(
        dir=directory, prefix='.%s.' % os.path.basename(path),
        suffix='.part')
    try:
        with os.fdopen(fd, 'wb') as out:
            sha256, size = copy_hashed(chunks, out, progress)
            check_download(sha256, size, expected_sha256, expected_size)
            out.flush()
            os.fsync(out.fileno())
        # mkstemp makes 0600; a download gets the usual mode.
        os.chmod(partial, _default_mode())
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
        raise
    return sha256, size
