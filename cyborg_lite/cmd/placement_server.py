"""The real openstack-placement WSGI app on a loopback port.

Used by the all-in-one (``make run``) and by the tests. Placement keeps its
database engine in a process-global enginefacade, so each server runs in its
own subprocess (``python -m cyborg_lite.cmd.placement_server PORT
DB_PATH``) with its own SQLite file and ``auth_strategy = noauth2``:
any request with ``X-Auth-Token: admin`` is an admin. ``stop()`` and
``start()`` again reuse the port and the database file, which is how the
outage tests take Placement away and bring it back with its data.

The child never outlives its parent, even one killed with SIGKILL: its
stdin is a pipe whose only writer is the parent, and it exits when that
pipe reaches end of file (the kernel closes it with the parent). A pipe,
not prctl(PR_SET_PDEATHSIG): that fires when the *thread* that started
the child ends, which need not be the parent's end.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from cheroot import wsgi as cheroot_wsgi

from cyborg_lite.cmd import processes

TOKEN = 'admin'
# Policy that lets the admin token write every provider's inventories in
# one POST /reshaper (Placement's default allows it to the service role
# only), as a deployment lets a Cyborg user with the service role. The
# all-in-one's own Placement has it: its writes are all ours.
ADMIN_RESHAPES = {'placement:reshaper:reshape': 'role:admin or role:service'}


class PlacementStartError(RuntimeError):
    """Placement did not answer; the message is one line, ``log`` the
    end of its log."""

    def __init__(self, server, reason):
        self.log = server.read_log()
        last = [line for line in self.log.splitlines() if line.strip()]
        super().__init__('Placement did not start on port %d (%s)%s; log: '
                         '%s' % (server.port, reason,
                                 ': %s' % last[-1].strip() if last else '',
                                 server.log_path))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class PlacementServer:
    """Start/stop/restart one Placement process; ``endpoint`` is its URL."""

    def __init__(self, port=None, basedir=None, policy=None, db_url=None,
                 workers=0, popen=subprocess.Popen):
        """``policy``: {rule: check string} overriding Placement's default
        policy (e.g. letting the admin token reshape, as a deployment
        whose Cyborg user has the service role). ``db_url``: a database
        (e.g. PostgreSQL) instead of the SQLite file. ``workers`` > 0:
        served by gunicorn with that many worker processes (gthread,
        GUNICORN_THREADS each), not one cheroot process (the
        child-exits-with-parent guarantee then does not hold: stop() it).
        Both keep connections alive between requests, as Placement's
        deployments (uwsgi, mod_wsgi) do. ``popen``: what starts the
        process, called as ``subprocess.Popen`` (the tests start theirs
        from a process that has imported Placement already)."""
        self.port = port or free_port()
        self.policy = dict(policy or {})
        self.db_url = db_url
        self.workers = workers
        self._popen = popen
        self._own_dir = basedir is None
        self.basedir = basedir or tempfile.mkdtemp(prefix='placement-')
        self.db_path = os.path.join(self.basedir, 'placement.sqlite')
        self.log_path = os.path.join(self.basedir, 'placement.log')
        self.endpoint = 'http://127.0.0.1:%d' % self.port
        self._proc = None

    def start(self, timeout=60.0):
        if self._proc is not None:
            return self
        database = self.db_url or self.db_path
        policy_path = ''
        if self.policy:
            policy_path = os.path.join(self.basedir, 'policy.json')
            with open(policy_path, 'w') as f:
                json.dump(self.policy, f)
        argv = [sys.executable, '-m', 'cyborg_lite.cmd.placement_server',
                str(self.port), database, policy_path]
        env = None
        if self.workers:
            # The schema and standard traits once, before the workers race
            # to create them.
            subprocess.run(argv[:3] + ['sync', database, policy_path],
                           check=True, capture_output=True)
            env = dict(os.environ, **{_DB_ENV: database,
                                      _POLICY_ENV: policy_path})
            # NOTE: gthread, not the sync worker, which closes every
            # connection after one request.
            argv = [sys.executable, '-m', 'gunicorn', '-w',
                    str(self.workers), '-k', 'gthread', '--threads',
                    str(GUNICORN_THREADS), '--keep-alive',
                    str(SOCKET_TIMEOUT), '-b', '127.0.0.1:%d' % self.port,
                    '--timeout', '300',
                    'cyborg_lite.cmd.placement_server:gunicorn_app()']
        log = open(self.log_path, 'ab')
        try:
            # stdin: the pipe whose end tells the child we are gone.
            self._proc = self._popen(
                argv, cwd=self.basedir, env=env, stdin=subprocess.PIPE,
                stdout=log, stderr=subprocess.STDOUT)
        finally:
            log.close()
        try:
            self._wait_ready(timeout)
        except BaseException as exc:
            self.stop()
            if isinstance(exc, Exception):
                raise PlacementStartError(self, exc) from exc
            raise
        return self

    @property
    def pid(self):
        """The server's process id (gunicorn's master), None if stopped."""
        return None if self._proc is None else self._proc.pid

    def _wait_ready(self, timeout):
        # NOTE: a listening socket is not enough: the app answers only
        # once migrations and trait/RC syncing are done.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError('exited with %s' % self._proc.returncode)
            try:
                with urllib.request.urlopen(self.endpoint + '/',
                                            timeout=1) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        raise TimeoutError('Placement not ready after %ss' % timeout)

    def stop(self):
        if self._proc is None:
            return
        processes.stop(self._proc, 10)
        self._proc.stdin.close()
        self._proc = None

    def restart(self):
        self.stop()
        return self.start()

    def cleanup(self):
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.basedir, ignore_errors=True)

    def read_log(self):
        try:
            with open(self.log_path, errors='replace') as f:
                return f.read()[-4000:]
        except OSError:
            return ''


# Threads serving requests; a connection kept alive between requests
# holds none. (wsgiref, served before, speaks HTTP/1.0: a new connection
# for every request, as no deployment of Placement does.)
THREADS = 32
KEEP_ALIVE_CONNECTIONS = 1024
# Seconds a connection may stay silent, mid-request or between requests.
SOCKET_TIMEOUT = 60
# Threads of each gunicorn worker (``workers`` > 0).
GUNICORN_THREADS = 4


def _serve(app, port):
    server = cheroot_wsgi.Server(
        ('127.0.0.1', port), app, numthreads=THREADS,
        request_queue_size=1024, timeout=SOCKET_TIMEOUT,
        server_name='placement')
    server.keep_alive_conn_limit = KEEP_ALIVE_CONNECTIONS
    server.start()


def build_app(database, policy_path=None):
    """The Placement WSGI app on ``database`` (a SQLite file's path or a
    database URL); runs in the child only."""
    from oslo_config import cfg
    from oslo_policy import opts as policy_opts
    from placement import conf as placement_conf
    from placement import db_api
    from placement import deploy

    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    url = database if '://' in database else 'sqlite:///%s' % database
    conf.set_default('connection', url, group='placement_database')
    conf.set_default('sync_on_startup', True, group='placement_database')
    conf([], project='placement', default_config_files=[])
    conf.set_override('auth_strategy', 'noauth2', group='api')
    if policy_path:
        policy_opts.set_defaults(conf, policy_file=policy_path)
    db_api.configure(conf)
    return deploy.loadapp(conf)


_READS = frozenset(('GET', 'HEAD', 'OPTIONS'))


def one_writer_at_a_time(app):
    """``app`` with its writing requests served one at a time.

    For Placement on a SQLite file in one threaded process (the
    all-in-one's, the tests'): its transactions start deferred, so two
    writing at once may both hold a read lock and want the write lock,
    and SQLite refuses one of them at once ("database is locked") instead
    of waiting: a 500 for a PUT of allocations while a conductor was
    publishing. A server database (PostgreSQL, MySQL) needs no such lock.
    """
    lock = threading.Lock()

    def serve(environ, start_response):
        if environ.get('REQUEST_METHOD', 'GET') in _READS:
            return app(environ, start_response)
        with lock:
            # NOTE: the whole body is produced inside the lock: Placement
            # answers with a list, its transaction already ended.
            return list(app(environ, start_response))
    return serve


def _exit_with_parent(pipe):
    """Exit once ``pipe`` (stdin, written by no one but the parent) ends."""
    def watch():
        while pipe.read(4096):
            pass
        os._exit(0)
    threading.Thread(target=watch, name='parent-watch', daemon=True).start()


_DB_ENV = 'CYBORG_LITE_PLACEMENT_DATABASE'
_POLICY_ENV = 'CYBORG_LITE_PLACEMENT_POLICY'


def gunicorn_app():
    """The app for gunicorn's workers (database and policy from env)."""
    return build_app(os.environ[_DB_ENV], os.environ.get(_POLICY_ENV) or None)


def main(argv):
    if argv[1] == 'sync':
        build_app(argv[2], argv[3] or None)
        return
    port, database = int(argv[1]), argv[2]
    _exit_with_parent(sys.stdin.buffer)
    app = build_app(database, argv[3] if len(argv) > 3 and argv[3] else None)
    if '://' not in database or database.startswith('sqlite'):
        app = one_writer_at_a_time(app)
    _serve(app, port)


if __name__ == '__main__':
    main(sys.argv)
