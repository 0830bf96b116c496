"""Logging the outage of a service everything depends on (the database).

While the database is down every request and every periodic task fails
the same way; logging each failure buried the logs (a conductor wrote
3,550 ERROR lines and the API 4,400 in a 15 s outage). An ``OutageLog``
logs the first failure, then at most one line per ``interval`` seconds
while the outage lasts, and one line when the next success ends it::

    DB = OutageLog('Database', LOG, interval=60)
    try:
        ...
    except ConnectionError as exc:
        DB.failed(exc)
        raise
    DB.succeeded()

One per process and dependency; thread-safe. ``succeeded`` is a flag
check unless an outage is on, so it may follow every operation. A
success less than ``settle`` seconds after the last failure does not end
the outage: while a server shuts down or starts, successes and failures
alternate (a pooled connection still answers while new ones are
refused), and that is one outage, not several.
"""
import threading
import time


class OutageLog:

    def __init__(self, what, logger, interval=60.0, settle=2.0,
                 clock=time.monotonic):
        self.what = what
        self.log = logger
        self.interval = interval
        self.settle = settle
        self.clock = clock
        self._lock = threading.Lock()
        self._since = None
        self._failures = 0
        self._logged_at = None
        self._failed_at = None

    @property
    def down(self):
        return self._since is not None

    @property
    def failures(self):
        """Failures in the outage on now (0 when none is)."""
        return self._failures if self.down else 0

    def failed(self, detail):
        """One failure: logged if it starts an outage or ``interval``
        seconds passed since the last line about it."""
        with self._lock:
            now = self._failed_at = self.clock()
            if self._since is None:
                self._since, self._failures, self._logged_at = now, 1, now
                self.log.error('%s unreachable: %s (logged again at most '
                               'every %d s until it is back)', self.what,
                               detail, self.interval)
                return
            self._failures += 1
            if now - self._logged_at < self.interval:
                return
            self._logged_at = now
            self.log.error('%s still unreachable after %.0f s, %d failed '
                           'operations so far: %s', self.what,
                           now - self._since, self._failures, detail)

    def succeeded(self):
        """A success: ends the outage, if one is on and its last failure
        is ``settle`` seconds old, with one line."""
        if self._since is None:
            return
        with self._lock:
            now = self.clock()
            if self._since is None or now - self._failed_at < self.settle:
                return
            self.log.warning('%s reachable again: the outage ended after '
                             '%.1f s, %d operations failed during it',
                             self.what, now - self._since, self._failures)
            self._since = None
            self._failures = 0
