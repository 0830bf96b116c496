"""Agent liveness: Nova's service heartbeat, for the hosts' agents.

Each agent calls ``agent_heartbeat`` every [agent]heartbeat_interval
seconds, from a thread of its own (agent/manager.py), separate from its
inventory reports: an unchanged report still writes nothing, and the
heartbeat is one small UPDATE per host per interval (db/agents.py).
Every conductor runs ``mark_silent_down`` periodically; a host silent for
[conductor]agent_down_time seconds is marked down by exactly one of them.
Down, its devices carry the reason ``agent_down``
(objects/host_inventory.unavailable_reasons): reserved in Placement,
refused to binds, shown by the API from 2.5. Its next heartbeat brings it
back. Nothing is deleted, and what is bound stays bound.
"""
from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.conf import CONF
from cyborg_lite.db import agents as agents_db

LOG = logging.getLogger(__name__)
MAX_HOSTNAME = 255


def heartbeat(hostname, publisher):
    """Record the agent's heartbeat; publish its host if it came back."""
    if not isinstance(hostname, str) or \
            not 0 < len(hostname) <= MAX_HOSTNAME:
        raise exception.Invalid(reason='hostname must be a string of 1 to '
                                '%d characters' % MAX_HOSTNAME)
    came_back = agents_db.heartbeat(hostname)
    if came_back:
        LOG.warning('Agent of %s is heartbeating again: its devices are '
                    'offered again', hostname)
        publisher.publish_requested()
    return {'hostname': hostname, 'came_back': came_back}


def mark_silent_down(publisher, down_time=None):
    """Hosts silent for ``down_time`` seconds (default [conductor]
    agent_down_time) -> down, and published; the hostnames moved."""
    down_time = CONF.conductor.agent_down_time if down_time is None \
        else down_time
    moved = agents_db.mark_silent_down(down_time)
    if moved:
        LOG.warning('No heartbeat for %ss from the agents of %s: their '
                    'devices are unavailable until they beat again',
                    down_time, ', '.join(moved))
        publisher.publish_requested()
    return moved
