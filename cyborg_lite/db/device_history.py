"""Device history: every query and transaction of the device_history table.

``record(s, event)`` is the one call a transition makes: in the caller's
transaction it writes the device's history row (when the event names a
device) and, once that transaction commits, hands the event to
notifications/events.py. So a row or a notification never tells of a
transition that was rolled back. Health, maintenance, agents, binds,
jobs, cleanings and claims all call it (docs/notifications.md lists the
events).

Rows are pruned by age and by count per device (``prune``, a periodic
task of the conductor, [device_history] options).
"""
import collections
import datetime

import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.notifications import events as notifications

HISTORY = models.DeviceHistory.__table__
DEVICE = models.Device.__table__
DEP = models.Deployable.__table__

# The columns a row shows, in the API's order.
COLUMNS = ('event', 'state', 'deployable_uuid', 'object_uuid',
           'project_id', 'instance_uuid', 'namespace', 'claim_name',
           'reason', 'seconds', 'created_at')
_HOLDER = ('project_id', 'instance_uuid', 'namespace', 'claim_name')

_INSERT = sa.insert(HISTORY).values(
    {c: sa.bindparam(c) for c in ('device_uuid', 'deployable_uuid', 'event',
                                  'state', 'object_uuid', 'reason',
                                  'seconds', 'created_at') + _HOLDER})


def row_values(event):
    """The history row of ``event`` (notifications/events.Event)."""
    values = {key: event.data.get(key) for key in _HOLDER}
    values.update(device_uuid=event.device_uuid,
                  deployable_uuid=event.deployable_uuid, event=event.event,
                  state=event.state, object_uuid=event.object_uuid,
                  reason=_short(event.reason),
                  # A programming job's end: what it took (else None).
                  seconds=event.data.get('seconds'),
                  created_at=models.utcnow())
    return values


def _short(reason, limit=2000):
    if reason is None or len(reason) <= limit:
        return reason
    return reason[:limit - 3] + '...'


def record(s, event, ctxt=None):
    """The transition ``event`` happened in the transaction of ``s`` (a
    writer's session or connection): its history row now, its
    notification after the commit."""
    if event.device_uuid is not None:
        _connection(s).execute(_INSERT, row_values(event))
    if notifications.enabled():
        session.after_commit(notifications.emit, event, ctxt)


def record_for_devices(s, event, device_uuids, ctxt=None):
    """``event`` happened to each of ``device_uuids`` at once (an
    agent down or up): a row for each, one notification."""
    rows = [dict(row_values(event), device_uuid=uuid)
            for uuid in device_uuids]
    if rows:
        _connection(s).execute(_INSERT, rows)
    if notifications.enabled():
        session.after_commit(notifications.emit, event, ctxt)


def _connection(s):
    return s if isinstance(s, sa.engine.Connection) else s.connection()


# --- what a transition needs to know of a region ---------------------------

Place = collections.namedtuple('Place', ['device_uuid', 'deployable_uuid',
                                         'hostname'])
_PLACE_OF_REGION = (sa.select(DEVICE.c.uuid, DEP.c.uuid, DEVICE.c.hostname)
                    .join(DEVICE, DEVICE.c.id == DEP.c.device_id)
                    .where(DEP.c.id == sa.bindparam('deployable_id')))
_PLACE_OF_RP = (sa.select(DEVICE.c.uuid, DEP.c.uuid, DEVICE.c.hostname)
                .join(DEVICE, DEVICE.c.id == DEP.c.device_id)
                .where(DEP.c.rp_uuid == sa.bindparam('rp_uuid')))
_NOWHERE = Place(None, None, None)


def place_of_region(s, deployable_id):
    """The Place of a deployable by id (all None if there is none)."""
    return _place(s, _PLACE_OF_REGION, deployable_id=deployable_id)


def place_of_rp(s, rp_uuid):
    return _place(s, _PLACE_OF_RP, rp_uuid=rp_uuid)


def _place(s, stmt, **params):
    if None in params.values():
        return _NOWHERE
    row = _connection(s).execute(stmt, params).first()
    return Place(*row) if row is not None else _NOWHERE


# --- reading and pruning ----------------------------------------------------

# The events of a region's function being asked for: bound by an ARQ,
# prepared for a claim, loaded by a job.
ASKED_EVENTS = ('arq.bind.end', 'k8s_claim.prepare',
                'programming_job.program.end')


def last_asked(device_uuid, deployable_uuids):
    """{deployable uuid: when its function was last asked for (the
    newest of its ASKED_EVENTS rows)} of those of ``deployable_uuids``
    with such a row (a pruned row is forgotten: not asked recently)."""
    if not deployable_uuids:
        return {}
    stmt = (sa.select(HISTORY.c.deployable_uuid,
                      sa.func.max(HISTORY.c.created_at))
            .where(HISTORY.c.device_uuid == device_uuid,
                   HISTORY.c.deployable_uuid.in_(list(deployable_uuids)),
                   HISTORY.c.event.in_(ASKED_EVENTS))
            .group_by(HISTORY.c.deployable_uuid))
    with session.core_reader() as conn:
        return dict(conn.execute(stmt).all())

# What a bind that could wait for a busy region reads of the device's
# recent history (conductor/bind_wait.py): how long programming took, how
# long an ARQ held its region (its bind's end to its release), how long a
# clean took (its try's start to its end). The span kinds: (start event,
# end events), paired by the row's object (the ARQ, the cleaning try).
_SPANS = {'hold': ('arq.bind.end', ('arq.unbind', 'arq.delete')),
          'clean': ('deployable.clean.start', ('deployable.clean.end',))}
_JOB_END = 'programming_job.program.end'
Durations = collections.namedtuple('Durations', ['program', 'hold', 'clean'])


def _mean(values):
    return sum(values) / len(values) if values else None


def mean_durations(device_uuid, recent=200):
    """Durations: the mean seconds of each kind over the device's
    ``recent`` newest rows of those events; None for a kind none of
    them ends (a pruned row is forgotten)."""
    events = [_JOB_END] + [e for start, ends in _SPANS.values()
                           for e in (start,) + ends]
    stmt = (sa.select(HISTORY.c.event, HISTORY.c.object_uuid,
                      HISTORY.c.seconds, HISTORY.c.created_at)
            .where(HISTORY.c.device_uuid == device_uuid,
                   HISTORY.c.event.in_(events))
            .order_by(HISTORY.c.id.desc()).limit(recent))
    with session.core_reader() as conn:
        rows = conn.execute(stmt).all()
    spans = {kind: [] for kind in _SPANS}
    began = {}
    for event, obj, _seconds, at in reversed(rows):
        for kind, (start, ends) in _SPANS.items():
            if event == start:
                began[kind, obj] = at
            elif event in ends and (kind, obj) in began:
                spans[kind].append(
                    (at - began.pop((kind, obj))).total_seconds())
    return Durations(_mean([r.seconds for r in rows if r.event == _JOB_END
                            and r.seconds is not None]),
                     _mean(spans['hold']), _mean(spans['clean']))


def list_rows(device_uuid, newest=None):
    """The device's rows, oldest first, as plain rows of ``id`` and
    COLUMNS; ``newest``: only the newest that many. DeviceNotFound when
    neither the device nor any row of it exists (a removed device's
    history stays until it is pruned)."""
    stmt = (sa.select(HISTORY.c.id, *[HISTORY.c[c] for c in COLUMNS])
            .where(HISTORY.c.device_uuid == device_uuid)
            .order_by(HISTORY.c.id.desc()))
    if newest is not None:
        stmt = stmt.limit(newest)
    with session.core_reader() as conn:
        rows = conn.execute(stmt).all()
        if not rows and conn.execute(
                sa.select(DEVICE.c.id).where(
                    DEVICE.c.uuid == device_uuid)).first() is None:
            raise exception.DeviceNotFound(uuid=device_uuid)
    rows.reverse()
    return rows


def prune(max_age_days, max_rows_per_device, batch=1000):
    """Delete rows older than ``max_age_days`` (0: none for age) and all
    but the newest ``max_rows_per_device`` of each device (0: no
    limit); returns how many were deleted."""
    deleted = 0
    if max_age_days:
        cutoff = models.utcnow() - datetime.timedelta(days=max_age_days)
        with session.core_writer() as conn:
            deleted += conn.execute(sa.delete(HISTORY).where(
                HISTORY.c.created_at < cutoff)).rowcount
    if max_rows_per_device:
        deleted += _prune_counts(max_rows_per_device, batch)
    return deleted


def _prune_counts(keep, batch):
    with session.core_reader() as conn:
        crowded = conn.execute(
            sa.select(HISTORY.c.device_uuid)
            .group_by(HISTORY.c.device_uuid)
            .having(sa.func.count() > keep).limit(batch)).scalars().all()
    deleted = 0
    for device_uuid in crowded:
        with session.core_writer() as conn:
            # The id of the newest row to delete: the keep+1-th newest.
            last = conn.execute(
                sa.select(HISTORY.c.id)
                .where(HISTORY.c.device_uuid == device_uuid)
                .order_by(HISTORY.c.id.desc())
                .offset(keep).limit(1)).scalar()
            if last is not None:
                deleted += conn.execute(sa.delete(HISTORY).where(
                    HISTORY.c.device_uuid == device_uuid,
                    HISTORY.c.id <= last)).rowcount
    return deleted



def set_seconds(s, row_id, seconds):
    """Give history row ``row_id`` its job's ``seconds`` (the online
    migration of db/programming_jobs.fill_history_seconds)."""
    s.execute(sa.update(HISTORY).where(HISTORY.c.id == row_id)
              .values(seconds=seconds))
