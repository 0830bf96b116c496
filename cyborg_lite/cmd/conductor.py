"""cyborg-lite-conductor: applies agent reports, runs the workflows.

    cyborg-lite-conductor [--config-file F ...]

Runs ``[conductor]workers`` processes sharing the RPC topic until SIGTERM
or SIGINT, then stops each cleanly (calls in flight finish). A bad
configuration, an unknown transport or an unmigrated database is one
line on stderr and exit status 1; so is a database still unreachable
after [database]max_retries tries (it may be starting too).
"""
import os
import signal
import sys

from oslo_log import log as logging

from cyborg_lite.cmd import service as service_cmd
from cyborg_lite.cmd import stop_signals
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF
from cyborg_lite.db import migration
from cyborg_lite.db.sql import session
from cyborg_lite.metrics import multiproc_dir as metrics_dir
from cyborg_lite.rpc import inproc as inproc_messaging
from cyborg_lite.rpc import transport as rpc

LOG = logging.getLogger(__name__)


def _check_database():
    session.validate_url(CONF.database.connection)
    try:
        session.wait_until_reachable(CONF.database.max_retries,
                                     CONF.database.retry_interval)
    except exception.DatabaseUnavailable as exc:
        raise exception.DatabaseUnavailable(
            message='the database is unreachable after %d tries %d s '
                    'apart ([database]max_retries, retry_interval); the log '
                    'says why' % (CONF.database.max_retries + 1,
                                  CONF.database.retry_interval)) from exc
    if migration.current() != migration.head():
        # NOTE: a SQLAlchemy URL is a tuple: '%s' % url is a TypeError.
        url = session.get_engine().url.render_as_string(hide_password=True)
        raise exception.ConfigError(
            reason='database %s is not at the latest schema revision; run '
                   'cyborg-lite-dbsync upgrade' % url)


def _check_peers():
    """ServiceTooOld for the first running service (heartbeat within
    [conductor]agent_down_time) of a release older than the previous one:
    this conductor may not run beside it (Nova's conductor refuses too old
    computes the same way)."""
    from cyborg_lite.common import version
    from cyborg_lite.db import services as services_db
    for service in services_db.list_all():
        if service['heartbeat_age'] < CONF.conductor.agent_down_time:
            version.refuse_if_too_old(service['kind'], service['host'],
                                      service['release'])


def _run_one(metrics_port=None):
    # NOTE: imported late so a forked worker builds its own transport and
    # engine after the fork.
    from cyborg_lite.conductor import service
    if metrics_port:
        service_cmd.serve_metrics(metrics_port)
    return service_cmd.serve(service.ConductorService(CONF))


def _run_workers(count, then=None):
    children = []
    for _ in range(count):
        pid = os.fork()
        if pid == 0:
            os._exit(_run_one())
        children.append(pid)
    if then is not None:
        then()
    stops = stop_signals.StopSignals()

    def a_worker_exited():
        return any(os.waitpid(pid, os.WNOHANG)[0] for pid in children)
    if not stops.wait(poll=0.5, until=a_worker_exited):
        LOG.error('A conductor worker exited; stopping the others')
    status = 0
    for pid in children:
        try:
            os.kill(pid, signal.SIGTERM)
            status |= os.waitpid(pid, 0)[1]
        except ChildProcessError:
            status = 1
    return 1 if status else 0


def main(argv=None):
    prog = 'cyborg-lite-conductor'
    argv = sys.argv[1:] if argv is None else argv
    try:
        service_cmd.load_config(argv)
        _check_database()
        _check_peers()
    except exception.CyborgLiteException as exc:
        return service_cmd.fail(prog, exc)
    except Exception as exc:  # a database that refuses us, for instance
        return service_cmd.fail(prog, '%s: %s' % (type(exc).__name__,
                                                 exc))
    workers = CONF.conductor.workers
    if workers > 1 and inproc_messaging.is_in_process(CONF.transport_url):
        LOG.warning('transport_url is %s: running one conductor instead '
                    'of %d workers', CONF.transport_url, workers)
        workers = 1
    port = CONF.metrics.conductor_port
    if workers == 1:
        return _run_one(port)
    # The parent keeps no transport or connection across the fork.
    rpc.cleanup()
    session.dispose_all()
    if not port:
        return _run_workers(workers)
    # NOTE: set before any worker imports prometheus_client; the parent
    # serves every worker's series, added up.
    directory = metrics_dir.prepare(CONF.metrics.multiprocess_dir)
    try:
        return _run_workers(workers, lambda: service_cmd.serve_metrics(port))
    finally:
        if not CONF.metrics.multiprocess_dir:
            metrics_dir.remove(directory)


if __name__ == '__main__':
    sys.exit(main())
