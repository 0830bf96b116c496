"""Agents: one row per host, its last heartbeat and whether it is up.

Nova's service heartbeat, for cyborg_lite agents: every agent calls
``heartbeat`` each [agent]heartbeat_interval seconds (one small UPDATE per
host per interval, stamped with the database's clock), and a periodic
task of every conductor calls ``mark_silent_down`` with
[conductor]agent_down_time. A host with no row (its agent never sent a
heartbeat, e.g. one older than this table) counts as up.

Going down or coming back changes what the host offers: the transaction
that moves the state also adds a publish request (db/publish_requests.py).
Each move is a conditional UPDATE, so with several conductors exactly one
moves a row and requests its publish. Nothing else changes: devices,
deployables and bound ARQs stay as they are.
"""
import datetime

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cyborg_lite.db import device_history
from cyborg_lite.db import models
from cyborg_lite.db import publish_requests
from cyborg_lite.db import services
from cyborg_lite.db.sql import clock
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import session
from cyborg_lite.notifications import events as notifications

AGENT = models.Agent


def heartbeat(hostname, release=None, rpc_versions=None):
    """Record that the agent of ``hostname`` is alive; True when this
    brought the host back up (it was down). Its services row (the
    ``release`` and ``rpc_versions`` it said, None from an agent of a
    release that does not) is written in the same transaction."""
    for _attempt in range(2):
        try:
            with session.writer() as s:
                services.record(s, 'agent', hostname, release, rpc_versions)
                return _heartbeat(s, hostname)
        except sa_exc.IntegrityError:
            # NOTE: two heartbeats of a new host inserted at once; the
            # second try finds the row.
            continue
    raise AssertionError('unreachable: the agents row exists by now')


def _heartbeat(s, hostname):
    now = clock.utc_now()
    if conditional.update(s, AGENT, AGENT.hostname == hostname,
                          {'heartbeat_at': now}, AGENT.state == 'up'):
        return False
    if conditional.update(s, AGENT, AGENT.hostname == hostname,
                          {'heartbeat_at': now, 'state': 'up'},
                          AGENT.state == 'down'):
        publish_requests.add(s, hostname, 'agent up again')
        _record(s, hostname, 'up', 'heartbeating again')
        return True
    s.add(AGENT(hostname=hostname, state='up', heartbeat_at=clock.now(s)))
    s.flush()
    return False


def mark_silent_down(down_time, batch=100):
    """Hosts up whose last heartbeat is ``down_time`` seconds old or more
    (by the database's clock) -> down. Returns the hostnames this call
    moved."""
    moved = []
    with session.writer() as s:
        cutoff = clock.now(s) - datetime.timedelta(seconds=down_time)
        silent = list(s.scalars(
            sa.select(AGENT.hostname)
            .where(AGENT.state == 'up', AGENT.heartbeat_at <= cutoff)
            .order_by(AGENT.heartbeat_at).limit(batch)))
        for hostname in silent:
            # NOTE: the conditions again: a heartbeat or another conductor
            # may have changed the row since the SELECT.
            if conditional.update(s, AGENT, AGENT.hostname == hostname,
                                  {'state': 'down'}, AGENT.state == 'up',
                                  AGENT.heartbeat_at <= cutoff):
                publish_requests.add(s, hostname, 'agent down')
                _record(s, hostname, 'down', 'no heartbeat for %s s'
                        % down_time)
                moved.append(hostname)
    return moved


_DEVICES_OF_HOST = sa.select(models.Device.uuid).where(
    models.Device.hostname == sa.bindparam('hostname')).order_by(
        models.Device.id)


def _record(s, hostname, state, reason):
    device_uuids = list(s.connection().execute(
        _DEVICES_OF_HOST, {'hostname': hostname}).scalars())
    event = notifications.Event(
        'agent.%s' % state, {'hostname': hostname, 'state': state,
                             'device_uuids': device_uuids},
        state='agent_%s' % state, reason=reason)
    device_history.record_for_devices(s, event, device_uuids)


# Built once: a bind reads it under its locks (db/devices.region_rows).
_STATE_OF = sa.select(AGENT.state).where(
    AGENT.hostname == sa.bindparam('hostname'))


def state_of(s, hostname):
    """'up' or 'down' as stored, or None when the host has no row."""
    return s.connection().execute(_STATE_OF, {'hostname': hostname}).scalar()


def get(hostname):
    """The Agent row of ``hostname``, or None."""
    with session.reader() as s:
        return s.scalars(sa.select(AGENT)
                         .where(AGENT.hostname == hostname)).first()
