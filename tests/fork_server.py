"""Our Python services started by fork from a process that imported them.

A Placement or a conductor spends most of its start importing (about
1 of a Placement start's 1.2 CPU-seconds), and the suite starts some
hundred of them. ``popen(argv, ...)`` starts ``python -m MODULE`` or one
of this venv's console scripts as a child of a fork server (one of each
kind per pytest worker: Placement's, the agent's, our other services')
that has imported the modules already: the child is a real process with
its own pid, files, session and exit status, which a test can signal,
SIGKILL and wait for as it would a ``subprocess.Popen``; only the
imports are shared (copy-on-write).

What the fork server cannot give exactly as a new interpreter would is
started with ``subprocess.Popen`` instead: another interpreter, Python
options (``-c``, ``-X``, ``-W``), an environment whose ``PYTHON*`` or
``PROMETHEUS_MULTIPROC_DIR`` differs from the server's (read at
interpreter start or at import). The console scripts' own start is
tested in real processes (the import probes of
tests/functional/test_console_scripts.py, the README tour's commands).
"""
import atexit
import gc
import importlib
import json
import os
import select
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.path.dirname(os.path.abspath(sys.executable))
# What a start would import, imported once by a fork server of each
# kind. Placement apart from ours: our modules register options on
# oslo.config's global CONF, where Placement's database layer registers
# its own of the same names. The agent apart from the other services: it
# imports prometheus_client, which must not be imported before a
# conductor or an API with several workers names its multi-process
# directory (cyborg_lite/metrics/multiproc_dir.py).
PRELOAD = {
    'placement': ('cyborg_lite.cmd.placement_server', 'placement.deploy',
                  'placement.db_api', 'placement.conf',
                  'gunicorn.app.wsgiapp'),
    'agent': ('cyborg_lite.cmd.agent',),
    'services': ('cyborg_lite.cmd.conductor', 'cyborg_lite.cmd.api',
                 'cyborg_lite.cmd.all_in_one', 'cyborg_lite.cmd.dbsync'),
}
# The kind that starts a module or console script; 'services' otherwise.
_KINDS = {'cyborg_lite.cmd.placement_server': 'placement',
          'gunicorn': 'placement',
          'cyborg_lite.cmd.agent': 'agent', 'cyborg-lite-agent': 'agent'}
# Modules that read the environment when imported, which a kind's server
# must not import.
_NOT_PRELOADED = {'services': ('prometheus_client',),
                  'placement': ('prometheus_client',)}
# Read once at interpreter start or at import: a child whose value
# differs from the server's is a new interpreter.
_START_ENV_PREFIXES = ('PYTHON', 'PROMETHEUS_MULTIPROC_DIR', 'LD_')
_HEADER = struct.Struct('!I')


# --- the client: a Popen for a forked child ---------------------------

class ForkedProcess:
    """What a test uses of ``subprocess.Popen``: ``pid``, ``args``,
    ``returncode``, ``stdin``, ``stdout`` and ``stderr`` (where asked
    for with PIPE), ``poll``, ``wait``, ``communicate``, ``send_signal``,
    ``terminate``, ``kill``."""

    def __init__(self, args, pid, status_sock, stdin=None, stdout=None,
                 stderr=None):
        self.args = args
        self.pid = pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.returncode = None
        self._status = status_sock
        self._status_lock = threading.Lock()
        self._readers, self._output = None, {}

    def poll(self):
        if self.returncode is None:
            self._read_status(0)
        return self.returncode

    def wait(self, timeout=None):
        if self.returncode is None and not self._read_status(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def _read_status(self, timeout):
        # One reader of the status at a time, as Popen waits under a lock.
        with self._status_lock:
            if self.returncode is not None:
                return True
            ready, _, _ = select.select([self._status], [], [], timeout)
            if not ready:
                return False
            line = _read_line(self._status)
            # The server sends the exit status when it reaps the child;
            # an end without one means the server itself ended first.
            self.returncode = int(line) if line else -signal.SIGKILL
            self._status.close()
            return True

    def communicate(self, input=None, timeout=None):
        """Both outputs to their ends, the exit status waited for."""
        if self._readers is None:
            if input is not None:
                self.stdin.write(input)
            if self.stdin is not None:
                self.stdin.close()
            self._readers = [threading.Thread(
                target=self._read_all, args=(name,), daemon=True)
                for name in ('stdout', 'stderr') if getattr(self, name)]
            for reader in self._readers:
                reader.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        for reader in self._readers:
            reader.join(None if deadline is None
                        else max(0, deadline - time.monotonic()))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        self.wait(None if deadline is None
                  else max(0, deadline - time.monotonic()))
        return self._output.get('stdout'), self._output.get('stderr')

    def _read_all(self, name):
        self._output[name] = getattr(self, name).read()

    def send_signal(self, sig):
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)


class _Server:
    def __init__(self, kind):
        # In /tmp: a unix socket's path may not be longer than 107 bytes,
        # which a TMPDIR of CI's may be.
        self.dir = tempfile.mkdtemp(prefix='fork-server-', dir='/tmp')
        self.path = os.path.join(self.dir, 'sock')
        self.proc = subprocess.Popen(
            [sys.executable, '-m', 'tests.fork_server', self.path, kind],
            stdin=subprocess.PIPE, cwd=_repo_root())
        self.env = dict(os.environ)
        self.pid = os.getpid()

    def spawn(self, request, fds):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        _connect(sock, self.path, self.proc)
        payload = json.dumps(request).encode()
        socket.send_fds(sock, [_HEADER.pack(len(payload)) + payload], fds)
        line = _read_line(sock)
        if not line:
            sock.close()
            raise RuntimeError('the fork server did not start %s'
                               % request['argv'])
        return int(line), sock

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def _read_line(sock):
    """One line, read byte by byte: nothing after it is taken from the
    socket (the exit status may follow the pid at once)."""
    line = b''
    while not line.endswith(b'\n'):
        byte = sock.recv(1)
        if not byte:
            break
        line += byte
    return line.strip()


def _connect(sock, path, proc, timeout=60.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock.connect(path)
            return
        except (FileNotFoundError, ConnectionRefusedError):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError('the fork server is not serving (%s)'
                                   % proc.returncode)
            time.sleep(0.02)


def _repo_root():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_servers = {}
_servers_lock = threading.Lock()


def _the_server(program):
    (_how, target), _ = program
    kind = _KINDS.get(os.path.basename(target) if _how == 'script'
                      else target, 'services')
    with _servers_lock:
        server = _servers.get(kind)
        if server is None or server.pid != os.getpid():
            server = _servers[kind] = _Server(kind)
            atexit.register(server.stop)
        return server


def _program(argv):
    """(('module', name) or ('script', path), the child's sys.argv) for
    what the fork server can run as ``argv`` would run; None for
    anything else."""
    if not argv:
        return None
    exe = os.path.abspath(str(argv[0]))
    if exe == os.path.abspath(sys.executable):
        if len(argv) >= 3 and argv[1] == '-m':
            return ('module', argv[2]), list(argv[2:])
        return None
    if os.path.dirname(exe) == BIN and _is_our_script(exe):
        return ('script', exe), [exe] + list(argv[1:])
    return None


def _is_our_script(path):
    try:
        with open(path, 'rb') as f:
            first = f.readline()
    except OSError:
        return False
    # This venv's python, by any of its names (python, python3).
    interpreter = first[2:].strip().decode(errors='replace')
    return first.startswith(b'#!') and \
        os.path.dirname(os.path.abspath(interpreter)) == BIN


def _same_start(env, server_env):
    def start_keys(e):
        return {k: v for k, v in e.items()
                if k.startswith(_START_ENV_PREFIXES)}
    return start_keys(env) == start_keys(server_env)


def popen(argv, stdin=None, stdout=None, stderr=None, cwd=None, env=None,
          start_new_session=False, text=False, errors=None):
    """A started child, as ``subprocess.Popen`` with these arguments would
    give (see the module's docstring for what goes to Popen itself)."""
    argv = [str(a) for a in argv]
    program = _program(argv)
    env = dict(os.environ if env is None else env)
    server = _the_server(program) if program else None
    if server is None or not _same_start(env, server.env):
        return subprocess.Popen(argv, stdin=stdin, stdout=stdout,
                                stderr=stderr, cwd=cwd, env=env,
                                start_new_session=start_new_session,
                                text=text, errors=errors)
    ends = _Ends(text, errors)
    try:
        fds = [ends.child_end(stdin, 0, 'stdin'),
               ends.child_end(stdout, 1, 'stdout')]
        fds.append(fds[1] if stderr == subprocess.STDOUT
                   else ends.child_end(stderr, 2, 'stderr'))
        (kind, target), sys_argv = program
        request = {'kind': kind, 'target': target, 'argv': sys_argv,
                   'command': argv,
                   'cwd': os.path.abspath(cwd or os.getcwd()), 'env': env,
                   'new_session': bool(start_new_session)}
        pid, sock = server.spawn(request, fds)
    except BaseException:
        ends.close_ours()
        raise
    finally:
        ends.close_childs()
    return ForkedProcess(argv, pid, sock, **ends.ours)


class _Ends:
    """The child's ends of its standard streams, and ours of its pipes."""

    def __init__(self, text, errors):
        self.text, self.errors = text, errors
        self.childs, self.ours = [], {}

    def child_end(self, spec, default, name):
        if spec is None:
            return default
        if spec == subprocess.PIPE:
            read_fd, write_fd = os.pipe()
            child, mine = ((read_fd, write_fd) if name == 'stdin'
                           else (write_fd, read_fd))
            self.childs.append(child)
            mode = ('w' if name == 'stdin' else 'r') + \
                ('' if self.text else 'b')
            self.ours[name] = os.fdopen(
                mine, mode, errors=self.errors if self.text else None)
            return child
        if spec == subprocess.DEVNULL:
            fd = os.open(os.devnull, os.O_RDWR)
            self.childs.append(fd)
            return fd
        return spec if isinstance(spec, int) else spec.fileno()

    def close_childs(self):
        for fd in self.childs:
            os.close(fd)

    def close_ours(self):
        for f in self.ours.values():
            f.close()


def run(argv, input=None, capture_output=False, text=False, timeout=None,
        check=False, cwd=None, env=None, errors=None):
    """``subprocess.run`` for what ``popen`` serves: output through
    temporary files, not pipes."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = popen(argv, stdin=subprocess.PIPE if input is not None
                     else None,
                     stdout=out if capture_output else None,
                     stderr=err if capture_output else None,
                     cwd=cwd, env=env)
        if input is not None:
            proc.stdin.write(input.encode() if isinstance(input, str)
                             else input)
            proc.stdin.close()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        results = []
        for f in (out, err):
            f.seek(0)
            data = f.read() if capture_output else None
            if data is not None and text:
                data = data.decode(errors=errors or 'strict')
            results.append(data)
    done = subprocess.CompletedProcess(argv, proc.returncode, *results)
    if check:
        done.check_returncode()
    return done


def _fd(spec, default, opened):
    if spec is None:
        return default
    if spec == subprocess.DEVNULL or spec == subprocess.PIPE:
        fd = os.open(os.devnull, os.O_RDWR)
        opened.append(fd)
        return fd
    if isinstance(spec, int):
        return spec
    return spec.fileno()


# --- the server --------------------------------------------------------

def _serve(path, kind):
    """Serve until stdin ends; returns only in a forked child, with what
    that child is to run."""
    for name in PRELOAD[kind]:
        importlib.import_module(name)
    preloaded = [name for name in _NOT_PRELOADED.get(kind, ())
                 if name in sys.modules]
    if preloaded:
        raise SystemExit('the fork server must not import %s' % preloaded)
    # Objects made by the imports are never collected again: the
    # children's pages stay shared.
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *args: None)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, 'accept')
    sel.register(wake_r, selectors.EVENT_READ, 'reap')
    sel.register(sys.stdin.fileno(), selectors.EVENT_READ, 'parent')
    waiting = {}
    while True:
        for key, _ in sel.select():
            if key.data == 'parent' and not os.read(sys.stdin.fileno(), 512):
                return None
            if key.data == 'reap':
                _drain(wake_r)
                _reap(waiting)
            if key.data == 'accept':
                conn, _ = listener.accept()
                job = _start_child(conn, waiting)
                if job is not None:
                    # The child: nothing of the server's stays open.
                    sel.close()
                    listener.close()
                    for fd in (wake_r, wake_w):
                        os.close(fd)
                    for other in waiting.values():
                        other.close()
                    return job


def _drain(fd):
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _reap(waiting):
    while waiting:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = waiting.pop(pid, None)
        if conn is not None:
            try:
                conn.sendall(b'%d\n' % os.waitstatus_to_exitcode(status))
            except OSError:
                pass
            conn.close()


def _start_child(conn, waiting):
    request, fds = _receive(conn)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        conn.close()
        if request['new_session']:
            os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in set(fds):
            if fd > 2:
                os.close(fd)
        os.chdir(request['cwd'])
        os.environ.clear()
        os.environ.update(request['env'])
        return request
    for fd in fds:
        os.close(fd)
    conn.sendall(b'%d\n' % pid)
    waiting[pid] = conn
    return None


def _receive(conn):
    data, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    (length,) = _HEADER.unpack(data[:_HEADER.size])
    data = data[_HEADER.size:]
    while len(data) < length:
        chunk = conn.recv(65536)
        if not chunk:
            raise EOFError('request cut short')
        data += chunk
    return json.loads(data), fds


def _run(job):
    """Run the program as ``python -m`` or the console script would."""
    import runpy
    import setproctitle
    # What ps and /proc/PID/cmdline show: the command, not the server's.
    setproctitle.setproctitle(' '.join(job['command']))
    sys.argv = list(job['argv'])
    if job['kind'] == 'module':
        sys.path[0] = job['cwd']
        # As under ``python -m``: __main__ is a copy of its own, apart
        # from the module of that name that others import.
        sys.modules.pop(job['target'], None)
        runpy.run_module(job['target'], run_name='__main__', alter_sys=True)
    else:
        sys.path[0] = os.path.dirname(job['target'])
        runpy.run_path(job['target'], run_name='__main__')


def main(argv):
    job = _serve(argv[1], argv[2])
    if job is not None:
        _run(job)


if __name__ == '__main__':
    main(sys.argv)
