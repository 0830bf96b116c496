"""Removing, one by one, the instances that released handles still hold
(a vGPU in a VF: db/instance_removals.py), conductor side.

For each handle awaiting removal, the host's agent is asked to remove
the instance it made there (agent RPC 1.4 remove_instance, a call: one
sysfs write); once it answers (removed, or none there), the handle is
freed and the host published, so the schedulers are shown the VF again
only after it is empty. A guest that still has the VF open (the kernel's
EBUSY), or an agent that does not answer, leaves it awaiting: the
cleaning's periodic task asks again. An agent too old to remove one
leaves the type to its clean, as before (``to_type_clean``).
"""
import json
import types

from oslo_log import log as logging

from cyborg_lite.common import context as cl_context
from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.db import instance_removals as removals_db

LOG = logging.getLogger(__name__)


def agent_request(pending):
    """The request of agent RPC remove_instance (make_instance's form)."""
    place = types.SimpleNamespace(hostname=pending.hostname,
                                  identity=pending.identity,
                                  name=pending.name)
    return {'driver': pending.driver_name, 'identity': pending.identity,
            'deployable_name': device_records.region_name_of(place, place),
            'attach_info': json.loads(pending.attach_info)}


def remove_released(agent_api, hostnames=None):
    """Have the agents of ``hostnames`` (None: every host) remove the
    instances released handles hold; (hosts whose handles were freed,
    hosts whose type now waits for its clean)."""
    freed, to_clean = set(), set()
    for pending in removals_db.pending(hostnames):
        outcome = _remove(agent_api, pending)
        if outcome == 'removed':
            freed.add(removals_db.removed(pending.handle_id))
        elif outcome == 'type_clean':
            to_clean.add(removals_db.to_type_clean(pending.handle_id))
    freed.discard(None)
    to_clean.discard(None)
    return freed, to_clean


def _remove(agent_api, pending):
    """'removed' (or none was there), 'type_clean' (its agent cannot), or
    None (not now: asked again later)."""
    what = '%s on %s' % (pending.name, pending.hostname)
    try:
        request = agent_request(pending)
        agent_api.remove_instance(cl_context.get_admin_context(),
                                  pending.hostname, request)
    except exception.InstancesUnsupported as exc:
        LOG.info('%s: %s; its type is wiped when nothing holds it',
                 what, exc.format_message())
        return 'type_clean'
    except exception.Invalid as exc:
        LOG.error('Instance of %s cannot be named to its agent: %s', what,
                  exc.format_message())
        return None
    except Exception as exc:
        # NOTE: a guest still has it (EBUSY), or the agent is away: the
        # handle stays reserved; the periodic task asks again.
        LOG.warning('Instance of handle %d of %s not removed yet: %s',
                    pending.handle_id, what, exception.error_text(exc))
        return None
    LOG.info('Removed the instance of handle %d of %s', pending.handle_id,
             what)
    return 'removed'
