"""ARQ releases: delete and unbind, each one transaction (the API's).

A release frees the ARQ's attach handle, leaves its region
pending_cleaning (or, a vGPU, its instance to be removed:
db/instance_removals.release_handle) and requests a publish of its
host; what is left for a conductor (publish, then clean) is in the
Released it returns.
"""
import collections
import time

import sqlalchemy as sa
from sqlalchemy.orm import exc as orm_exc

from cyborg_lite.common import exception
from cyborg_lite.common import states
from cyborg_lite.db import device_history
from cyborg_lite.db import instance_removals
from cyborg_lite.db import publish_requests
# NOTE: the table's row helpers, shared by its modules.
from cyborg_lite.db.arqs import ARQ, _event, _get, _place_of, \
    _transition, _visible
from cyborg_lite.db.sql import session
from cyborg_lite.metrics import counted as metrics


# What deleting or unbinding ARQs left for a conductor: hosts whose
# released regions wait for their clean, hosts whose publish it requested
# (every release takes capacity away until the wipe ends).
Released = collections.namedtuple('Released',
                                  ['clean_hosts', 'publish_hosts'])


def _deleted(s, arqs):
    """Delete the rows; what a conductor must be told (Released)."""
    hosts = set()
    for arq in arqs:
        place = _place_of(s, arq)
        if arq.attach_handle_id:
            hosts.add(instance_removals.release_handle(
                s, arq.attach_handle_id))
        s.delete(arq)
        device_history.record(s, _event('arq.delete', arq, place))
    hosts.discard(None)
    return Released(hosts, publish_requests.requested_in(s))


def _conflict_on_stale(func):
    """A row the conductor changed while we deleted it: 409, retry."""
    def wrapper(visible_to, *args, **kwargs):
        try:
            return func(visible_to, *args, **kwargs)
        except orm_exc.StaleDataError:
            raise exception.Conflict(
                reason='accelerator requests changed while being deleted; '
                       'retry')
    wrapper.__doc__ = func.__doc__
    return wrapper


@_conflict_on_stale
def delete_by_uuids(visible_to, uuids, may_delete=None):
    """Delete exactly these ARQs, or none of them.

    Refuses (409) an ARQ whose bind is in flight; ``may_delete(arq)`` is
    the caller's policy check, run on each row before anything changes.
    Returns Released: the hosts whose regions now wait for their clean,
    and those whose publish this requested.
    """
    with session.writer() as s:
        stmt = _visible(sa.select(ARQ), visible_to)
        rows = {a.uuid: a for a in s.scalars(
            stmt.where(ARQ.uuid.in_(uuids)))}
        for uuid in uuids:
            arq = rows.get(uuid)
            if arq is None:
                raise exception.ARQNotFound(uuid=uuid)
            if arq.state in states.ARQ_BUSY:
                raise exception.ARQStateConflict(
                    uuid=uuid, state=arq.state, action='delete',
                    expected='any state but %s'
                    % ', '.join(states.ARQ_BUSY))
            if may_delete is not None:
                may_delete(arq)
        return _deleted(s, list(rows.values()))


@_conflict_on_stale
def delete_by_instance(visible_to, instance_uuid):
    """Delete every ARQ of an instance; none is not an error (Nova calls
    this again on every teardown retry). Returns Released, as
    delete_by_uuids."""
    with session.writer() as s:
        stmt = _visible(sa.select(ARQ), visible_to)
        return _deleted(s, list(s.scalars(stmt.where(
            ARQ.instance_uuid == instance_uuid))))


def _unbind(s, arq_uuid):
    """Unbound, with its binding cleared and its attach handle freed (its
    region left to be wiped, with a publish request of its host)."""
    arq = _get(s, arq_uuid)
    if arq is not None and arq.state != 'Unbound':
        _transition(s, arq_uuid, 'Unbound', hostname=None,
                    device_rp_uuid=None, instance_uuid=None,
                    deployable_id=None, bind_started_at=None,
                    bind_dispatched_at=None, bind_taken_at=None,
                    bind_taken_by=None, error=None)


def unbind_all(visible_to, uuids):
    """Unbind exactly these ARQs (those Unbound already are left), or none
    of them: ARQNotFound, or ARQStateConflict when one moved meanwhile.
    Returns Released, as delete_by_uuids (a released region's host is
    among those to publish; the clean is started for each of them)."""
    began, outcome = time.monotonic(), 'refused'
    try:
        with session.writer() as s:
            found = set(s.scalars(_visible(sa.select(ARQ.uuid), visible_to)
                                  .where(ARQ.uuid.in_(uuids))))
            for arq_uuid in uuids:
                if arq_uuid not in found:
                    raise exception.ARQNotFound(uuid=arq_uuid)
                _unbind(s, arq_uuid)
            hosts = publish_requests.requested_in(s)
        outcome = 'unbound'
        return Released(hosts, hosts)
    finally:
        # NOTE: per ARQ, as the conductor counted its unbinds before the
        # API made them.
        took = (time.monotonic() - began) / max(len(uuids), 1)
        for _arq in uuids:
            metrics.observe(metrics.UNBIND_DURATION, took, outcome)
