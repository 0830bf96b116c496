"""Real servers for tests, started from the system binaries.

Each server runs on a loopback port in a temp directory and is stopped
after. When a binary is missing the test is skipped with the reason,
except under CI=true, where a missing server is a failure.
"""
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

import pytest


def under_ci():
    return os.environ.get('CI', '').lower() in ('1', 'true', 'yes')


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


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
        pytest.skip(reason)
    return path


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
        opts = ('-h 127.0.0.1 -p %d -k %s -F -c fsync=off '
                '-c full_page_writes=off -c max_connections=200'
                % (self.port, self.basedir))
        _run(self._cmd([self.pg_ctl, '-D', self.datadir, '-o', opts, '-l',
                        os.path.join(self.basedir, 'pg.log'), '-w', '-t',
                        '60', 'start']),
             cwd=self.basedir)
        return self

    def stop(self):
        subprocess.run(self._cmd([self.pg_ctl, '-D', self.datadir, '-m',
                                  'immediate', '-w', 'stop']),
                       capture_output=True, cwd=self.basedir)
        shutil.rmtree(self.basedir, ignore_errors=True)

    def url(self, dbname='postgres'):
        return 'postgresql+psycopg2://%s@127.0.0.1:%d/%s' % (
            self.user, self.port, dbname)

    def create_database(self, dbname):
        import sqlalchemy as sa
        engine = sa.create_engine(self.url(), isolation_level='AUTOCOMMIT')
        with engine.connect() as conn:
            conn.exec_driver_sql('CREATE DATABASE "%s"' % dbname)
        engine.dispose()
        return self.url(dbname)
