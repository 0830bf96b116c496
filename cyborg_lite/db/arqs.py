"""Accelerator requests (ARQs): creation, reads and deletion for the API.

Binding and unbinding are the conductor's (cyborg_lite/conductor/bind.py);
the API only validates a bind/unbind and sends it over RPC. Deleting an
ARQ frees its attach handle in the same transaction, so a deleted bound ARQ
never leaves a handle marked in use.

``visible_to`` is pagination.ALL (an admin) or the caller's project id: an
ARQ is seen only by its own project.
"""
import collections
import uuid as uuidlib

import sqlalchemy as sa
from sqlalchemy.orm import exc as orm_exc

from cyborg_lite.common import exception
from cyborg_lite.common import resources
from cyborg_lite.db import models
from cyborg_lite.db import pagination
from cyborg_lite.db import session

ALL = pagination.ALL
SORT_KEYS = ('created_at', 'uuid', 'state', 'device_profile_group_id')
# Cyborg's "resolved" bind states: the bind ended, one way or the other.
RESOLVED_STATES = ('Bound', 'BindFailed', 'Deleting')
# Bind/unbind in flight: the conductor is working on the row.
BUSY_STATES = ('BindStarted',)

ARQView = collections.namedtuple('ARQView',
                                 ['arq', 'device_profile_name', 'handle'])


def _select():
    AH = models.AttachHandle
    return (sa.select(models.AcceleratorRequest, models.DeviceProfile.name, AH)
            .join(models.DeviceProfile, models.DeviceProfile.id
                  == models.AcceleratorRequest.device_profile_id)
            .outerjoin(AH, AH.id
                       == models.AcceleratorRequest.attach_handle_id))


def _visible(stmt, visible_to):
    if visible_to is ALL:
        return stmt
    return stmt.where(models.AcceleratorRequest.project_id == visible_to)


def accelerators_per_group(groups):
    """[count for each group] (see common/resources.py: sizes such as
    CUSTOM_FPGA_LOCAL_MEMORY_MB qualify an accelerator, they are not one)."""
    return [resources.accelerator_count(group) for group in groups]


def create_arqs(profile, groups, project_id, group_ids):
    """One Initial ARQ per requested accelerator, all in one transaction.

    :param profile: the DeviceProfile row (already checked visible).
    :param group_ids: indexes of the groups to create ARQs for.
    """
    counts = accelerators_per_group(groups)
    new = []
    with session.writer() as s:
        for group_id in group_ids:
            for _ in range(counts[group_id]):
                arq = models.AcceleratorRequest(
                    uuid=str(uuidlib.uuid4()), project_id=project_id,
                    state='Initial', device_profile_id=profile.id,
                    device_profile_group_id=group_id)
                s.add(arq)
                new.append(ARQView(arq, profile.name, None))
    return new


def list_arqs(visible_to, instance_uuid=None, states=None, **page):
    stmt = _visible(_select(), visible_to)
    if instance_uuid is not None:
        stmt = stmt.where(models.AcceleratorRequest.instance_uuid
                          == instance_uuid)
    if states is not None:
        stmt = stmt.where(models.AcceleratorRequest.state.in_(states))
    with session.reader() as s:
        rows = pagination.paginate(s, stmt, models.AcceleratorRequest, **page)
    return [ARQView(*row) for row in rows]


def get_arqs(visible_to, uuids):
    """ARQViews in the order of ``uuids``; ARQNotFound for any not seen."""
    stmt = _visible(_select(), visible_to).where(
        models.AcceleratorRequest.uuid.in_(uuids))
    with session.reader() as s:
        found = {row[0].uuid: ARQView(*row) for row in s.execute(stmt)}
    for uuid in uuids:
        if uuid not in found:
            raise exception.ARQNotFound(uuid=uuid)
    return [found[uuid] for uuid in uuids]


def instance_has_arqs(instance_uuid):
    with session.reader() as s:
        return bool(s.scalar(
            sa.select(sa.func.count())
            .where(models.AcceleratorRequest.instance_uuid == instance_uuid)))


def _delete(s, arqs):
    handle_ids = [a.attach_handle_id for a in arqs if a.attach_handle_id]
    if handle_ids:
        s.execute(sa.update(models.AttachHandle)
                  .where(models.AttachHandle.id.in_(handle_ids))
                  .values(in_use=False))
    for arq in arqs:
        s.delete(arq)


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
    """
    with session.writer() as s:
        stmt = _visible(sa.select(models.AcceleratorRequest), visible_to)
        rows = {a.uuid: a for a in s.scalars(
            stmt.where(models.AcceleratorRequest.uuid.in_(uuids)))}
        for uuid in uuids:
            arq = rows.get(uuid)
            if arq is None:
                raise exception.ARQNotFound(uuid=uuid)
            if arq.state in BUSY_STATES:
                raise exception.ARQStateConflict(
                    uuid=uuid, state=arq.state, action='delete',
                    expected='any state but %s' % ', '.join(BUSY_STATES))
            if may_delete is not None:
                may_delete(arq)
        _delete(s, list(rows.values()))


@_conflict_on_stale
def delete_by_instance(visible_to, instance_uuid):
    """Delete every ARQ of an instance; none is not an error (Nova calls
    this again on every teardown retry)."""
    with session.writer() as s:
        stmt = _visible(sa.select(models.AcceleratorRequest), visible_to)
        _delete(s, list(s.scalars(stmt.where(
            models.AcceleratorRequest.instance_uuid == instance_uuid))))
