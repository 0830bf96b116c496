"""Staging areas of the uploads into the image store, and who owns them.

The upload of bitstream U streams into ``<store>/.staging-U/`` while its
process holds an exclusive ``flock`` on ``<store>/.staging-U.lock``. The
lock is the owner: the kernel drops it when the process dies (kill -9
included), so any other process, another API worker, another API host on
the shared store, or the API restarted, tells a live upload (lock held)
from an abandoned one (lock free) at once, with no clock and no
threshold. Whoever takes a free lock may clear what the dead owner left.

flock is per open file, so two threads of one process exclude each other
too; a set of the keys this process holds guards them as well where the
filesystem turns flock into per-process POSIX locks (NFS).
"""
import fcntl
import os
import shutil
import threading

PREFIX = '.staging-'
LOCK_SUFFIX = '.lock'

_held = set()
_held_lock = threading.Lock()


def staging_dir(directory, key):
    return os.path.join(directory, PREFIX + key)


def lock_path(directory, key):
    return staging_dir(directory, key) + LOCK_SUFFIX


class Claim:
    """The staging area of ``key``, held by this process until released."""

    def __init__(self, directory, key, fd):
        self.directory = directory
        self.key = key
        self.path = staging_dir(directory, key)
        self._fd = fd

    def fresh_dir(self):
        """The staging directory, emptied of what a dead owner left."""
        shutil.rmtree(self.path, ignore_errors=True)
        os.makedirs(self.path)
        return self.path

    def release(self):
        """Remove the staging directory and the lock file, then unlock.

        The lock file goes while still locked: a process that opened it
        meanwhile sees, once it has the lock, that it is no longer the
        file at that path, and tries again (see ``claim``)."""
        try:
            shutil.rmtree(self.path, ignore_errors=True)
            _remove_quietly(lock_path(self.directory, self.key))
        finally:
            os.close(self._fd)
            with _held_lock:
                _held.discard((self.directory, self.key))


def _same_file(fd, path):
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _lock(path):
    """An fd of ``path`` locked by us, None while another holds it."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        if _same_file(fd, path):
            return fd
        # The owner we waited for removed it as it finished: a new file
        # at that path is the lock now.
        os.close(fd)


def claim(directory, key):
    """The Claim of ``key``'s staging area, or None while another upload
    (of this or another process) holds it."""
    with _held_lock:
        if (directory, key) in _held:
            return None
        _held.add((directory, key))
    fd = None
    try:
        os.makedirs(directory, exist_ok=True)
        fd = _lock(lock_path(directory, key))
    finally:
        if fd is None:
            with _held_lock:
                _held.discard((directory, key))
    return None if fd is None else Claim(directory, key, fd)


def leftover_keys(directory):
    """Keys that have a staging directory or lock file in ``directory``
    (live uploads included: ``claim`` tells them apart)."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return set()
    keys = set()
    for name in names:
        if name.startswith(PREFIX):
            key = name[len(PREFIX):]
            if key.endswith(LOCK_SUFFIX):
                key = key[:-len(LOCK_SUFFIX)]
            keys.add(key)
    return keys


def _remove_quietly(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
