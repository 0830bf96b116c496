"""A driver's small JSON state file: what it made on the host, kept
across agent restarts (kill -9 included) and read by the next release as
it is. Read whole; changed whole under a lock, written to a temporary
file, synced, then put in place, so a crash leaves the old or the new
content, never half of one."""
import json
import os
import threading

from cyborg_lite.common import exception


class StateFile:

    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()

    def read(self):
        """The file's JSON object; {} when there is none."""
        try:
            with open(self.path) as f:
                return json.load(f)
        except FileNotFoundError:
            return {}
        except ValueError as e:
            raise exception.HostDataError(where=self.path, reason=str(e))

    def change(self, edit):
        """Read, ``edit(content)`` in place, write back, under the lock."""
        with self._lock:
            content = self.read()
            edit(content)
            os.makedirs(os.path.dirname(self.path) or '.', exist_ok=True)
            tmp = '%s.tmp.%d' % (self.path, os.getpid())
            with open(tmp, 'w') as f:
                json.dump(content, f, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
