"""cyborg-lite-api: serve the REST API with gunicorn.

    cyborg-lite-api [--config-file F]

Listens on [api] host:port with [api] workers processes. gunicorn is a
pre-fork server: each worker is its own process, so a slow request or a
crash in one never blocks the others, and workers are restarted if they
die (docs/api.md says why gunicorn).
"""
import sys

from gunicorn.app import base as gunicorn_base

from cyborg_lite.api import gunicorn_worker
from cyborg_lite.common import config
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF
from cyborg_lite.db.sql import session
from cyborg_lite.metrics import multiproc_dir as metrics_dir
from cyborg_lite.notifications import events as notifications
from cyborg_lite.rpc import pins


class _Server(gunicorn_base.BaseApplication):
    def __init__(self, argv):
        self.argv = argv
        super().__init__()

    def load_config(self):
        self.cfg.set('bind', '%s:%d' % (CONF.api.host, CONF.api.port))
        self.cfg.set('workers', CONF.api.workers)
        # NOTE: threads, not more processes, for concurrency inside a
        # worker: handlers mostly wait on the database or RPC.
        self.cfg.set('threads', 4)
        # gthread, with gunicorn's own error pages in the API's JSON form.
        self.cfg.set('worker_class', gunicorn_worker.ThreadWorker)
        self.cfg.set('accesslog', '-')
        # NOTE: gunicorn >= 24 opens a control socket at one fixed path per
        # user ($XDG_RUNTIME_DIR or ~/.gunicorn/gunicorn.ctl); a second API
        # on the host (or a test cluster) would take it over. We do not
        # use it, so it is off.
        if 'control_socket_disable' in self.cfg.settings:
            self.cfg.set('control_socket_disable', True)
        # A worker's queued notifications go before it does.
        self.cfg.set('worker_exit', _worker_exiting)
        if metrics_dir.active():
            # A worker's live values go with it.
            self.cfg.set('child_exit', _worker_exited)

    def load(self):
        # NOTE: loaded in each worker after fork, so no database
        # connection or RPC transport is shared between processes.
        from cyborg_lite.api import deploy
        from cyborg_lite.api import service_heartbeat
        # Each worker beats: the API on this host is up while one lives.
        service_heartbeat.start(CONF.host, CONF.agent.heartbeat_interval)
        return deploy.loadapp_serving(CONF)


def _worker_exiting(_server, _worker):
    # NOTE: gunicorn calls it in the worker, after its last request.
    from cyborg_lite.api import metrics
    metrics.fold_all()
    notifications.flush_at_stop()


def _worker_exited(_server, worker):
    metrics_dir.mark_process_dead(worker.pid)


def _metrics_dir():
    """prometheus_client's multi-process directory for the workers, set
    before any of them imports it (None with one worker or no
    metrics); whether it is ours to remove at exit."""
    if not CONF.metrics.enabled or CONF.api.workers < 2:
        return None, False
    return (metrics_dir.prepare(CONF.metrics.multiprocess_dir),
            not CONF.metrics.multiprocess_dir)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        config.parse_args(argv)
        # NOTE: workers connect on first request; a bad URL would be a
        # 500 on each of them instead of this one line.
        session.validate_url(CONF.database.connection)
        pins.check(CONF)
        from cyborg_lite.api import version_pin
        version_pin.check(CONF)
    except exception.ConfigError as exc:
        print('cyborg-lite-api: error: %s' % exc, file=sys.stderr)
        return 1
    # gunicorn parses sys.argv itself; it must not see ours.
    sys.argv = sys.argv[:1]
    directory, ours = _metrics_dir()
    try:
        _Server(argv).run()
    finally:
        if ours:
            metrics_dir.remove(directory)
    return 0


if __name__ == '__main__':
    sys.exit(main())
