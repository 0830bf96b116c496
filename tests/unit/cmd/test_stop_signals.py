"""cmd/stop_signals: a stop signal is a flag, never a lock taken in the
handler; SIGUSR2 dumps every thread's stack."""
import faulthandler
import io
import os
import signal
import subprocess
import sys
import threading

import pytest

from cyborg_lite.cmd import stop_signals
from tests import waiting


@pytest.fixture
def stops():
    saved = {s: signal.getsignal(s) for s in stop_signals.STOP}
    yield stop_signals.StopSignals()
    faulthandler.unregister(stop_signals.DUMP)
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def test_wait_returns_once_a_stop_signal_came(stops):
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    assert stops.wait(poll=0.05) is True
    assert stops.received == [signal.SIGTERM]


def test_wait_returns_when_asked_to(stops):
    assert stops.wait(poll=0.01, until=lambda: True) is False


def test_a_signal_landing_inside_an_event_wait_is_recorded(stops):
    # Where the services hung: the signal arrived as the main thread
    # entered Event.wait (holding the Event's lock), and the handler
    # called Event.set, which takes it. The handler must take no lock.
    event = threading.Event()
    with event._cond:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):   # the handler runs between two bytecodes
            pass
    assert stops.received == [signal.SIGINT]


def test_sigusr2_dumps_every_thread(tmp_path):
    script = ('import threading, time\n'
              'from cyborg_lite.cmd import stop_signals\n'
              'stops = stop_signals.StopSignals()\n'
              'threading.Thread(target=time.sleep, args=(60,), '
              'name="sleeper", daemon=True).start()\n'
              # "ready" from inside wait(): the dump must find it there.
              'said = []\n'
              'def ready():\n'
              '    if not said:\n'
              '        print("ready", flush=True)\n'
              '        said.append(True)\n'
              '    return False\n'
              'stops.wait(until=ready)\n')
    proc = subprocess.Popen([sys.executable, '-c', script],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines = []
    reader = threading.Thread(target=_read_lines, args=(proc.stderr, lines),
                              daemon=True)
    reader.start()
    try:
        assert proc.stdout.readline() == 'ready\n'
        proc.send_signal(stop_signals.DUMP)
        # The stop only once both threads' stacks are out.
        assert waiting.until(lambda: _has_lines(lines, 'in wait', 'in run'))
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        reader.join(30)
    finally:
        proc.kill()
        proc.wait()
    err = ''.join(lines)
    assert proc.returncode == 0
    # Both threads: the main one waiting, the sleeper in its run().
    assert 'Current thread 0x' in err and 'Thread 0x' in err, err
    assert 'stop_signals.py' in err and 'in wait' in err, err
    assert 'in run' in err, err


def _read_lines(stream, lines):
    for line in stream:
        lines.append(line)


def _has_lines(lines, *parts):
    return all(any(part in line for line in list(lines)) for part in parts)


@pytest.mark.parametrize('stderr', [None, 'no-fileno'])
def test_a_stderr_without_a_descriptor_costs_only_the_dump(monkeypatch,
                                                           stderr):
    monkeypatch.setattr(sys, 'stderr',
                        io.StringIO() if stderr == 'no-fileno' else None)
    saved = {s: signal.getsignal(s) for s in stop_signals.STOP}
    try:
        stops = stop_signals.StopSignals()
        os.kill(os.getpid(), signal.SIGTERM)
        assert stops.wait(poll=0.01) is True
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
