"""Queries and transactions of the ``trusted_keys`` table.

A key is trusted for every project (``project_id`` NULL) or for one; it
signs bitstreams of the projects it is trusted for
(bitstreams/signatures.evaluate). A key id is registered once: the UNIQUE
constraint decides two registrations racing. Revocation is a conditional
UPDATE (one winner) and is final: a revoked key is never deleted, so it
cannot be registered again and its record stays.
"""
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cyborg_lite.common import exception
from cyborg_lite.common import uuids
from cyborg_lite.db import models
from cyborg_lite.db.sql import clock
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import pagination
from cyborg_lite.db.sql import session

Key = models.TrustedKey
# Columns a registration sets from bitstreams/signatures.KeyInfo.
KEY_FIELDS = ('key_id', 'algorithm', 'public_key', 'certificate', 'subject',
              'not_before', 'not_after')
FILTERS = ('key_id', 'project_id', 'algorithm', 'name')
SORT_KEYS = ('created_at', 'uuid', 'name', 'key_id', 'algorithm')


def _taken(key_id):
    with session.reader() as s:
        return s.scalars(sa.select(Key).where(Key.key_id == key_id)).first()


def create(info, name, project_id=None):
    """Register the key of ``info`` (a signatures.KeyInfo); Conflict when
    its key id is registered already (revoked or not)."""
    row = Key(uuid=uuids.new(), name=name, project_id=project_id,
              **{field: getattr(info, field) for field in KEY_FIELDS})
    try:
        with session.writer() as s:
            s.add(row)
    except sa_exc.IntegrityError:
        other = _taken(info.key_id)
        if other is None:
            raise
        raise exception.TrustedKeyExists(
            key_id=info.key_id, uuid=other.uuid,
            state='revoked' if other.revoked_at else 'trusted')
    return row


def _get(s, key_uuid):
    row = s.scalars(sa.select(Key).where(Key.uuid == key_uuid)).one_or_none()
    if row is None:
        raise exception.TrustedKeyNotFound(uuid=key_uuid)
    return row


def _seen_by(stmt, viewer):
    """Keys ``viewer`` (pagination.ALL, a project id, or None for a caller
    without a project) may see: the global ones and its project's."""
    if viewer is pagination.ALL:
        return stmt
    if viewer is None:
        return stmt.where(Key.project_id.is_(None))
    return stmt.where(sa.or_(Key.project_id.is_(None),
                             Key.project_id == viewer))


def get_visible(viewer, key_uuid):
    with session.reader() as s:
        row = s.scalars(_seen_by(sa.select(Key).where(Key.uuid == key_uuid),
                                 viewer)).one_or_none()
    if row is None:
        raise exception.TrustedKeyNotFound(uuid=key_uuid)
    return row


def page_keys(viewer, filters=None, **page):
    stmt = pagination.apply_filters(sa.select(Key), Key, FILTERS, filters)
    with session.reader() as s:
        rows = pagination.paginate(s, _seen_by(stmt, viewer), Key, **page)
    return [row[0] for row in rows]


def trusted_for(project_ids):
    """{project id: [keys]}: for each of ``project_ids`` (None: a
    bitstream without a project) the global keys and its own, revoked
    ones included (their signatures are ``revoked_key``), in one query."""
    wanted = {p for p in project_ids if p is not None}
    stmt = sa.select(Key).where(sa.or_(Key.project_id.is_(None),
                                       Key.project_id.in_(wanted)))
    with session.reader() as s:
        rows = list(s.scalars(stmt.order_by(Key.id)))
    return {project: [k for k in rows if k.project_id in (None, project)]
            for project in set(project_ids)}


def revoke(key_uuid, reason=None):
    """Revoke a key now (the database's time): from this commit on, no
    image it signed may be programmed. Conflict if it was revoked
    already (exactly one of two racing revocations wins)."""
    with session.writer() as s:
        row = _get(s, key_uuid)
        if not conditional.update(s, Key, Key.id == row.id,
                                  {'revoked_at': clock.utc_now(),
                                   'revocation_reason': reason,
                                   'updated_at': models.utcnow()},
                                  Key.revoked_at.is_(None)):
            raise exception.Conflict(reason='key %s was revoked already'
                                     % key_uuid)
        s.refresh(row)
        return row


def delete(key_uuid):
    """Delete a key registered by mistake; a revoked key is kept (409)."""
    with session.writer() as s:
        row = _get(s, key_uuid)
        gone = s.execute(sa.delete(Key).where(
            Key.id == row.id, Key.revoked_at.is_(None))).rowcount
        if not gone:
            raise exception.Conflict(
                reason='key %s is revoked: revoked keys are kept as the '
                       'record of the revocation, and so that the key can '
                       'never be trusted again' % key_uuid)
        return row
