"""Stopping a child process: ask, wait, then insist."""
import os
import signal
import subprocess


def stop(proc, timeout, sig=signal.SIGTERM, group=False):
    """Send ``sig`` to ``proc`` (a Popen) unless it has ended, wait up to
    ``timeout`` seconds, then SIGKILL it and wait; its exit status.

    ``group``: signal the process group ``proc`` leads instead, and at
    the end SIGKILL what is left of it (children of a leader that exited
    first)."""
    def send(signum):
        if not group:
            proc.send_signal(signum)
            return
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass

    if proc.poll() is None:
        send(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            send(signal.SIGKILL)
            proc.wait()
    if group:
        send(signal.SIGKILL)
    return proc.returncode
