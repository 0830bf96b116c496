"""cyborg-lite-agent: discovers this host's accelerators and reports them.

    cyborg-lite-agent [--config-file F ...]

Runs until SIGTERM or SIGINT, then stops cleanly. A bad configuration is
one line on stderr and exit status 1.
"""
import sys

from cyborg_lite.agent import health_metrics
from cyborg_lite.agent import manager
from cyborg_lite.cmd import service as service_cmd
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF


def main(argv=None):
    prog = 'cyborg-lite-agent'
    argv = sys.argv[1:] if argv is None else argv
    try:
        service_cmd.load_config(argv)
        agent = manager.AgentManager(CONF)
    except exception.CyborgLiteException as exc:
        return service_cmd.fail(prog, exc)
    if not agent.drivers:
        return service_cmd.fail(prog, 'no driver of [agent]enabled_drivers '
                                      '(%s) could be loaded; see the log'
                                % ', '.join(CONF.agent.enabled_drivers))
    if CONF.metrics.agent_port:
        serve_metrics(agent, CONF.metrics.agent_port)
    return service_cmd.serve(agent)


def serve_metrics(agent, port):
    """The agent's /metrics on ``port``: the process's series and its
    devices' latest readings, served where they are read
    (agent/health_metrics.py); the server."""
    return service_cmd.serve_metrics(
        port, [health_metrics.HealthCollector(agent.health, agent.host)])


if __name__ == '__main__':
    sys.exit(main())
