"""What a stored change of health tells the holders of a device.

The report path (conductor/report.py) applies the health the agent's
monitor reports; availability follows from the one predicate
(inventory/views) and is published before the report returns. A
bound ARQ or a prepared Kubernetes claim on a device or region that
turned unhealthy stays where it is (its workload runs on): its holder is
named in the log, so an operator (or a tool reading the log) can move the
workload, and again when the device is healthy.

A device's move of health is recorded where it is stored: its history
row and its ``device.health_change`` notification are written in the
report's transaction (db/devices.health_changed, from db/inventory.py).
A region's own move (a DFL port's errors) is in its device's
availability, not in the history.
"""
from oslo_log import log as logging

from cyborg_lite.common import states
from cyborg_lite.db import deployables as deployables_db

LOG = logging.getLogger(__name__)


def _worse(move):
    return move.new in states.HEALTH_UNAVAILABLE and \
        move.old not in states.HEALTH_UNAVAILABLE


def _healed(move):
    return move.new not in states.HEALTH_UNAVAILABLE and \
        move.old in states.HEALTH_UNAVAILABLE


def _holder(holder):
    if holder.arq_uuid is not None:
        return 'ARQ %s of instance %s' % (holder.arq_uuid,
                                          holder.instance_uuid or '(none)')
    return 'ResourceClaim %s/%s (uid %s) of pod(s) %s' % (
        holder.namespace, holder.claim_name, holder.claim_uid,
        holder.pods or '(not known)')


def _moves_by_place(moves):
    """{(device id, deployable id or None): move}, the last of each."""
    return {(m.device_id, m.deployable_id): m for m in moves}


def tell_holders(hostname, moves):
    """Log, for each device or region of ``hostname`` that turned
    unhealthy (or healthy again), who holds it; the number of lines."""
    moves = [m for m in moves if _worse(m) or _healed(m)]
    if not moves:
        return 0
    places = _moves_by_place(moves)
    found = deployables_db.holders(
        device_ids={m.device_id for m in moves if m.deployable_id is None},
        deployable_ids={m.deployable_id for m in moves
                        if m.deployable_id is not None})
    told = 0
    for holder in found:
        move = _move_of(places, holder)
        if move is None:
            continue
        told += 1
        if _worse(move):
            LOG.warning('Device %s (%s on %s) is %s: %s; %s stays bound to '
                        'deployable %s (%s): its workload may be affected',
                        holder.device_uuid, holder.identity, hostname,
                        move.new, move.reason or 'no reason given',
                        _holder(holder), holder.deployable_uuid,
                        holder.deployable_name)
        else:
            LOG.info('Device %s (%s on %s) is %s again; %s is bound to '
                     'deployable %s (%s)', holder.device_uuid,
                     holder.identity, hostname, move.new, _holder(holder),
                     holder.deployable_uuid, holder.deployable_name)
    return told


def _move_of(places, holder):
    """The move that concerns a holder: its region's own, else its
    device's."""
    return places.get((holder.device_id, holder.deployable_id)) or \
        places.get((holder.device_id, None))
