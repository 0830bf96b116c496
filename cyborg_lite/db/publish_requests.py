"""Publish requests: hosts whose offer changed and may not be published
yet.

Every transaction that changes what a host offers adds a request in that
same transaction, so the change and the request commit together: an
agent report that wrote rows (db/inventory.py), a succeeded programming
job (a region's function, db/deployables.record_loaded), a cleaning move
that offers a region again (db/cleaning.py), a bind or unbind
on a function sibling handles share, a device disabled or enabled, an
agent marked down or up. The conductor publishes the host right after
(conductor/publishing.Publisher.publish_host) or, for the requests left,
from its periodic task (``publish_requested``), and then deletes the
requests it served: a conductor killed in between leaves them for the
next one (a host published twice is harmless). Insert-only rows: writers
never wait for each other here.

``published_hosts`` records, with each serve, which publisher (one per
conductor process, conductor/publishing.py) served the host last; see
``state``.
"""
import collections

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cyborg_lite.db import models
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import session

REQUEST = models.PublishRequest
PUBLISHED = models.PublishedHost
MAX_REASON = 255


_INFO_KEY = 'publish_requested_for'


# Built once, run on the session's connection: the ORM's unit of work
# for one insert-only row cost more than the rest of adding it.
_INSERT_REQUEST = sa.insert(REQUEST.__table__)


def add(s, hostname, reason):
    """Request a publish of ``hostname`` in the caller's transaction."""
    s.connection().execute(_INSERT_REQUEST, {
        'hostname': hostname, 'reason': reason[:MAX_REASON]})
    s.info.setdefault(_INFO_KEY, set()).add(hostname)


def add_for_deployable(s, deployable_id, reason):
    """Request a publish of the deployable's host in the caller's
    transaction."""
    hostname = s.scalar(
        sa.select(models.Device.hostname)
        .join(models.Deployable,
              models.Deployable.device_id == models.Device.id)
        .where(models.Deployable.id == deployable_id))
    if hostname is not None:
        add(s, hostname, reason)


def requested_in(s):
    """The hostnames the transaction of session ``s`` requested so far (so
    its caller can ask a conductor to publish them now)."""
    return set(s.info.get(_INFO_KEY, ()))


def pending(limit=1000):
    """{hostname: highest request id} of the hosts waiting."""
    with session.reader() as s:
        rows = s.execute(sa.select(REQUEST.hostname, sa.func.max(REQUEST.id))
                         .group_by(REQUEST.hostname)
                         .order_by(sa.func.max(REQUEST.id))
                         .limit(limit))
        return dict(rows.all())


# What a publisher needs to know of a host before publishing it.
State = collections.namedtuple('State', ['last_id', 'pending', 'publisher',
                                         'oldest_at'])


# Built once: every publish asks, in one round trip.
_REQUESTS_TABLE = REQUEST.__table__
_PUBLISHED_TABLE = PUBLISHED.__table__
_STATE = sa.select(
    sa.func.max(_REQUESTS_TABLE.c.id), sa.func.count(_REQUESTS_TABLE.c.id),
    sa.select(_PUBLISHED_TABLE.c.publisher)
    .where(_PUBLISHED_TABLE.c.hostname == sa.bindparam('hostname'))
    .scalar_subquery(),
    sa.func.min(_REQUESTS_TABLE.c.created_at),
).where(_REQUESTS_TABLE.c.hostname == sa.bindparam('hostname'))


_DELETE_SERVED = sa.delete(_REQUESTS_TABLE).where(
    _REQUESTS_TABLE.c.hostname == sa.bindparam('hostname'),
    _REQUESTS_TABLE.c.id <= sa.bindparam('up_to_id'))
# (Parameters named apart from the columns: SQLAlchemy keeps a column's
# name for itself in an INSERT's or UPDATE's values.)
_RECORD = conditional.statement(
    PUBLISHED, PUBLISHED.hostname == sa.bindparam('host'),
    {'publisher': sa.bindparam('served_by'),
     'request_id': sa.bindparam('served_id')},
    PUBLISHED.request_id <= sa.bindparam('served_id'), bump_version=False)
_PUBLISHED_ROW = sa.select(_PUBLISHED_TABLE.c.hostname).where(
    _PUBLISHED_TABLE.c.hostname == sa.bindparam('host'))
_INSERT_PUBLISHED = sa.insert(_PUBLISHED_TABLE).values(
    hostname=sa.bindparam('host'), publisher=sa.bindparam('served_by'),
    request_id=sa.bindparam('served_id'))


def state(hostname):
    """State(highest request id or None, how many are pending, the
    publisher that served the host last or None, when the oldest pending
    request was made or None).

    A publish that reads the host after this serves every request up to
    ``last_id``. A publisher that served the host last, with at most the
    change at hand pending (``pending <= 1``), may trust what it wrote:
    every other publish of the host since would have left or served a
    request (placement/sink.py writes the difference without reading)."""
    with session.core_reader() as conn:
        return State(*conn.execute(_STATE, {'hostname': hostname}).one())


def served(hostname, up_to_id, publisher=None):
    """Delete the host's requests up to ``up_to_id``: those published. A
    request added meanwhile has a higher id and stays. ``publisher``
    (who published) is recorded as the host's last, in the same
    transaction."""
    for attempt in range(2):
        try:
            with session.writer() as s:
                deleted = s.connection().execute(
                    _DELETE_SERVED, {'hostname': hostname,
                                     'up_to_id': up_to_id}).rowcount
                if publisher is not None:
                    _record(s, hostname, publisher, up_to_id)
                return deleted
        except sa_exc.IntegrityError:
            # NOTE: two publishers recorded a new host at once; the
            # second try finds the row.
            if attempt:
                raise
    raise AssertionError('unreachable')


def _record(s, hostname, publisher, request_id):
    """``publisher`` served the host up to ``request_id``: the host's last
    publisher, unless one already served a later request (a slow publish
    serving last must not pass for the one that knows the newest
    state)."""
    params = {'host': hostname, 'served_by': publisher,
              'served_id': request_id}
    if conditional.run(s, _RECORD, params):
        return
    conn = s.connection()
    if conn.execute(_PUBLISHED_ROW, params).first() is None:
        conn.execute(_INSERT_PUBLISHED, params)
