"""Publish a host again after someone else changed its ResourceSlices,
once its agent shows it is alive.

``Resyncs.changed(hostname)`` (from kubernetes/slice_watch.py) publishes
the host ``delay`` seconds later, in a thread of its own, so that the
events of one DeleteCollection (the kubelet's wipe) make one sync.

The kubelet also wipes a node's slices when the driver's plugin there has
been unusable for 30 s: the agent may be dead, and its devices must not
be offered again before it is back. So the publish waits for a heartbeat
of the host's agent newer than the one stored when the change was seen
(one comes every [agent]heartbeat_interval seconds), unless the agent is
marked down (the publish then shows its devices unavailable) or never
sent one. A kubelet restarted beside a live agent gets its slices back
within a heartbeat.
"""
import logging
import threading
import time

from cyborg_lite.common import exception

LOG = logging.getLogger(__name__)

_UNKNOWN = 'unknown'        # the database did not say


class Resyncs:

    def __init__(self, publish, beat_of, delay=1.0, clock=time.monotonic):
        """``publish(hostname)``; ``beat_of(hostname)``: (state,
        heartbeat_at) of the host's agent, None when it has no row."""
        self.publish = publish
        self.beat_of = beat_of
        self.delay = delay
        self.clock = clock
        self._due = {}              # hostname: (when, the beat noted)
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='resourceslice-resync')
        self._thread.start()
        return self

    def stop(self):
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def changed(self, hostname):
        """Someone else changed the host's slices: publish it again."""
        beat = self._beat(hostname)
        with self._cond:
            if hostname not in self._due:
                self._due[hostname] = (self.clock() + self.delay, beat)
                self._cond.notify_all()

    def _beat(self, hostname):
        try:
            return self.beat_of(hostname)
        except exception.DatabaseUnavailable:
            return _UNKNOWN

    def _run(self):
        while True:
            with self._cond:
                while not self._stopping and not self._ready():
                    self._cond.wait(self._wait())
                if self._stopping:
                    return
                now = self.clock()
                due = {h: noted for h, (when, noted) in self._due.items()
                       if when <= now}
                for hostname in due:
                    del self._due[hostname]
            for hostname, noted in sorted(due.items()):
                self._resync(hostname, noted)

    def _ready(self):
        return any(when <= self.clock() for when, _ in self._due.values())

    def _wait(self):
        if not self._due:
            return None
        return max(0.0, min(w for w, _ in self._due.values()) - self.clock())

    def _resync(self, hostname, noted):
        beat = self._beat(hostname)
        never_beat = beat is None
        beat_since = beat not in (noted, _UNKNOWN)
        marked_down = isinstance(beat, tuple) and beat[0] == 'down'
        if not (never_beat or beat_since or marked_down):
            with self._cond:        # no newer heartbeat yet: look again
                self._due.setdefault(hostname,
                                     (self.clock() + self.delay, noted))
            return
        try:
            self.publish(hostname)
        except Exception:   # the sink's own retry takes over
            LOG.exception('ResourceSlices of %s not published again',
                          hostname)
