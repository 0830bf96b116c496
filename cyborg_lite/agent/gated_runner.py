"""What the agent's background runners share (agent/programming.JobRunner,
agent/cleaning.CleaningRunner).

Work submitted before ``open()`` is held: the agent opens its runners
once the conductor knows it (re)started, so nothing runs that the
conductor is about to fail or requeue. After ``stop()`` nothing is taken.
Each piece of work runs in a thread of its own; ``stop(drain=False)``
leaves the threads as a killed agent would, cut off from the conductor
(``_cut``), which then resumes the work.
"""
import logging
import threading
import time

from cyborg_lite.common import exception

LOG = logging.getLogger(__name__)

RUN, HELD, CLOSED = 'run', 'held', 'closed'


class GatedRunner:

    def __init__(self):
        self._lock = threading.Lock()
        self._cut = threading.Event()
        self._threads = set()
        self._held = []
        self._open = self._closed = False

    def submit(self, item):
        raise NotImplementedError

    def open(self):
        """Start running work, first what was held back until now."""
        with self._lock:
            self._open = True
            held, self._held = self._held, []
        for item in held:
            self.submit(item)

    def _gate(self, item, name):
        """RUN, HELD (kept for ``open``) or CLOSED; called with the lock
        held. ``name`` says what ``item`` is in the log."""
        if self._closed:
            LOG.info('%s not started: the agent is stopping', name)
            return CLOSED
        if not self._open:
            self._held.append(item)
            return HELD
        return RUN

    def _start_thread(self, target, args, name):
        # NOTE: called with the lock held.
        thread = threading.Thread(target=self._tracked, args=(target, args),
                                  name=name, daemon=True)
        self._threads.add(thread)
        thread.start()

    def _tracked(self, target, args):
        try:
            target(*args)
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def _through_outage(self, send, what, interval, timeout):
        """``send()``'s answer, sent again every ``interval`` s while the
        conductor answers that its database is unavailable, for up to
        ``timeout`` s (then that DatabaseUnavailable). Work done on the
        hardware must not be reported failed, nor done again, for an
        outage of the conductor's database. Conflict once the agent is
        stopped. ``what`` names the report in the log."""
        outage_since = None
        while True:
            if self._cut.is_set():
                raise exception.Conflict(reason='the agent stopped')
            try:
                return send()
            except exception.DatabaseUnavailable:
                now = time.monotonic()
                if outage_since is None:
                    outage_since = now
                    LOG.warning('%s: the conductor\'s database is '
                                'unavailable; sending it again every %d s',
                                what, interval)
                elif now - outage_since >= timeout:
                    raise
                self._cut.wait(interval)

    def _busy(self):
        """With the lock held: whether a thread of this runner is alive."""
        return bool(self._threads)

    def _on_stop(self):
        """Called with the lock held as ``stop`` begins."""

    def stop(self, drain=True, timeout=None):
        """Take no more work; wait for the running threads or cut them
        off from the conductor."""
        with self._lock:
            self._closed = True
            self._on_stop()
            threads = list(self._threads)
            if not drain:
                self._cut.set()
        if drain:
            for thread in threads:
                thread.join(timeout)
