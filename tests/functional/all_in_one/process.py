"""The cyborg-lite-all-in-one console script as a subprocess, and the
checks that it left no Placement child behind."""
import os
import signal
import socket
import subprocess

from cyborg_lite.cmd import processes
from tests import fork_server
from tests import servers
from tests.functional import console

SCRIPT = console.path('cyborg-lite-all-in-one')
PLACEMENT_MODULE = 'cyborg_lite.cmd.placement_server'


class AllInOneProcess:
    """``cyborg-lite-all-in-one`` on free ports, under ``state_dir``."""

    def __init__(self, state_dir, *extra_args, api_port=None,
                 placement_port=None):
        self.state_dir = str(state_dir)
        self.api_port = api_port or servers.free_port()
        self.placement_port = placement_port or servers.free_port()
        self.api = 'http://127.0.0.1:%d' % self.api_port
        self.args = [SCRIPT, '--state-dir', self.state_dir,
                     '--api-port', str(self.api_port),
                     '--placement-port', str(self.placement_port)]
        self.args += list(extra_args)
        self.proc = None

    def start(self):
        self.proc = fork_server.popen(self.args, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
        return self

    def wait_api(self, timeout=120):
        try:
            servers.wait_for_port(self.api_port, timeout, proc=self.proc)
        except (RuntimeError, TimeoutError):
            self.stop()
            raise RuntimeError('all-in-one did not start:\n%s'
                               % self.proc.stderr.read())
        return self

    def run(self, timeout=120):
        """Run to the end: (exit status, stdout, stderr)."""
        self.start()
        try:
            out, err = self.proc.communicate(timeout=timeout)
        finally:
            self.stop()
        return self.proc.returncode, out, err

    def stop(self, sig=signal.SIGTERM):
        if self.proc is None:
            return None
        return processes.stop(self.proc, 60, sig)


def placement_children(port):
    """PIDs of Placement processes serving ``port`` (from /proc)."""
    found = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                argv = f.read().split(b'\0')
        except OSError:
            continue
        if PLACEMENT_MODULE.encode() in argv and str(port).encode() in argv:
            found.append(int(pid))
    return found


def port_is_free(port):
    with socket.socket() as s:
        return s.connect_ex(('127.0.0.1', port)) != 0


def kill_leftovers(port):
    """Kill what a failed test left behind, so it does not outlive it."""
    for pid in placement_children(port):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
