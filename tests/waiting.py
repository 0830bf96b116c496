"""Waiting in tests: poll until a condition holds, up to a timeout.

A test never sleeps a fixed time nor asserts a duration: it waits for
what it needs, with a timeout generous enough for a slow machine, and
says what it waited for when it gives up.
"""
import time


def until(predicate, timeout=15.0, interval=0.05):
    """The first truthy value of ``predicate()``, or its last (falsy) value
    once ``timeout`` seconds passed: ``assert until(...)``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def read_until(read, accept, timeout=15.0, interval=0.05, what=None):
    """``read()`` once ``accept`` takes its value; AssertionError with the
    last value read after ``timeout`` seconds."""
    last = []

    def accepted():
        last[:] = [read()]
        return accept(last[0])
    if not until(accepted, timeout, interval):
        raise AssertionError('%s not reached after %ss; last: %r'
                             % (what or 'the awaited value', timeout,
                                last[0]))
    return last[0]


class ManualClock:
    """A monotonic clock a test moves by hand: ``clock.now += 60``."""

    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now
