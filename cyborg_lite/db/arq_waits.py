"""Binds waiting for a warm region: the marker
``accelerator_requests.bind_waits_for_id`` and its transactions
(conductor/bind_wait.py decides and resumes).

A waiting bind is BindStarted, taken, and names the busy sibling region
running its function that it waits for. Any conductor may resume it:
the one that takes the marker off (a conditional UPDATE on the ARQ's
state and version) goes on with the bind; every other sees it moved.
Writers lock ARQ, then regions (in id order), as the binds do.
"""
import collections
import datetime

import sqlalchemy as sa

from cyborg_lite.db import models
from cyborg_lite.db.arq_binds import _lock_started, _started_of
from cyborg_lite.db.arqs import ARQ
from cyborg_lite.db.sql import clock
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import session
from cyborg_lite.inventory import warm

_DEP = models.Deployable.__table__
# A waiting bind: its Started (the version it waits on) and the region.
Waiting = collections.namedtuple('Waiting', ['started', 'region_id',
                                             'region_uuid'])


def _waiting_counts(s, region_ids):
    """{region id: how many binds wait for it} of ``region_ids``."""
    return dict(s.execute(
        sa.select(ARQ.bind_waits_for_id, sa.func.count())
        .where(ARQ.state == 'BindStarted',
               ARQ.bind_waits_for_id.in_(region_ids))
        .group_by(ARQ.bind_waits_for_id)).all())


def start_waiting(started, region_ids, expected_free_s, program_s):
    """Mark the bind ``started`` waiting for one of ``region_ids`` (busy
    siblings running its function) if inventory/warm.worth_waiting says
    so, counting the binds that wait for them already under their rows'
    locks (two binds deciding at once count each other); the one fewest
    wait for is taken (then the lowest id). Returns the Waiting (its
    Started at the marked version), or None when it does not wait.
    ARQStateConflict when the ARQ left (BindStarted, started.version)."""
    with session.writer() as s:
        arq_id, _project = _lock_started(s, started)
        s.execute(sa.select(_DEP.c.id).where(_DEP.c.id.in_(region_ids))
                  .order_by(_DEP.c.id).with_for_update()).all()
        counts = _waiting_counts(s, region_ids)
        if not warm.worth_waiting(len(region_ids), sum(counts.values()),
                                  expected_free_s, program_s):
            return None
        region_id = min(region_ids, key=lambda r: (counts.get(r, 0), r))
        # NOTE: the ARQ's row is locked on this version: this wins.
        conditional.update(s, ARQ, ARQ.id == arq_id,
                           {'bind_waits_for_id': region_id},
                           ARQ.state == 'BindStarted',
                           ARQ.version == started.version)
        region_uuid = s.scalar(sa.select(_DEP.c.uuid).where(
            _DEP.c.id == region_id))
    return Waiting(started._replace(version=started.version + 1), region_id,
                   region_uuid)


def waiting(hostnames=None, region_uuid=None, taken_for=None, limit=100):
    """[Waiting] of the binds that wait for a region, oldest first: on
    ``hostnames``, for region ``region_uuid``, or taken by a conductor
    ``taken_for`` seconds ago or more (by the database's clock)."""
    params = {'limit': limit}
    stmt = _WAITING
    if hostnames is not None:
        # NOTE: built once: every release asks it (conductor/manager.py).
        stmt = _WAITING_ON_HOSTS
        params['hostnames'] = list(hostnames)
    if region_uuid is not None:
        stmt = stmt.where(_DEP.c.uuid == region_uuid)
    with session.reader() as s:
        if taken_for is not None:
            stmt = stmt.where(ARQ.bind_taken_at <= clock.now(s) -
                              datetime.timedelta(seconds=taken_for))
        return [Waiting(_started_of(arq), arq.bind_waits_for_id, uuid)
                for arq, uuid in s.execute(stmt, params).all()]


_WAITING = (sa.select(ARQ, _DEP.c.uuid)
            .join(_DEP, _DEP.c.id == ARQ.bind_waits_for_id)
            .where(ARQ.state == 'BindStarted',
                   ARQ.bind_waits_for_id.is_not(None))
            .order_by(ARQ.bind_taken_at, ARQ.id)
            .limit(sa.bindparam('limit')))
_WAITING_ON_HOSTS = _WAITING.where(
    ARQ.hostname.in_(sa.bindparam('hostnames', expanding=True)))


def take(waiting):
    """Take the marker off the waiting bind, on the version it was read
    with: the Started to go on with (its new version), or None when
    another conductor took it first or the ARQ moved."""
    started = waiting.started
    with session.writer() as s:
        won = conditional.update(
            s, ARQ, ARQ.uuid == started.uuid, {'bind_waits_for_id': None},
            ARQ.state == 'BindStarted', ARQ.version == started.version,
            ARQ.bind_waits_for_id == waiting.region_id)
    return started._replace(version=started.version + 1) if won else None
