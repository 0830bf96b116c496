"""Agent liveness: Nova's service heartbeat, for the hosts' agents.

Each agent calls ``agent_heartbeat`` every [agent]heartbeat_interval
seconds, from a thread of its own (agent/manager.py), separate from its
inventory reports: an unchanged report still writes nothing, and the
heartbeat is one small UPDATE per host per interval (db/agents.py).
Every conductor runs ``mark_silent_down`` periodically; a host silent for
[conductor]agent_down_time seconds is marked down by exactly one of them.
Down, its devices carry the reason ``agent_down``
(inventory/views.unavailable_reasons): reserved in Placement,
refused to binds, shown by the API from 2.5. Its next heartbeat brings it
back. Nothing is deleted, and what is bound stays bound.

A conductor judges silence only after it has been listening itself for
agent_down_time (``SilenceWatch``): one just started, or resumed after a
pause (SIGSTOP, a frozen VM), finds every agent silent because nobody took
their heartbeats, not because the agents died.
"""
import time

from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.common import version
from cyborg_lite.conf import CONF
from cyborg_lite.db import agents as agents_db
from cyborg_lite.db import services as services_db

LOG = logging.getLogger(__name__)
MAX_HOSTNAME = 255


def heartbeat(hostname, publisher, release=None, rpc_versions=None):
    """Record the agent's heartbeat, with the release and RPC versions it
    runs (its services row); publish its host if it came back."""
    if not isinstance(hostname, str) or \
            not 0 < len(hostname) <= MAX_HOSTNAME:
        raise exception.Invalid(reason='hostname must be a string of 1 to '
                                '%d characters' % MAX_HOSTNAME)
    if release is not None and not (
            isinstance(release, str) and 0 < len(release) <= 64 and
            (rpc_versions is None or _is_versions(rpc_versions))):
        raise exception.Invalid(reason='release must be a string of 1 to '
                                '64 characters and rpc_versions a map of '
                                'topic to version strings')
    try:
        version.refuse_if_too_old('agent', hostname, release)
    except exception.ServiceTooOld as exc:
        # Recorded, so that the operator's service list and upgrade check
        # show it; never marked up, so no scheduler is offered its devices.
        services_db.beat('agent', hostname, release, rpc_versions)
        LOG.error('Refused the heartbeat of %s: %s', hostname, exc)
        raise
    except ValueError:
        raise exception.Invalid(reason='release %r is not a PEP 440 '
                                'version' % release)
    came_back = agents_db.heartbeat(hostname, release, rpc_versions)
    if came_back:
        LOG.warning('Agent of %s is heartbeating again: its devices are '
                    'offered again', hostname)
        publisher.publish_requested()
    return {'hostname': hostname, 'came_back': came_back}


def _is_versions(value):
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items())


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


class SilenceWatch:
    """``mark_silent_down`` once this conductor has listened for
    ``down_time`` seconds without a pause; a pause is a gap between two
    runs longer than twice ``interval`` (this periodic task's)."""

    def __init__(self, publisher, down_time, interval,
                 clock=time.monotonic):
        self.publisher = publisher
        self.down_time = down_time
        self.interval = interval
        self.clock = clock
        self._listening_since = clock()
        self._last_run = None

    def run(self):
        now = self.clock()
        if self._last_run is not None and \
                now - self._last_run > 2 * self.interval:
            LOG.warning('This conductor did not run for %.0f s: agents are '
                        'judged silent again %ss from now',
                        now - self._last_run, self.down_time)
            self._listening_since = now
        self._last_run = now
        if now - self._listening_since < self.down_time:
            return []
        return mark_silent_down(self.publisher, self.down_time)
