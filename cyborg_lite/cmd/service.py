"""What the conductor's and the agent's commands share: reading the
config, the one-line failure, serving until a stop signal, /metrics.

Free of the database on purpose: an agent never opens one, and its start
(every host, every restart) does not pay for SQLAlchemy and alembic.
"""
import sys

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_log import log as logging

from cyborg_lite.cmd import stop_signals
from cyborg_lite.common import config
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF
from cyborg_lite.notifications import events as notifications
from cyborg_lite.rpc import pins
from cyborg_lite.rpc import transport as rpc

LOG = logging.getLogger(__name__)


def load_config(argv):
    """Parse argv (every option is checked then, see config.parse_args)
    and build the transport now, so a bad transport_url fails at start as
    a ConfigError instead of later in a thread."""
    config.parse_args(argv)
    try:
        pins.check(CONF)
        rpc.get_transport()
    except (cfg.Error, ValueError, messaging.MessagingException) as exc:
        raise exception.ConfigError(reason='%s: %s'
                                    % (type(exc).__name__, exc))


def fail(prog, exc):
    print('%s: error: %s' % (prog, exc), file=sys.stderr)
    return 1


def serve(service):
    """Start ``service``; stop it on SIGTERM/SIGINT."""
    stops = stop_signals.StopSignals()
    service.start()
    stops.wait()
    LOG.info('Stop signal received; shutting down')
    service.stop()
    notifications.flush_at_stop()
    rpc.cleanup()
    return 0


def serve_metrics(port, collectors=()):
    """/metrics on ``port`` ([metrics]listen_host), from a thread, with
    ``collectors``' series too. The server."""
    from cyborg_lite.metrics import counted as metrics
    server = metrics.serve(port, CONF.metrics.listen_host, collectors)
    LOG.info('Serving /metrics on %s:%d', CONF.metrics.listen_host,
             server.server_port)
    return server
