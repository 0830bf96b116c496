"""Releasing an attach handle, and the instances a bind made removed one
by one: every query and transaction of attach_handles.awaits_removal.

A holder (an ARQ, a Kubernetes claim) letting go of a handle calls
``release_handle``, in the transaction that unlinks it:

- a region's handle is freed and the region waits for its wipe before
  the next tenant (db/cleaning.release);
- a handle of a deployable whose bind makes the instance
  (device_records.MAKES_INSTANCE: a vGPU type, each handle a VF of its
  own) is kept in use, ``awaits_removal`` set: the wipe of that VF is
  removing its vGPU (its memory goes with it), which the host's agent
  does (``pending``, then agent RPC remove_instance); ``removed`` frees it
  once done. The type's other VFs, and their holders, are untouched: a
  type shared by many guests is not withheld until the last one leaves.

Placement reserves a VF that awaits removal, and the Kubernetes counters
count it taken (placement/tree.py, kubernetes/vgpu_counters.py), so no
scheduler is shown a VF that cannot be bound. An agent too old to remove
one (below agent RPC 1.4) gets the older way: ``to_type_clean`` frees the
handle and leaves the whole type to its clean, which begins once nothing
holds it.
"""
import collections
import logging

import sqlalchemy as sa

from cyborg_lite.db import attach_handles
from cyborg_lite.db import cleaning
from cyborg_lite.db import deployables
from cyborg_lite.db import models
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import session

LOG = logging.getLogger(__name__)
HANDLE = models.AttachHandle
DEP = models.Deployable
DEVICE = models.Device

_MAKES_INSTANCE = sa.select(HANDLE.id).where(
    HANDLE.id == sa.bindparam('handle_id'),
    deployables.makes_instance(HANDLE.deployable_id)).exists()
_AWAIT = conditional.statement(
    HANDLE, HANDLE.id == sa.bindparam('handle_id'),
    {'awaits_removal': True}, HANDLE.in_use.is_(True),
    sa.or_(HANDLE.awaits_removal.is_(None),
           HANDLE.awaits_removal.is_(False)))
_REMOVED = conditional.statement(
    HANDLE, HANDLE.id == sa.bindparam('handle_id'),
    {'in_use': False, 'in_use_function': None, 'awaits_removal': None},
    HANDLE.awaits_removal.is_(True))
_HOST_OF_HANDLE = (sa.select(DEVICE.hostname)
                   .join(DEP, DEP.device_id == DEVICE.id)
                   .join(HANDLE, HANDLE.deployable_id == DEP.id)
                   .where(HANDLE.id == sa.bindparam('handle_id')))

# A handle whose instance is to be removed, and what its agent needs to
# name it (agent RPC remove_instance).
Pending = collections.namedtuple('Pending', [
    'handle_id', 'hostname', 'identity', 'driver_name', 'name',
    'attach_info'])


def _hostname(s, handle_id):
    return s.connection().execute(_HOST_OF_HANDLE,
                                  {'handle_id': handle_id}).scalar()


def release_handle(s, handle_id, holder='its holder'):
    """The handle's holder let go of it (its row no longer names it); the
    hostname a conductor must then act on (``CleaningFlow.start``: the
    wipe of a region, the removal of an instance), or None."""
    conn = s.connection()
    if not conn.execute(sa.select(_MAKES_INSTANCE),
                        {'handle_id': handle_id}).scalar():
        if not attach_handles.free(s, handle_id):
            LOG.warning('Attach handle %s of %s was already free',
                        handle_id, holder)
        # A tenant had it (or a bind was about to): db/cleaning.py.
        return cleaning.release(s, handle_id)
    if not conditional.run(s, _AWAIT, {'handle_id': handle_id}):
        return None     # released already
    hostname = _hostname(s, handle_id)
    # Held for Kubernetes, a claim's VF was not in Placement's usage:
    # reserved now, before the release's caller answers.
    publish_requests.add(s, hostname, 'released: its instance awaits '
                         'removal')
    return hostname


def any_pending():
    """Whether any handle awaits removal (the periodic task's gate)."""
    with session.reader() as s:
        return s.scalar(sa.select(HANDLE.id).where(
            HANDLE.awaits_removal.is_(True)).limit(1)) is not None


def pending(hostnames=None):
    """The handles awaiting removal on ``hostnames`` (None: every host),
    as Pending, oldest first; not those of a host whose agent is down
    (asking it would only wait for the RPC timeout)."""
    agent = models.Agent
    query = (sa.select(HANDLE.id, DEVICE.hostname, DEVICE.identity,
                       DEVICE.driver_name, DEP.name, HANDLE.attach_info)
             .join(DEP, DEP.id == HANDLE.deployable_id)
             .join(DEVICE, DEVICE.id == DEP.device_id)
             .outerjoin(agent, agent.hostname == DEVICE.hostname)
             .where(HANDLE.awaits_removal.is_(True),
                    sa.or_(agent.state.is_(None), agent.state != 'down'))
             .order_by(HANDLE.id))
    if hostnames is not None:
        query = query.where(DEVICE.hostname.in_(sorted(hostnames)))
    with session.reader() as s:
        return [Pending(*row) for row in s.execute(query)]


def removed(handle_id):
    """The agent removed the handle's instance (or found none): the handle
    is free, and its deployable available once none of it is in use. The
    hostname to publish; None when another conductor freed it first."""
    with session.writer() as s:
        deployable_id = s.scalar(sa.select(HANDLE.deployable_id).where(
            HANDLE.id == handle_id))
        # NOTE: the region's lock first, as a bind takes it before a
        # handle: no bind claims another VF of the type between the look
        # at its handles and the move to available (idle).
        locked = deployables.lock_for_bind(s, deployable_id) \
            if deployable_id is not None else None
        if locked is None or not conditional.run(
                s, _REMOVED, {'handle_id': handle_id}):
            return None
        cleaning.idle(s, deployable_id)
        device, _region = locked
        publish_requests.add(s, device.hostname, 'an instance removed')
        return device.hostname


def to_type_clean(handle_id):
    """The handle's agent cannot remove one instance (too old): free the
    handle and leave the whole type to its clean (db/cleaning.release),
    as before; the hostname whose clean to start, or None."""
    with session.writer() as s:
        if not conditional.run(s, _REMOVED, {'handle_id': handle_id}):
            return None
        return cleaning.release(s, handle_id)
