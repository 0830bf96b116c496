"""Stopping a child process: ask, wait, then insist."""
import signal
import subprocess


def stop(proc, timeout, sig=signal.SIGTERM):
    """Send ``sig`` to ``proc`` (a Popen) unless it has ended, wait up to
    ``timeout`` seconds, then SIGKILL it and wait; its exit status."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode
