"""SIGTERM and SIGINT as a flag the main thread polls, and SIGUSR2 as a
dump of every thread's stack.

A Python signal handler runs in the main thread between two of its
bytecodes, possibly while that thread holds a lock: entering
``threading.Event.wait`` takes the Event's lock, so a handler calling
``Event.set`` there waits for itself forever (a service told to stop at
the moment it began waiting never stopped). The handler here only records
the signal; ``wait`` sleeps, which takes no lock.

SIGUSR2 writes all threads' tracebacks to stderr (``faulthandler``), as
OpenStack services' Guru Meditation Reports do on the same signal: how to
see where a service that does not stop is stuck.
"""
import faulthandler
import signal
import sys
import time

STOP = (signal.SIGTERM, signal.SIGINT)
DUMP = signal.SIGUSR2


class StopSignals:

    def __init__(self, signals=STOP):
        self.received = []
        for signum in signals:
            signal.signal(signum, self._record)
        try:
            faulthandler.register(DUMP, file=sys.stderr, all_threads=True)
        except (AttributeError, ValueError, RuntimeError, OSError):
            # NOTE: a stderr without a file descriptor (closed, or a
            # Python object): no dump, which must not stop the service.
            pass

    def _record(self, signum, _frame):
        # NOTE: list.append takes no lock a Python thread can hold.
        self.received.append(signum)

    def wait(self, poll=0.2, until=None):
        """Return once a stop signal came (True), or ``until()`` is true
        (False), looking every ``poll`` seconds."""
        while not self.received:
            if until is not None and until():
                return False
            time.sleep(poll)
        return True
