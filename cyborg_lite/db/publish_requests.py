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
"""
import sqlalchemy as sa

from cyborg_lite.db import models
from cyborg_lite.db import session

REQUEST = models.PublishRequest
MAX_REASON = 255


_INFO_KEY = 'publish_requested_for'


def add(s, hostname, reason):
    """Request a publish of ``hostname`` in the caller's transaction."""
    s.add(REQUEST(hostname=hostname, reason=reason[:MAX_REASON]))
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


def last_id(hostname):
    """The host's highest request id, or None: a publish that reads the
    host after this serves every request up to it."""
    with session.reader() as s:
        return s.scalar(sa.select(sa.func.max(REQUEST.id))
                        .where(REQUEST.hostname == hostname))


def served(hostname, up_to_id):
    """Delete the host's requests up to ``up_to_id``: those published. A
    request added meanwhile has a higher id and stays."""
    with session.writer() as s:
        return s.execute(sa.delete(REQUEST).where(
            REQUEST.hostname == hostname,
            REQUEST.id <= up_to_id)).rowcount
