"""One process of a multihost cluster (cluster.py): a console script of
this project's (from ``BIN``, this Python's) with its config file and
log, started in a session of its own and stopped by its PID (SIGTERM to
its process group, SIGKILL after a grace period); ``kill9``, ``pause``
and ``resume`` as a crash or a hang would."""
import os
import signal
import subprocess
import sys

from cyborg_lite.cmd import processes

BIN = os.path.dirname(os.path.abspath(sys.executable))


class Service:
    """One console-script process with its config file and log."""

    def __init__(self, name, script, conf_path, log_dir, extra_args=(),
                 popen=subprocess.Popen):
        self.name = name
        self.popen = popen
        self.argv = [os.path.join(BIN, script), '--config-file',
                     conf_path] + list(extra_args)
        self.log_path = os.path.join(log_dir, '%s.log' % name)
        self.proc = None

    @property
    def pid(self):
        return self.proc.pid if self.proc is not None else None

    def start(self):
        with open(self.log_path, 'ab') as log:
            self.proc = self.popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def pause(self):
        """SIGSTOP the process group: it hangs, holding its connections."""
        os.killpg(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.killpg(self.proc.pid, signal.SIGCONT)

    def log_size(self):
        """Where the log ends now (``read_log_since`` reads from there)."""
        try:
            return os.path.getsize(self.log_path)
        except OSError:
            return 0

    def read_log_since(self, offset):
        with open(self.log_path, 'rb') as f:
            f.seek(offset)
            return f.read().decode('utf-8', 'replace')

    def kill9(self):
        """SIGKILL this process only (not its children), then reap it."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        returncode, self.proc = self.proc.returncode, None
        return returncode

    def stop(self, timeout=20):
        """SIGTERM the process group this service leads, SIGKILL on
        timeout; the exit status (None when it was not running)."""
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        return processes.stop(proc, timeout, group=True)

    def read_log(self, chars=6000):
        try:
            with open(self.log_path, errors='replace') as f:
                return f.read()[-chars:]
        except OSError:
            return ''
