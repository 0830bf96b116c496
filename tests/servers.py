"""Real servers for tests, started from the system binaries.

Each server runs on a loopback port in a temp directory and is stopped
after. When a binary is missing the test is skipped with the reason,
except under CI=true, where a missing server is a failure.
"""
import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import socketserver
import subprocess
import tempfile
import threading
import time
from wsgiref import simple_server

import pytest

# One free_port for the product and the tests (servers.free_port).
from cyborg_lite.cmd.placement_server import free_port
from cyborg_lite.cmd import processes


def under_ci():
    return os.environ.get('CI', '').lower() in ('1', 'true', 'yes')


class _ThreadingWSGIServer(socketserver.ThreadingMixIn,
                           simple_server.WSGIServer):
    # One thread per request: the clients open several connections.
    daemon_threads = True


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


# socketserver looks for a shutdown() every poll_interval (half a second
# by default), and shutdown() waits for it: the suite stops thousands.
POLL_INTERVAL = 0.02


def serve_in_thread(httpd):
    """Serve ``httpd`` on a daemon thread whose ``httpd.shutdown()`` ends
    at once; the thread."""
    thread = threading.Thread(target=httpd.serve_forever,
                              kwargs={'poll_interval': POLL_INTERVAL},
                              daemon=True)
    thread.start()
    return thread


@contextlib.contextmanager
def serving(app):
    """The WSGI ``app`` on a free loopback port, a thread per request,
    no request log; yields its base URL and stops it after."""
    httpd = simple_server.make_server('127.0.0.1', 0, app,
                                      server_class=_ThreadingWSGIServer,
                                      handler_class=_QuietHandler)
    serve_in_thread(httpd)
    try:
        yield 'http://127.0.0.1:%d' % httpd.server_port
    finally:
        httpd.shutdown()
        httpd.server_close()


def wait_for_port(port, timeout=30.0, host='127.0.0.1', proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError('process exited with %s before listening on '
                               '%s' % (proc.returncode, port))
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError('nothing listening on %s:%s after %ss'
                       % (host, port, timeout))


def wait_for_port_closed(port, timeout=30.0, host='127.0.0.1'):
    """Until nothing accepts connections on ``port``: a killed leader's
    children (gunicorn workers) hold its listening socket until they are
    gone themselves, and a new server must not be probed through it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                pass
        except OSError:
            return
        time.sleep(0.05)
    raise TimeoutError('%s:%s still accepts connections after %ss'
                       % (host, port, timeout))


def find_binary(name, extra_globs=()):
    path = shutil.which(name)
    if path:
        return path
    for pattern in extra_globs:
        found = sorted(glob.glob(pattern))
        if found:
            return found[-1]
    return None


def require_binary(name, package, extra_globs=()):
    """The path of ``name``; skip (or fail under CI) when it is missing."""
    path = find_binary(name, extra_globs)
    if path is None:
        reason = ('%s not found: install the %s package (apt-get install '
                  '%s) to run this test' % (name, package, package))
        if under_ci():
            pytest.fail(reason + ' [CI=true: a missing server is a failure]')
        pytest.skip(reason)  # only outside CI: under CI=true it failed above
    return path


def require_python(env, reason):
    """The Python that the variable ``env`` names (a venv with another
    OpenStack project); skip with ``reason`` (or fail under CI) when it
    is not set."""
    path = os.environ.get(env)
    if path:
        return path
    if under_ci():
        pytest.fail('CI=true: ' + reason)
    pytest.skip(reason)  # only outside CI: under CI=true it failed above


def remove_later(path):
    """Remove the directory ``path`` of a stopped server in a process of
    its own, not waited for: a session's PostgreSQL holds a database of a
    few MB per test, gigabytes by the end, and removing them took 10-15 s
    at the end of every pytest worker."""
    subprocess.Popen(['rm', '-rf', '--', path], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True)


def _run(args, **kwargs):
    proc = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if proc.returncode != 0:
        raise RuntimeError('%s failed (%s):\n%s%s' % (
            ' '.join(args), proc.returncode, proc.stdout, proc.stderr))
    return proc


class PostgresServer:
    """A private PostgreSQL cluster: initdb in a temp dir, loopback port."""

    PG_GLOBS = ('/usr/lib/postgresql/*/bin/%s',)

    def __init__(self):
        # NOTE: not under pytest's tmp dir: that is 0700 root and the
        # unprivileged server user could not reach it.
        self.basedir = tempfile.mkdtemp(prefix='cyborg-lite-pg-')
        self.datadir = os.path.join(self.basedir, 'data')
        self.port = free_port()
        self.user = 'postgres'
        self.initdb = require_binary(
            'initdb', 'postgresql', [g % 'initdb' for g in self.PG_GLOBS])
        self.pg_ctl = os.path.join(os.path.dirname(self.initdb), 'pg_ctl')
        if not os.path.exists(self.pg_ctl):
            self.pg_ctl = require_binary(
                'pg_ctl', 'postgresql', [g % 'pg_ctl' for g in self.PG_GLOBS])
        self._run_as = None
        if os.geteuid() == 0:
            # NOTE: PostgreSQL refuses to run as root; use an unprivileged
            # account that owns the temp dir.
            for name in ('postgres', 'nobody'):
                try:
                    self._run_as = pwd.getpwnam(name)
                    break
                except KeyError:
                    continue

    def _cmd(self, args):
        if self._run_as is None:
            return args
        return ['setpriv', '--reuid=%d' % self._run_as.pw_uid,
                '--regid=%d' % self._run_as.pw_gid, '--clear-groups'] + args

    def start(self):
        os.makedirs(self.basedir, exist_ok=True)
        if self._run_as is not None:
            os.chown(self.basedir, self._run_as.pw_uid, self._run_as.pw_gid)
            os.chmod(self.basedir, 0o700)
        _run(self._cmd([self.initdb, '-D', self.datadir, '-U', self.user,
                        '--auth=trust', '-E', 'UTF8', '--no-sync']),
             cwd=self.basedir)
        self.start_server()
        return self

    def start_server(self):
        """Start the server on the existing data directory (again)."""
        opts = ('-h 127.0.0.1 -p %d -k %s -F -c fsync=off '
                '-c full_page_writes=off -c max_connections=200'
                % (self.port, self.basedir))
        _run(self._cmd([self.pg_ctl, '-D', self.datadir, '-o', opts, '-l',
                        os.path.join(self.basedir, 'pg.log'), '-w', '-t',
                        '60', 'start']),
             cwd=self.basedir)

    def stop_server(self, mode='fast'):
        """Stop the server, keeping its data for ``start_server``."""
        subprocess.run(self._cmd([self.pg_ctl, '-D', self.datadir, '-m',
                                  mode, '-w', 'stop']),
                       capture_output=True, cwd=self.basedir)

    def stop(self):
        self.stop_server('immediate')
        remove_later(self.basedir)

    def url(self, dbname='postgres'):
        return 'postgresql+psycopg2://%s@127.0.0.1:%d/%s' % (
            self.user, self.port, dbname)

    def create_database(self, dbname, template=None):
        """A new database; with ``template``, a copy of that one (file by
        file: a checkpoint costs nothing with fsync off, and a small
        database copies faster than through the WAL)."""
        import sqlalchemy as sa
        statement = 'CREATE DATABASE "%s"' % dbname
        if template is not None:
            statement += ' TEMPLATE "%s" STRATEGY FILE_COPY' % template
        engine = sa.create_engine(self.url(), isolation_level='AUTOCOMMIT')
        with engine.connect() as conn:
            conn.exec_driver_sql(statement)
        engine.dispose()
        return self.url(dbname)


class MariaDBServer:
    """A private MariaDB server: mariadb-install-db in a temp dir, loopback.

    Strict SQL mode and utf8mb4, as a production server should be set up;
    the server keeps MariaDB's default REPEATABLE READ so that the READ
    COMMITTED our engines ask for is what the tests see. As root the
    server runs as the mysql (else nobody) account, as PostgresServer
    does. Clients log in as ``cyborg``/``cyborg`` over TCP.
    """

    SBIN_GLOBS = ('/usr/sbin/%s', '/usr/libexec/%s')
    USER = 'cyborg'
    PASSWORD = 'cyborg'

    def __init__(self):
        self.mariadbd = find_binary('mariadbd', [g % 'mariadbd' for g in
                                                self.SBIN_GLOBS])
        if self.mariadbd is None:
            self.mariadbd = require_binary(
                'mysqld', 'mariadb-server',
                [g % 'mysqld' for g in self.SBIN_GLOBS])
        self.install_db = find_binary('mariadb-install-db') or \
            require_binary('mysql_install_db', 'mariadb-server')
        self.basedir = tempfile.mkdtemp(prefix='cyborg-lite-mariadb-')
        self.datadir = os.path.join(self.basedir, 'data')
        self.socket = os.path.join(self.basedir, 'mysqld.sock')
        self.tmpdir = os.path.join(self.basedir, 'tmp')
        self.port = free_port()
        self._proc = None
        self._run_as = None
        if os.geteuid() == 0:
            for name in ('mysql', 'nobody'):
                try:
                    self._run_as = pwd.getpwnam(name)
                    break
                except KeyError:
                    continue

    def _path(self, name):
        return os.path.join(self.basedir, name)

    def _install(self):
        # NOTE: a private tmpdir: in the shared /tmp, the bootstrap's
        # temporary tables were now and then removed under it (it then
        # fails with "Unknown table 'mysql.tmp_user_nopasswd,...'").
        os.mkdir(self.tmpdir)
        args = [self.install_db, '--no-defaults', '--datadir=' +
                self.datadir, '--skip-test-db',
                '--auth-root-authentication-method=normal',
                '--tmpdir=' + self.tmpdir]
        if self._run_as is not None:
            args.append('--user=' + self._run_as.pw_name)
            for path in (self.basedir, self.tmpdir):
                os.chown(path, self._run_as.pw_uid, self._run_as.pw_gid)
            os.chmod(self.basedir, 0o700)
        _run(args, cwd=self.basedir)

    def _create_user(self):
        # NOTE: the install-time root has no password and may log in only
        # on the socket; tests log in as a password user over TCP.
        import pymysql
        conn = pymysql.connect(unix_socket=self.socket, user='root',
                               ssl_disabled=True)
        try:
            with conn.cursor() as cursor:
                cursor.execute("CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY "
                               "'%s'" % (self.USER, self.PASSWORD))
                cursor.execute("GRANT ALL PRIVILEGES ON *.* TO "
                               "'%s'@'127.0.0.1'" % self.USER)
        finally:
            conn.close()

    def _server_args(self):
        args = [self.mariadbd, '--no-defaults', '--datadir=' + self.datadir,
                '--socket=' + self.socket,
                '--pid-file=' + self._path('mysqld.pid'),
                '--log-error=' + self._path('error.log'),
                '--port=%d' % self.port, '--bind-address=127.0.0.1',
                '--tmpdir=' + self.tmpdir,
                '--skip-name-resolve', '--skip-log-bin',
                '--sql-mode=TRADITIONAL',
                '--character-set-server=utf8mb4',
                '--collation-server=utf8mb4_bin',
                '--max-connections=300',
                # A throwaway server on a shared machine: small and no fsync.
                '--innodb-buffer-pool-size=64M',
                '--innodb-log-file-size=32M',
                '--innodb-flush-log-at-trx-commit=0',
                '--innodb-doublewrite=0', '--skip-innodb-adaptive-hash-index',
                # Every test copies some 25 tables into a new database: in
                # the one system tablespace a CREATE TABLE makes no file of
                # its own (0.3 s a copy instead of 1.1 s).
                '--innodb-file-per-table=0']
        if self._run_as is not None:
            args.append('--user=' + self._run_as.pw_name)
        return args

    def start(self, timeout=60.0):
        self._install()
        out = open(self._path('server.out'), 'ab')
        try:
            self._proc = subprocess.Popen(
                self._server_args(), cwd=self.basedir, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            out.close()
        try:
            wait_for_port(self.port, timeout, proc=self._proc)
            self._create_user()
        except Exception as exc:
            log = self.read_log()
            self.stop()
            raise RuntimeError('MariaDB did not start (%s):\n%s'
                               % (exc, log))
        return self

    def stop(self):
        if self._proc is not None:
            processes.stop(self._proc, 30, group=True)
            self._proc = None
        remove_later(self.basedir)

    def read_log(self, chars=4000):
        text = ''
        for name in ('error.log', 'server.out'):
            try:
                with open(self._path(name), errors='replace') as f:
                    text += '==> %s\n%s\n' % (name, f.read()[-chars:])
            except OSError:
                pass
        return text

    # NOTE: PyMySQL (1.2) asks for TLS when it may ("preferred") and
    # loads the system's CA bundle for every connection to do so: 0.13
    # CPU-seconds each, and the suite opens thousands. This server has no
    # TLS; the tests' connections say so.
    def url(self, dbname=''):
        return ('mysql+pymysql://%s:%s@127.0.0.1:%d/%s?charset=utf8mb4'
                '&ssl_disabled=true' % (self.USER, self.PASSWORD, self.port,
                                        dbname))

    def connect(self, database=None):
        """A pymysql connection as the tests' user."""
        import pymysql
        return pymysql.connect(host='127.0.0.1', port=self.port,
                               user=self.USER, password=self.PASSWORD,
                               database=database, ssl_disabled=True)

    def create_database(self, dbname):
        conn = self.connect()
        try:
            with conn.cursor() as cursor:
                cursor.execute('CREATE DATABASE `%s` CHARACTER SET utf8mb4 '
                               'COLLATE utf8mb4_bin' % dbname)
        finally:
            conn.close()
        return self.url(dbname)


class RabbitMQServer:
    """A private RabbitMQ node from the system rabbitmq-server, on loopback.

    Everything lives in a temp dir: the node's database (mnesia), logs,
    config, enabled-plugins file, HOME and its Erlang cookie. The node has
    its own name (cl-<random>@localhost), AMQP listener on 127.0.0.1 only,
    distribution port, and its own epmd on a free port (started here, in
    the foreground, so it is stopped by PID and never collides with a
    system epmd on 4369). As root the node runs as the rabbitmq (else
    nobody) account, as PostgresServer does. ``stop()`` then ``start()``
    restarts the same node on the same port with its data; ``cleanup()``
    stops it and removes the temp dir. guest/guest works on loopback.
    """

    SBIN_GLOBS = ('/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/%s',)

    def __init__(self):
        # NOTE: the real script, not the Debian wrapper in /usr/sbin, which
        # cd's to /var/lib/rabbitmq and su's to the packaged account.
        found = sorted(glob.glob(self.SBIN_GLOBS[0] % 'rabbitmq-server'))
        self.script = found[-1] if found else require_binary(
            'rabbitmq-server', 'rabbitmq-server')
        self.epmd = require_binary(
            'epmd', 'rabbitmq-server', ['/usr/lib/erlang/erts-*/bin/epmd'])
        self.basedir = tempfile.mkdtemp(prefix='cyborg-lite-rmq-')
        self.port = free_port()
        self.dist_port = free_port()
        self.epmd_port = free_port()
        self.nodename = 'cl-%s@localhost' % os.urandom(4).hex()
        self._proc = None
        self._epmd_proc = None
        self._run_as = None
        if os.geteuid() == 0:
            for name in ('rabbitmq', 'nobody'):
                try:
                    self._run_as = pwd.getpwnam(name)
                    break
                except KeyError:
                    continue
        self._write_files()

    @property
    def url(self):
        return 'rabbit://guest:guest@127.0.0.1:%d/' % self.port

    def _path(self, *names):
        return os.path.join(self.basedir, *names)

    def _write_files(self):
        files = {
            'rabbitmq.conf': '\n'.join([
                'listeners.tcp.1 = 127.0.0.1:%d' % self.port,
                'loopback_users.guest = true',
                # NOTE: a tiny test node on a shared machine: never block
                # publishers for lack of disk or memory headroom.
                'disk_free_limit.absolute = 1MB',
                'vm_memory_high_watermark.relative = 0.9',
                'log.console = false',
                'log.file.level = info', '']),
            'enabled_plugins': '[].\n',
            'rabbitmq-env.conf': '',
            '.erlang.cookie': os.urandom(16).hex(),
        }
        for name, text in files.items():
            with open(self._path(name), 'w') as f:
                f.write(text)
        os.chmod(self._path('.erlang.cookie'), 0o400)
        if self._run_as is not None:
            for dirpath, dirnames, filenames in os.walk(self.basedir):
                for name in [dirpath] + [os.path.join(dirpath, n)
                                         for n in filenames]:
                    os.chown(name, self._run_as.pw_uid,
                             self._run_as.pw_gid)

    def _cmd(self, args):
        if self._run_as is None:
            return args
        return ['setpriv', '--reuid=%d' % self._run_as.pw_uid,
                '--regid=%d' % self._run_as.pw_gid, '--clear-groups'] + args

    def _env(self):
        env = {
            'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
            'HOME': self.basedir,
            'LANG': 'C.UTF-8',
            'ERL_EPMD_PORT': str(self.epmd_port),
            'ERL_EPMD_ADDRESS': '127.0.0.1',
            'RABBITMQ_CONF_ENV_FILE': self._path('rabbitmq-env.conf'),
            'RABBITMQ_NODENAME': self.nodename,
            'RABBITMQ_NODE_IP_ADDRESS': '127.0.0.1',
            'RABBITMQ_NODE_PORT': str(self.port),
            'RABBITMQ_DIST_PORT': str(self.dist_port),
            'RABBITMQ_MNESIA_BASE': self._path('mnesia'),
            'RABBITMQ_LOG_BASE': self._path('log'),
            'RABBITMQ_CONFIG_FILE': self._path('rabbitmq.conf'),
            'RABBITMQ_ENABLED_PLUGINS_FILE': self._path('enabled_plugins'),
            'RABBITMQ_PID_FILE': self._path('rabbitmq.pid'),
            'RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS':
                '-kernel inet_dist_use_interface {127,0,0,1} '
                '-start_epmd false',
        }
        return env

    def start(self, timeout=90.0):
        if self._proc is not None:
            return self
        out = open(self._path('server.out'), 'ab')
        try:
            if self._epmd_proc is None:
                self._epmd_proc = subprocess.Popen(
                    self._cmd([self.epmd, '-port', str(self.epmd_port),
                               '-address', '127.0.0.1']),
                    env=self._env(), cwd=self.basedir, stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True)
                wait_for_port(self.epmd_port, 10, proc=self._epmd_proc)
            self._proc = subprocess.Popen(
                self._cmd([self.script]), env=self._env(), cwd=self.basedir,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            out.close()
        try:
            self._wait_amqp(timeout)
        except Exception as exc:
            log = self.read_log()
            self.stop()
            raise RuntimeError('RabbitMQ did not start (%s):\n%s'
                               % (exc, log))
        return self

    def _wait_amqp(self, timeout):
        import kombu
        deadline = time.monotonic() + timeout
        wait_for_port(self.port, timeout, proc=self._proc)
        while True:
            # NOTE: the port opens before the default vhost and the guest
            # user exist; an AMQP login is the real readiness check.
            conn = kombu.Connection(self.url.replace('rabbit:', 'amqp:'),
                                    connect_timeout=2)
            try:
                conn.connect()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                if self._proc.poll() is not None:
                    raise RuntimeError('exited with %s'
                                       % self._proc.returncode)
                time.sleep(0.2)
            finally:
                conn.release()

    def stop(self, timeout=30.0):
        """Stop the node (its epmd too); the data dir stays for start()."""
        # NOTE: SIGTERM to the script's group: the script turns it into a
        # clean shutdown of the Erlang VM and waits for it.
        if self._proc is not None:
            processes.stop(self._proc, timeout, group=True)
        self._proc = None
        if self._epmd_proc is not None:
            processes.stop(self._epmd_proc, 5, group=True)
        self._epmd_proc = None

    def kill(self):
        """SIGKILL the node's process group (a crashed broker)."""
        if self._proc is not None:
            processes.stop(self._proc, 30, signal.SIGKILL, group=True)
        self._proc = None

    def restart(self, while_down=None):
        """Stop, call ``while_down()`` (a test waits there until its
        clients saw the broker gone), start again."""
        self.stop()
        if while_down is not None:
            while_down()
        return self.start()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.basedir, ignore_errors=True)

    def read_log(self, chars=4000):
        text = ''
        for name in sorted(glob.glob(self._path('log', '*.log'))) + [
                self._path('server.out')]:
            try:
                with open(name, errors='replace') as f:
                    text += '==> %s\n%s\n' % (name, f.read()[-chars:])
            except OSError:
                pass
        return text
