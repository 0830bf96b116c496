"""Queries of the ``bitstreams`` table.

Rows are returned detached (sessions use expire_on_commit=False), so
callers read their attributes after the transaction ended.
"""

import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.common import uuids
from cyborg_lite.db import models
from cyborg_lite.db.sql import clock
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import pagination
from cyborg_lite.db.sql import session

# Columns a caller may set on create; uuid, status, timestamps are ours.
CREATE_FIELDS = ('name', 'version', 'vendor', 'format', 'region_type',
                 'function_id', 'function_name', 'local_memory_mb',
                 'sha256', 'size', 'project_id', 'visibility')
# Columns an upload may fill from the image header once it is stored.
UPLOAD_FIELDS = ('format', 'region_type', 'function_id', 'function_name',
                 'vendor')
UPLOADABLE_STATUSES = ('queued', 'saving')
# What the API lists by and sorts on (sort keys must be NOT NULL).
FILTERS = ('region_type', 'function_id', 'vendor', 'format', 'visibility',
           'status', 'name')
SORT_KEYS = ('created_at', 'uuid', 'name', 'format', 'status')


def _check_choice(field, value, choices):
    if value not in choices:
        raise exception.Invalid(reason='%s must be one of %s, got %r'
                                % (field, ', '.join(choices), value))


def _validate(values):
    unknown = sorted(set(values) - set(CREATE_FIELDS))
    if unknown:
        raise exception.Invalid(reason='unknown bitstream fields: %s'
                                % ', '.join(unknown))
    if not isinstance(values.get('name'), str) or not values['name']:
        raise exception.Invalid(reason='name must be a non-empty string')
    _check_choice('format', values.get('format'), models.BITSTREAM_FORMATS)
    _check_choice('visibility', values.get('visibility', 'private'),
                  models.VISIBILITIES)
    memory = values.get('local_memory_mb', 0)
    if isinstance(memory, bool) or not isinstance(memory, int) or memory < 0:
        raise exception.Invalid(reason='local_memory_mb must be an integer '
                                '>= 0, got %r' % (memory,))


def create(values):
    """Insert a bitstream (status 'queued' until its bytes are stored)."""
    _validate(values)
    row = models.Bitstream(uuid=uuids.new(), status='queued',
                           **values)
    with session.writer() as s:
        s.add(row)
    return row


def _get(s, bitstream_uuid):
    row = s.scalars(sa.select(models.Bitstream).where(
        models.Bitstream.uuid == bitstream_uuid)).one_or_none()
    if row is None:
        raise exception.BitstreamNotFound(uuid=bitstream_uuid)
    return row


def get(bitstream_uuid):
    with session.reader() as s:
        return _get(s, bitstream_uuid)


def region_type_of(bitstream_uuid):
    """The region type a bitstream is made for; None when it has none or
    there is no such bitstream (the programming checks say so later)."""
    with session.reader() as s:
        return s.scalar(sa.select(models.Bitstream.region_type).where(
            models.Bitstream.uuid == bitstream_uuid))


def images_of(s, bitstream_uuids, function_ids, project_id=None):
    """In ``s``'s transaction, what a profile's images need of a region:
    ({bitstream uuid: region type} of those named,
    {function id: {region type}} of the active bitstreams loading them,
    public ones and ``project_id``'s), as a device profile explain reads
    them."""
    region_types, functions = {}, {}
    if bitstream_uuids:
        region_types = dict(s.execute(
            sa.select(models.Bitstream.uuid, models.Bitstream.region_type)
            .where(models.Bitstream.uuid.in_(sorted(bitstream_uuids)))).all())
    if function_ids:
        wanted = {f.replace('-', '').lower(): f for f in function_ids}
        stmt = sa.select(models.Bitstream.function_id,
                         models.Bitstream.region_type).where(
            models.Bitstream.status == 'active',
            visible_to(project_id) if project_id else
            models.Bitstream.visibility == 'public')
        for function_id, region_type in s.execute(stmt):
            name = wanted.get((function_id or '').replace('-', '').lower())
            if name and region_type:
                functions.setdefault(name, set()).add(region_type)
    return region_types, functions


def visible_to(project_id):
    """Clause: public bitstreams and those of ``project_id``."""
    return sa.or_(models.Bitstream.visibility == 'public',
                  models.Bitstream.project_id == project_id)


def list_bitstreams(region_type=None, function_id=None, vendor=None,
                    visibility=None, status=None, sha256=None,
                    project_id=None, visible_to_project=None):
    """Bitstreams matching every given filter, oldest first.

    ``project_id`` selects one owner; ``visible_to_project`` selects what a
    non-admin member of that project may see (its own and public ones).
    """
    column = models.Bitstream
    query = sa.select(column).order_by(column.created_at, column.id)
    for attr, value in (('region_type', region_type),
                        ('function_id', function_id), ('vendor', vendor),
                        ('visibility', visibility), ('status', status),
                        ('sha256', sha256), ('project_id', project_id)):
        if value is not None:
            query = query.where(getattr(column, attr) == value)
    if visible_to_project is not None:
        query = query.where(visible_to(visible_to_project))
    with session.reader() as s:
        return list(s.scalars(query))


def _seen_by(stmt, viewer):
    """``stmt`` limited to what ``viewer`` (pagination.ALL, a project id,
    or None for a caller without a project) may see."""
    if viewer is pagination.ALL:
        return stmt
    if viewer is None:
        # NOTE: not visible_to(None): "project_id = NULL" would show a
        # projectless caller every projectless private bitstream.
        return stmt.where(models.Bitstream.visibility == 'public')
    return stmt.where(visible_to(viewer))


def page_bitstreams(viewer, filters=None, **page):
    """One page of the bitstreams ``viewer`` may see (for the API)."""
    stmt = sa.select(models.Bitstream)
    stmt = pagination.apply_filters(stmt, models.Bitstream, FILTERS, filters)
    with session.reader() as s:
        rows = pagination.paginate(s, _seen_by(stmt, viewer),
                                   models.Bitstream, **page)
    return [row[0] for row in rows]


def get_visible(viewer, bitstream_uuid):
    """The bitstream if ``viewer`` may see it, else BitstreamNotFound
    (another project's private bitstream is not shown to exist)."""
    stmt = _seen_by(sa.select(models.Bitstream).where(
        models.Bitstream.uuid == bitstream_uuid), viewer)
    with session.reader() as s:
        row = s.scalars(stmt).one_or_none()
    if row is None:
        raise exception.BitstreamNotFound(uuid=bitstream_uuid)
    return row


def set_status(bitstream_uuid, from_statuses, status):
    """Conditional status change (e.g. queued -> saving, -> killed)."""
    _check_choice('status', status, models.BITSTREAM_STATUSES)
    with session.writer() as s:
        row = _get(s, bitstream_uuid)
        _update_if_status(s, row, from_statuses, {'status': status})
        s.refresh(row)
        return row


def _update_if_status(s, row, from_statuses, values):
    bitstream = models.Bitstream
    if not conditional.update(s, bitstream, bitstream.id == row.id,
                              dict(values, updated_at=models.utcnow()),
                              bitstream.status.in_(from_statuses)):
        raise exception.Conflict(
            reason='bitstream %s is %s; this needs one of: %s'
            % (row.uuid, row.status, ', '.join(from_statuses)))


def begin_upload(bitstream_uuid):
    """'queued' or 'saving' -> 'saving'; Conflict once it is 'active'.

    The caller holds the upload's staging lock (bitstreams/staging), so
    a bitstream already 'saving' is one whose uploader died: taking it
    over is the recovery.
    """
    return set_status(bitstream_uuid, UPLOADABLE_STATUSES, 'saving')


def uuids_saving():
    """Uuids of the bitstreams whose upload is (or was, until its process
    died) in progress."""
    with session.reader() as s:
        return list(s.scalars(sa.select(models.Bitstream.uuid).where(
            models.Bitstream.status == 'saving')))


def set_uploaded(bitstream_uuid, sha256, size, **header_fields):
    """Record stored bytes and make the bitstream 'active'.

    Allowed only while 'queued' or 'saving', so two uploads racing for one
    bitstream cannot both win. ``header_fields`` (format, region_type,
    function_id, function_name) are what the image header filled in.
    """
    unknown = sorted(set(header_fields) - set(UPLOAD_FIELDS))
    if unknown:
        raise exception.Invalid(reason='fields not settable by an upload: %s'
                                % ', '.join(unknown))
    values = dict(header_fields, sha256=sha256, size=size, status='active')
    with session.writer() as s:
        row = _get(s, bitstream_uuid)
        _update_if_status(s, row, UPLOADABLE_STATUSES, values)
        s.refresh(row)
        return row


def set_signature(bitstream_uuid, signature, key_id=None):
    """Attach (or, with ``signature`` None, remove) the detached
    signature of an active bitstream's image, received now (the
    database's time); Conflict unless the image is stored."""
    values = {'signature': signature, 'signature_key_id': key_id,
              'signed_at': clock.utc_now() if signature else None}
    with session.writer() as s:
        row = _get(s, bitstream_uuid)
        _update_if_status(s, row, ('active',), values)
        s.refresh(row)
        return row


def sha256_in_use(sha256, except_uuid=None):
    """Whether another bitstream row shares these stored bytes."""
    query = sa.select(sa.func.count(models.Bitstream.id)).where(
        models.Bitstream.sha256 == sha256)
    if except_uuid is not None:
        query = query.where(models.Bitstream.uuid != except_uuid)
    with session.reader() as s:
        return s.scalar(query) > 0


def _refuse_if_jobs(s, row):
    job = models.ProgrammingJob
    active = s.scalars(sa.select(job.uuid).where(
        job.bitstream_id == row.id,
        job.active_deployable_id.is_not(None)).limit(1)).first()
    if active is not None:
        raise exception.BitstreamInUse(
            uuid=row.uuid, reason='programming job %s is using it' % active)
    # programming_jobs.bitstream_id is ON DELETE RESTRICT: finished jobs
    # keep their history, so the database would refuse the delete anyway.
    done = s.scalar(sa.select(sa.func.count(job.id)).where(
        job.bitstream_id == row.id))
    if done:
        raise exception.BitstreamInUse(
            uuid=row.uuid, reason='%d finished programming jobs refer to it'
            % done)


def delete(bitstream_uuid):
    """Delete the row; return it. Refused while any job refers to it.

    The caller removes the stored bytes if ``sha256_in_use`` says no other
    bitstream shares them.
    """
    with session.writer() as s:
        row = _get(s, bitstream_uuid)
        _refuse_if_jobs(s, row)
        s.delete(row)
        return row
