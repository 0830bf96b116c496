"""The claims the plugin has prepared, kept on disk.

The kubelet asks again after a restart of the agent (and expects the same
answer), and unprepares claims it prepared before: so what a Prepare
returned is written before the answer goes out, and forgotten only once
Unprepare has undone it. One JSON file, replaced whole at each change.
"""
import dataclasses
import json
import os
import threading

from cyborg_lite.agent.dra import files

STATE_FILE = 'prepared-claims.json'
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
        self._lock = threading.Lock()
        self._claims = self._load()

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

    def _save(self):
        files.write_json_atomically(self.path, {
            'version': FORMAT_VERSION,
            'claims': {uid: c.to_dict() for uid, c in self._claims.items()}},
            mode=0o600)

    def get(self, uid):
        with self._lock:
            return self._claims.get(uid)

    def uids(self):
        with self._lock:
            return sorted(self._claims)

    def put(self, claim):
        with self._lock:
            self._claims[claim.uid] = claim
            try:
                self._save()
            except BaseException:
                del self._claims[claim.uid]
                raise

    def remove(self, uid):
        with self._lock:
            claim = self._claims.pop(uid, None)
            if claim is None:
                return
            try:
                self._save()
            except BaseException:
                self._claims[uid] = claim
                raise
