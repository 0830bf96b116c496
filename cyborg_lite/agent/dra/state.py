"""The claims the plugin has prepared, kept on disk.

The kubelet asks again after a restart of the agent (and expects the same
answer), and unprepares claims it prepared before: so what a Prepare
returned is written before the answer goes out, and forgotten only once
Unprepare has undone it. One JSON file, replaced whole at each change.

Two agents may share the file for a moment: a DaemonSet rolling update
with ``maxSurge`` starts the new pod before the old one stops, and the
kubelet (1.33+) may call either. So every read and change goes to the
file under an exclusive lock (``flock`` on a file beside it), and a
claim's preparation or unpreparation holds that claim's own lock
(``claim_lock``): what one agent prepared, the other answers and
unprepares, and never prepares twice.
"""
import contextlib
import dataclasses
import fcntl
import json
import os
import threading

from cyborg_lite.agent.dra import files

STATE_FILE = 'prepared-claims.json'
LOCK_FILE = 'prepared-claims.lock'
CLAIM_LOCKS = 'claim-locks'
FORMAT_VERSION = 1


class StateError(Exception):
    """The state file cannot be read; the plugin must not start blind."""


@dataclasses.dataclass(frozen=True)
class PreparedDeviceRecord:
    """One entry of the kubelet's answer, as returned to it."""
    request_names: tuple
    pool_name: str
    device_name: str
    cdi_device_ids: tuple
    share_id: str | None = None


@dataclasses.dataclass(frozen=True)
class PreparedClaim:
    uid: str
    namespace: str
    name: str
    devices: tuple                 # PreparedDeviceRecord

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data):
        return cls(uid=data['uid'], namespace=data['namespace'],
                   name=data['name'],
                   devices=tuple(PreparedDeviceRecord(
                       request_names=tuple(d['request_names']),
                       pool_name=d['pool_name'],
                       device_name=d['device_name'],
                       cdi_device_ids=tuple(d['cdi_device_ids']),
                       share_id=d.get('share_id'))
                       for d in data['devices']))


class PreparedClaimStore:
    def __init__(self, state_dir):
        self.path = os.path.join(state_dir, STATE_FILE)
        self._lock_path = os.path.join(state_dir, LOCK_FILE)
        self._claim_locks = os.path.join(state_dir, CLAIM_LOCKS)
        self._lock = threading.Lock()
        os.makedirs(self._claim_locks, exist_ok=True)
        with self._locked():
            self._load()           # unreadable: refuse to start blind

    @contextlib.contextmanager
    def _locked(self):
        with self._lock, _flocked(self._lock_path):
            yield

    def _load(self):
        try:
            with open(self.path) as f:
                data = json.load(f)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise StateError('cannot read %s: %s' % (self.path, e))
        try:
            if data.get('version') != FORMAT_VERSION:
                raise ValueError('format version %r' % data.get('version'))
            return {uid: PreparedClaim.from_dict(claim)
                    for uid, claim in data['claims'].items()}
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            raise StateError('%s is not a prepared-claims file: %s'
                             % (self.path, e))

    def _save(self, claims):
        files.write_json_atomically(self.path, {
            'version': FORMAT_VERSION,
            'claims': {uid: c.to_dict() for uid, c in claims.items()}},
            mode=0o600)

    def get(self, uid):
        with self._locked():
            return self._load().get(uid)

    def uids(self):
        with self._locked():
            return sorted(self._load())

    def put(self, claim):
        with self._locked():
            claims = self._load()
            claims[claim.uid] = claim
            self._save(claims)

    def remove(self, uid):
        with self._locked():
            claims = self._load()
            if claims.pop(uid, None) is not None:
                self._save(claims)

    @contextlib.contextmanager
    def claim_lock(self, uid, last=False):
        """Hold claim ``uid``'s lock, shared with any other agent on this
        state directory; ``last``: the claim is being forgotten, so its
        lock file goes too (before the lock is let go)."""
        path = os.path.join(self._claim_locks, _lock_name(uid))
        with _flocked(path, remove=last):
            yield


def _lock_name(uid):
    # A claim uid is a UUID; anything else must not name a path.
    if not uid or not all(c.isalnum() or c == '-' for c in uid):
        raise StateError('%r is not a claim uid' % (uid,))
    return uid + '.lock'


@contextlib.contextmanager
def _flocked(path, remove=False):
    """An exclusive flock on ``path`` (created if missing). With
    ``remove``, the file is unlinked while locked; a waiter that then gets
    the lock of the unlinked file sees it is no longer ``path`` and locks
    the new one."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _same_file(fd, path):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield
        if remove:
            os.unlink(path)
    finally:
        os.close(fd)


def _same_file(fd, path):
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False
