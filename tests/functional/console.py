"""The console scripts of this package, run as an operator runs them.

``Script`` runs one in a subprocess (tests/fork_server.py) and collects its
stdout and stderr in threads, so a test can wait for a line (oslo.log
writes to stdout unless told otherwise) while the process runs. With
``modules_dir`` set, each of its processes (and their children) writes at
exit the names of the modules it had imported (module_probe/
sitecustomize.py); ``Script.modules`` is their union.
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time

from tests import fork_server

BIN = os.path.dirname(sys.executable)
PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     'module_probe')


def path(name):
    return os.path.join(BIN, name)


class Script:

    def __init__(self, name, *args, modules_dir=None, env=None):
        self.argv = [path(name)] + [str(a) for a in args]
        self.env = dict(os.environ, **(env or {}))
        self.modules_dir = modules_dir and str(modules_dir)
        if modules_dir:
            os.makedirs(self.modules_dir, exist_ok=True)
            self.env['CYBORG_LITE_TEST_MODULES_DIR'] = self.modules_dir
            self.env['PYTHONPATH'] = os.pathsep.join(
                filter(None, [PROBE, self.env.get('PYTHONPATH')]))
        self.proc = None
        self._lines = {'stdout': [], 'stderr': []}
        self._cond = threading.Condition()
        self._readers = []

    def start(self):
        self.proc = fork_server.popen(
            self.argv, env=self.env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, errors='replace')
        for name in self._lines:
            reader = threading.Thread(target=self._read, args=(name,),
                                      daemon=True)
            reader.start()
            self._readers.append(reader)
        return self

    def _read(self, name):
        for line in getattr(self.proc, name):
            with self._cond:
                self._lines[name].append(line)
                self._cond.notify_all()

    def _output(self):
        return self._lines['stdout'] + self._lines['stderr']

    def wait_for(self, pattern, timeout=120):
        """Block until an output line matches ``pattern``; AssertionError
        with the output if the process ends or the time runs out first."""
        if not self._wrote(pattern, timeout):
            raise AssertionError('%r never wrote %r; output:\n%s'
                                 % (self.argv, pattern,
                                    ''.join(self._output())))
        return self

    def _wrote(self, pattern, timeout):
        """Whether an output line matches ``pattern`` within ``timeout``
        seconds (False at once if the process closed its output)."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            while not any(regex.search(line) for line in self._output()):
                left = deadline - time.monotonic()
                ended = not any(r.is_alive() for r in self._readers)
                if left <= 0 or ended:
                    return False
                self._cond.wait(min(left, 0.2))
        return True

    def finish(self, sig=None, timeout=120):
        """Signal (if given) and wait; the exit status."""
        if sig is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            # Where it is stuck: every thread's stack, on stderr
            # (cmd/stop_signals.py), then the output with it.
            self.proc.send_signal(signal.SIGUSR2)
            # The dump of the main thread ends with the script's own
            # frame: the last one written (faulthandler puts the current
            # thread last).
            self._wrote(r'File ".*/bin/%s", line \d+ in <module>'
                        % re.escape(os.path.basename(self.argv[0])), 10)
            self.proc.kill()
            self.proc.wait()
            for reader in self._readers:
                reader.join(30)
            raise AssertionError('%r did not end within %s s; output:\n%s'
                                 % (self.argv, timeout,
                                    ''.join(self._output())[-20000:]))
        finally:
            for reader in self._readers:
                reader.join(30)
        return self.proc.returncode

    def run(self, timeout=120):
        return self.start().finish(timeout=timeout)

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    @property
    def stdout(self):
        with self._cond:
            return ''.join(self._lines['stdout'])

    @property
    def stderr(self):
        with self._cond:
            return ''.join(self._lines['stderr'])

    @property
    def modules(self):
        """Modules imported by any of its processes that exited normally
        (each writes one file in ``modules_dir``)."""
        entries = os.listdir(self.modules_dir)
        assert entries, 'no process wrote its modules'
        names = set()
        for entry in entries:
            with open(os.path.join(self.modules_dir, entry)) as f:
                names.update(f.read().split())
        return names


def modules_of(modules, package):
    """The modules of ``package`` among ``modules``."""
    return sorted(m for m in modules
                  if m == package or m.startswith(package + '.'))
