"""cyborg-lite-all-in-one: the whole service on loopback, in one process.

    cyborg-lite-all-in-one [--state-dir DIR] [--api-port N]
                           [--placement-port N] [--cards N] [--regions N]

Starts the real Placement (a subprocess with its own SQLite database), then
migrates cyborg_lite's SQLite database and runs the API (cheroot), the
conductor and one agent in this process over ``inproc://`` messaging
(rpc/inproc.py). The agent runs the fake FPGA driver unless a
``--config-file`` names others ([agent] enabled_drivers and the drivers'
groups). Everything lives
under the state directory, so a restart finds the same devices, profiles
and programmed functions.
Ctrl-C (or SIGTERM) stops everything.

Anything that keeps it from starting (a bad argument or option, a state
directory it cannot create, a port in use, Placement failing) is one line
on stderr and exit status 1, with nothing left running; Placement also
exits when this process is killed outright (see placement_server).
"""
import argparse
import os
import shlex
import sys

from oslo_log import log as logging

from cyborg_lite.cmd import placement_server
from cyborg_lite.cmd import stop_signals
from cyborg_lite.common import config
from cyborg_lite.common import exception
from cyborg_lite.common import version
from cyborg_lite.conf import CONF
from cyborg_lite.db import migration
from cyborg_lite.db.sql import session
from cyborg_lite.notifications import events as notifications
from cyborg_lite.rpc import transport as rpc

LOG = logging.getLogger(__name__)

DEFAULT_API_PORT = 6666          # Cyborg's port
DEFAULT_PLACEMENT_PORT = 8778    # Placement's port
REGION_MEMORY_MB = 4096


PROG = 'cyborg-lite-all-in-one'


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 1, like
    every other start-up error of this command."""

    def error(self, message):
        self.exit(1, '%s: error: %s\n' % (self.prog, message))


def _bounded_int(low, high):
    def convert(text):
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError('%r is not an integer' % text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                '%d is not between %d and %d' % (value, low, high))
        return value
    return convert


def _parse_cli(argv):
    parser = _Parser(prog=PROG, description=__doc__.split('\n')[0])
    port = _bounded_int(1, 65535)
    parser.add_argument('--version', action='version',
                        version=version.VERSION)
    parser.add_argument('--state-dir', default=os.path.abspath('state'))
    parser.add_argument('--api-port', type=port, default=DEFAULT_API_PORT)
    parser.add_argument('--placement-port', type=port,
                        default=DEFAULT_PLACEMENT_PORT)
    # The bounds of [fake_driver] num_cards and regions_per_card; unset,
    # a --config-file's values, else 2 and 2.
    parser.add_argument('--cards', type=_bounded_int(0, 64))
    parser.add_argument('--regions', type=_bounded_int(1, 16))
    parser.add_argument('--host', default='aio-host',
                        help='host name the agent reports under')
    parser.add_argument('--config-file', action='append', default=[],
                        help='extra oslo.config files, read last')
    args = parser.parse_args(argv)
    if args.api_port == args.placement_port:
        parser.error('--api-port and --placement-port are both %d'
                     % args.api_port)
    args.state_dir = os.path.abspath(args.state_dir)
    return args


# Defaults, not overrides: a --config-file may say otherwise. So
# [api] auth_strategy = keystone puts the API behind Keystone, and
# [agent] enabled_drivers with the drivers' own groups serves a real
# host's FPGAs and GPUs (docs/deployment.md).
DEFAULTS = {
    'api': {'auth_strategy': 'noauth'},
    'agent': {'enabled_drivers': ['fake']},
    'fake_driver': {'num_cards': 2, 'regions_per_card': 2,
                    'local_memory_mb': REGION_MEMORY_MB},
}


def _configure(args, placement_url):
    argv = []
    for path in args.config_file:
        argv += ['--config-file', path]
    for group, values in DEFAULTS.items():
        for name, value in values.items():
            CONF.set_default(name, value, group=group)
    config.parse_args(argv, default_config_files=[])
    state = args.state_dir
    overrides = {
        None: {'host': args.host, 'state_path': state,
               'transport_url': 'inproc://'},
        'database': {'connection': 'sqlite:///%s'
                     % os.path.join(state, 'cyborg_lite.sqlite')},
        'api': {'host': '127.0.0.1', 'port': args.api_port},
        'fake_driver': {'num_cards': args.cards,
                        'regions_per_card': args.regions},
    }
    for group, values in overrides.items():
        for name, value in values.items():
            if value is not None:
                CONF.set_override(name, value, group=group)
    _configure_placement(placement_url)


def _configure_placement(url):
    from keystoneauth1 import loading as ks_loading
    # keystoneauth registers a plugin's options only when it loads it.
    CONF.register_opts(ks_loading.get_auth_plugin_conf_options('admin_token'),
                       group='placement')
    for name, value in (('auth_type', 'admin_token'),
                        ('token', placement_server.TOKEN),
                        ('endpoint_override', url),
                        ('create_compute_node_rp', True)):
        CONF.set_override(name, value, group='placement')


class AllInOne:
    """Placement + API + conductor + agent; ``start()`` then ``stop()``."""

    def __init__(self, args):
        self.args = args
        self.placement = placement_server.PlacementServer(
            port=args.placement_port,
            basedir=os.path.join(args.state_dir, 'placement'),
            policy=placement_server.ADMIN_RESHAPES)
        self.api_url = 'http://127.0.0.1:%d' % args.api_port
        self._stack = []

    def start(self):
        # Configuration first: a bad value stops us before any child runs.
        _configure(self.args, self.placement.endpoint)
        os.makedirs(self.placement.basedir, exist_ok=True)
        self.placement.start()
        self._stack.append(self.placement.stop)
        migration.upgrade()
        self._start_conductor()
        self._start_api()
        self._start_agent()
        return self

    def _start_conductor(self):
        from cyborg_lite.conductor import service
        conductor = service.ConductorService(CONF)
        conductor.start()
        self._stack.append(conductor.stop)

    def _start_agent(self):
        import prometheus_client

        from cyborg_lite.agent import health_metrics
        from cyborg_lite.agent import manager
        agent = manager.AgentManager(CONF)
        # NOTE: one process: the API's /metrics shows the agent's
        # readings too.
        readings = health_metrics.HealthCollector(agent.health, agent.host)
        prometheus_client.REGISTRY.register(readings)
        self._stack.append(
            lambda: prometheus_client.REGISTRY.unregister(readings))
        agent.start()
        self._stack.append(agent.stop)

    def _start_api(self):
        from cyborg_lite.api import deploy
        from cyborg_lite.api import server
        from cyborg_lite.api import service_heartbeat
        service_heartbeat.start(CONF.host, CONF.agent.heartbeat_interval)
        api = server.Server(deploy.loadapp_serving(CONF), '127.0.0.1',
                            self.args.api_port).start()
        self._stack.append(api.stop)

    def stop(self):
        while self._stack:
            step = self._stack.pop()
            try:
                step()
            except Exception:  # keep stopping the rest
                LOG.exception('error while stopping %s', step)
        notifications.flush_at_stop()
        rpc.cleanup()
        session.dispose_all()


def _banner(aio):
    """What runs where, and the lines to paste in another shell: the
    exports README.md's "A first tour" starts from."""
    lines = [
        'cyborg_lite all-in-one is running (Ctrl-C stops it).',
        '  API:        %s/v2' % aio.api_url,
        '  Auth:       %s' % CONF.api.auth_strategy,
        '  Placement:  %s  (X-Auth-Token: %s)'
        % (aio.placement.endpoint, placement_server.TOKEN),
        '  State:      %s' % aio.args.state_dir,
        'In another shell (then README.md, "A first tour"):',
        # The commands installed beside this interpreter: the venv's.
        '  export PATH=%s:$PATH'
        % shlex.quote(os.path.dirname(os.path.abspath(sys.executable))),
    ]
    if CONF.api.auth_strategy == 'noauth':
        lines.append('  export CYBORG_LITE_URL=%s' % aio.api_url)
        cli = 'cyborg-lite'
    else:
        lines.append('  source your openrc (OS_AUTH_URL, OS_USERNAME...)')
        cli = ('cyborg-lite --os-auth-type password --os-endpoint %s'
               % aio.api_url)
    lines.append('  export PLACEMENT_URL=%s' % aio.placement.endpoint)
    return '\n'.join(lines + ['  %s device list' % cli,
                              '  %s deployable list' % cli])


def _make_state_dir(path):
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise exception.ConfigError(
            reason='cannot create the state directory %s: %s'
                   % (path, exc.strerror or exc))


def _one_line(exc):
    if isinstance(exc, (exception.CyborgLiteException,
                        placement_server.PlacementStartError)):
        text = str(exc)
    else:
        text = '%s: %s' % (type(exc).__name__, exc)
    return ' '.join(text.split())


def main(argv=None):
    args = _parse_cli(sys.argv[1:] if argv is None else argv)
    stops = stop_signals.StopSignals()
    aio = AllInOne(args)
    try:
        _make_state_dir(args.state_dir)
        aio.start()
    except Exception as exc:  # whatever it is: one line, nothing left
        print('%s: error: %s' % (PROG, _one_line(exc)), file=sys.stderr)
        aio.stop()
        return 1
    print(_banner(aio), flush=True)
    stops.wait()
    print('stopping...', flush=True)
    aio.stop()
    print('stopped.', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
