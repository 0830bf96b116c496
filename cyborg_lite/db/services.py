"""Services: which release each running agent, conductor and API is.

One row per (kind, host), written with the service's heartbeat and
stamped with the database's clock: an agent's rides on its heartbeat's
transaction (db/agents.heartbeat), a conductor and an API beat for
themselves (``beat``). Whether a service is up is its heartbeat's age,
read by whoever lists them; nothing here moves a state.
"""
import json

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cyborg_lite.db import models
from cyborg_lite.db.sql import clock
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import session
from cyborg_lite.rpc import pins
from cyborg_lite.rpc import transport

SERVICE = models.Service
KINDS = ('agent', 'conductor', 'api')
# The RPC topic each kind serves (an API serves none).
TOPICS = {'agent': transport.AGENT_TOPIC,
          'conductor': transport.CONDUCTOR_TOPIC}


def beat(kind, host, release, rpc_versions):
    """Record that ``kind`` on ``host`` is alive and runs ``release``
    speaking ``rpc_versions`` ({topic: version})."""
    for _attempt in range(2):
        try:
            with session.writer() as s:
                return record(s, kind, host, release, rpc_versions)
        except sa_exc.IntegrityError:
            # NOTE: two first beats of one service inserted at once; the
            # second try finds the row.
            continue
    raise AssertionError('unreachable: the services row exists by now')


def record(s, kind, host, release, rpc_versions):
    """``beat`` inside the caller's transaction ``s`` (an IntegrityError
    when another inserted the row first: the caller tries again)."""
    if kind not in KINDS:
        raise ValueError('unknown service kind %r' % kind)
    values = {'release': release,
              'rpc_versions': (json.dumps(rpc_versions, sort_keys=True)
                               if rpc_versions is not None else None)}
    if conditional.update(s, SERVICE, sa.and_(SERVICE.kind == kind,
                                              SERVICE.host == host),
                          dict(values, heartbeat_at=clock.utc_now())):
        return
    s.add(SERVICE(kind=kind, host=host, heartbeat_at=clock.now(s),
                  **values))
    s.flush()


def list_all():
    """Every service, by kind then host, each as a dict with
    ``heartbeat_age``: seconds since its last heartbeat by the database's
    clock (so no host's clock skew makes one look down)."""
    with session.reader() as s:
        now = clock.now(s)
        rows = s.scalars(sa.select(SERVICE).order_by(SERVICE.kind,
                                                     SERVICE.host)).all()
        return [_as_dict(row, now) for row in rows]


def _as_dict(row, now):
    return {'kind': row.kind, 'host': row.host, 'release': row.release,
            'rpc_versions': (json.loads(row.rpc_versions)
                             if row.rpc_versions else None),
            'heartbeat_at': row.heartbeat_at,
            'heartbeat_age': max(0.0, (now - row.heartbeat_at)
                                 .total_seconds())}


def running_rpc_versions(kind, down_time):
    """The RPC versions ({topic: version}, None when it recorded none)
    of each ``kind`` service that beat in the last ``down_time`` seconds:
    what an ``auto`` pin (rpc/pins.py) follows."""
    return [s['rpc_versions'] for s in list_all()
            if s['kind'] == kind and s['heartbeat_age'] < down_time]


def version_cap(kind, level, down_time):
    """The cap of a client of ``kind``'s topic under ``level`` (an
    [upgrade_levels] value, rpc/pins.py), ``auto`` following the
    ``kind`` services running now."""
    return pins.version_cap(TOPICS[kind], level,
                            lambda: running_rpc_versions(kind, down_time))
