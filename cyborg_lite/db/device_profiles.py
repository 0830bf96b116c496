"""Device profiles: plain DB writes from the API (no host is involved).

Visibility: a profile with ``project_id`` NULL is public (an admin made it
for everybody); one with a project is seen only by that project and by
admins. Functions take ``visible_to``: pagination.ALL for an admin's view,
else the caller's project id.
"""
import functools
import json

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cyborg_lite.common import exception
from cyborg_lite.common import uuids
from cyborg_lite.db import models
from cyborg_lite.db.sql import direct_statement
from cyborg_lite.db.sql import pagination
from cyborg_lite.db.sql import session

ALL = pagination.ALL
SORT_KEYS = ('created_at', 'uuid', 'name')
_NewProfile = models.new_row_type(models.DeviceProfile)
_INSERT = direct_statement.DirectStatement(
    sa.insert(models.DeviceProfile.__table__).values(
        {key: sa.bindparam(key)
         for key in _NewProfile._fields if key != 'id'}))


def _visible(stmt, visible_to):
    if visible_to is ALL:
        return stmt
    return stmt.where(sa.or_(models.DeviceProfile.project_id.is_(None),
                             models.DeviceProfile.project_id == visible_to))


def groups_of(profile):
    """The request groups of a profile row (stored as JSON text)."""
    return json.loads(profile.profile_json)


def create_profile(name, groups, description=None, project_id=None,
                   uuid=None):
    """The new profile, a plain row (models.new_row_type, ``id`` None)."""
    profile = _NewProfile(
        uuid=uuid or uuids.new(), name=name,
        description=description, project_id=project_id,
        profile_json=json.dumps(groups, sort_keys=True),
        created_at=models.utcnow())
    values = profile._asdict()
    del values['id']
    try:
        with session.statement_writer() as conn:
            # NOTE: not through the ORM, whose unit of work for one object
            # was a third of the request's time (see direct_statement).
            _INSERT.rows(conn, values)
    except sa_exc.IntegrityError:
        # NOTE: name and uuid are both unique; say which one clashed.
        with session.reader() as s:
            taken = s.scalar(sa.select(sa.func.count())
                             .where(models.DeviceProfile.uuid == uuid))
        if uuid and taken:
            raise exception.Conflict(
                reason='a device profile with uuid %s already exists' % uuid)
        raise exception.DuplicateName(kind='device profile', name=name)
    return profile


def list_profiles(visible_to, names=None, **page):
    stmt = _visible(sa.select(models.DeviceProfile), visible_to)
    if names:
        stmt = stmt.where(models.DeviceProfile.name.in_(names))
    with session.reader() as s:
        rows = pagination.paginate(s, stmt, models.DeviceProfile, **page)
    return [row[0] for row in rows]


def _lookup(s, visible_to, uuid=None, name=None):
    stmt = _visible(sa.select(models.DeviceProfile), visible_to)
    if uuid is not None:
        stmt = stmt.where(models.DeviceProfile.uuid == uuid)
    else:
        stmt = stmt.where(models.DeviceProfile.name == name)
    profile = s.scalars(stmt).first()
    if profile is None:
        raise exception.DeviceProfileNotFound(ident=uuid or name)
    return profile


@functools.lru_cache(maxsize=None)
def _get_statement(by, scoped, columns):
    # NOTE: built once: composing the select was a good part of an ARQ
    # creation's profile lookup (the ORM entity load the rest).
    table = models.DeviceProfile.__table__
    if columns:
        stmt = sa.select(*(table.c[name] for name in columns))
    else:
        stmt = sa.select(table)
    stmt = stmt.where(table.c[by] == sa.bindparam('ident'))
    if scoped:
        stmt = stmt.where(sa.or_(
            table.c.project_id.is_(None),
            table.c.project_id == sa.bindparam('project')))
    return direct_statement.DirectStatement(stmt)


def get_profile(visible_to, uuid=None, name=None):
    """The profile with this uuid or name, if the caller may see it: a
    read-only row with the table's columns."""
    with session.core_reader() as conn:
        return find(conn, visible_to, uuid=uuid, name=name)


def find(conn, visible_to, uuid=None, name=None, columns=None):
    """get_profile within the caller's transaction (``conn``: a Core
    connection, db/sql/session.core_writer or core_reader); only the
    ``columns`` named, when given (a tuple of column keys)."""
    by, ident = ('uuid', uuid) if uuid is not None else ('name', name)
    params = {'ident': ident}
    if visible_to is not ALL:
        params['project'] = visible_to
    found = _get_statement(by, visible_to is not ALL, columns).rows(
        conn, params)
    if not found:
        raise exception.DeviceProfileNotFound(ident=ident)
    return found[0]


def delete_profiles(visible_to, uuids=(), names=(), may_delete=None):
    """Delete the named profiles, all or none; returns them.

    Refused with DeviceProfileInUse (409) while an ARQ refers to one of
    them. ``may_delete(profile)`` is the caller's ownership check
    (policy), run on every row before anything is deleted.
    """
    idents = [('uuid', u) for u in uuids] + [('name', n) for n in names]
    try:
        with session.writer() as s:
            profiles = [_lookup(s, visible_to, **{kind: value})
                        for kind, value in idents]
            for profile in profiles:
                if may_delete is not None:
                    may_delete(profile)
                _refuse_in_use(s, profile)
            for profile in profiles:
                s.delete(profile)
    except sa_exc.IntegrityError:
        # NOTE: an ARQ created after the check: the foreign key (ON DELETE
        # RESTRICT) refuses the delete and nothing is deleted.
        raise exception.DeviceProfileInUse(
            ident=', '.join(v for _, v in idents), count=1)
    return profiles


def _refuse_in_use(s, profile):
    in_use = s.scalar(
        sa.select(sa.func.count())
        .where(models.AcceleratorRequest.device_profile_id == profile.id))
    if in_use:
        raise exception.DeviceProfileInUse(ident=profile.name, count=in_use)


_GROUPS_OF_ID = sa.select(models.DeviceProfile.profile_json).where(
    models.DeviceProfile.id == sa.bindparam('profile_id'))


def group(s, profile_id, group_id):
    """Request group ``group_id`` of a profile as a dict, or None when the
    profile or the group does not exist (an ARQ's group, for its bind)."""
    profile_json = s.connection().execute(
        _GROUPS_OF_ID, {'profile_id': profile_id}).scalar()
    if profile_json is None:
        return None
    groups = json.loads(profile_json or '[]')
    if not 0 <= group_id < len(groups):
        return None
    return groups[group_id]
