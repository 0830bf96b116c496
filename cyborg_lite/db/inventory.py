"""All SQL that applies an agent report to the inventory tables.

``apply_report(hostname, scans)`` takes, per driver whose scan succeeded,
the rows its devices should have, and makes the stored devices,
controlpath ids, deployables, attributes and attach handles of exactly
those (hostname, driver) pairs look like that, in one transaction::

    changes = inventory.apply_report('node1', {'fake': [wanted, ...]})
    if changes:
        ...  # something was written; tell Placement

Each ``wanted`` device (built by conductor/report.py from a validated
DeviceRecord) is a dict::

    {'identity': '0000:5e:00.0',
     'health': 'healthy',                   # as reported
     'values': {column: value},             # other devices columns
     'cpid_info': '{"bus":...}' or None,    # PCI controlpath id
     'deployables': {db_name: {'values': {column: value},
                               'attributes': {key: value},
                               'handles': {attach_info_json: attach_type}}}}

Rules:
- Devices are keyed by (hostname, driver, identity), deployables by their
  global name, attributes by key, attach handles by canonical attach_info
  JSON. Rows of other hosts and drivers are never read for update.
- Only attributes whose value really differs are assigned, so a report
  equal to what is stored issues no INSERT, UPDATE or DELETE at all.
- A report equal to what is stored is found so by one read transaction
  of plain tuples (``_Diff``), with no writer lock and no ORM objects:
  what nearly every periodic report is. One that only changes values of
  stored rows is written as UPDATEs by id and version from the same
  comparison (``_apply_values``); only one that adds or removes rows
  loads the host as ORM objects (``_apply``).
- A row missing from the scan is deleted, except an attach handle in use
  (flag set or an ARQ pointing at it): it is kept with its deployable and
  the device is marked unhealthy until a later scan no longer needs it.

``store_rp_uuids`` records the resource provider uuids the Placement sink
computed, touching only rows whose value differs.
"""
import dataclasses
import random
import time
import uuid

import sqlalchemy as sa
from oslo_log import log as logging
from sqlalchemy.orm import exc as orm_exc

from cyborg_lite.common import exception
from cyborg_lite.db import conditional
from cyborg_lite.db import models
from cyborg_lite.db import session

LOG = logging.getLogger(__name__)

# NOTE: what another writer doing the same work at the same moment can
# cause: a unique-key clash on a row we both inserted, a stale version,
# a deadlock or a busy SQLite. Each is cured by starting over.
_RETRYABLE = (sa.exc.IntegrityError, sa.exc.OperationalError,
              orm_exc.StaleDataError)


@dataclasses.dataclass
class Changes:
    """Rows written by one report; false when nothing was."""
    created: int = 0
    updated: int = 0
    deleted: int = 0
    kept_in_use: int = 0

    def __bool__(self):
        return bool(self.created or self.updated or self.deleted)


def apply_report(hostname, scans, attempts=5):
    """Apply ``{driver: [wanted device]}`` for ``hostname``; return Changes.

    Raises InvalidReport (nothing changed) when a device is already stored
    under another driver of the host, ReportConflict after ``attempts``
    tries spoiled by concurrent writers.
    """
    if not scans:
        return Changes()
    with session.core_reader() as conn:
        if _Diff(conn, hostname, scans).unchanged:
            return Changes()
    for attempt in range(1, attempts + 1):
        try:
            with session.writer() as s:
                changes = _apply_values(s, hostname, scans)
                if changes is None:
                    changes = _apply(s, hostname, scans)
                return changes
        except _RETRYABLE as exc:
            if attempt == attempts:
                raise exception.ReportConflict(host=hostname,
                                               attempts=attempts,
                                               reason=exc)
            LOG.info('Report of %s clashed with another writer (%s); '
                     'retrying', hostname, type(exc).__name__)
            time.sleep(random.uniform(0, 0.05 * attempt))


_DEV = models.Device.__table__
_DEP = models.Deployable.__table__
_CPID = models.ControlpathId.__table__
_ATTR = models.Attribute.__table__
_HANDLE = models.AttachHandle.__table__


def _of_host(stmt, drivers):
    """``stmt`` restricted to one host's ``drivers`` (a number of them):
    bound as hostname, d0, d1, ..."""
    return stmt.where(_DEV.c.hostname == sa.bindparam('hostname'),
                      _DEV.c.driver_name.in_(
                          [sa.bindparam('d%d' % i) for i in range(drivers)]))


def _devices_with_cpids(drivers):
    # NOTE: a device has at most one control path (the writer keeps one);
    # a second would show as a repeated device and read as "changed".
    return _of_host(sa.select(*_DEV.c, _CPID.c.id, _CPID.c.cpid_info)
                    .select_from(_DEV.outerjoin(
                        _CPID, _CPID.c.device_id == _DEV.c.id)), drivers)


def _deployables_with_handles(drivers):
    return _of_host(sa.select(*_DEP.c, _HANDLE.c.attach_info,
                              _HANDLE.c.attach_type, _HANDLE.c.cpid_id,
                              _HANDLE.c.id, _HANDLE.c.version)
                    .select_from(_DEP.join(_DEV, _DEP.c.device_id ==
                                           _DEV.c.id)
                                 .outerjoin(_HANDLE, _HANDLE.c.deployable_id ==
                                            _DEP.c.id)), drivers)


def _attributes(drivers):
    return _of_host(sa.select(_ATTR.c.deployable_id, _ATTR.c.key,
                              _ATTR.c.value, _ATTR.c.id)
                    .select_from(_ATTR.join(_DEP, _ATTR.c.deployable_id ==
                                            _DEP.c.id)
                                 .join(_DEV, _DEP.c.device_id == _DEV.c.id)),
                    drivers)


class _HostReads:
    """The unchanged check's three SELECTs as the driver's SQL, rendered
    once per dialect and number of drivers.

    NOTE: run with ``exec_driver_sql`` and read from the DBAPI cursor:
    SQLAlchemy's compiled-statement path (cache lookup, expanding IN,
    result set-up) cost more than the database's own work, and this
    still goes through the connection's events and error handling.
    """

    _rendered = {}

    @classmethod
    def _render(cls, dialect, drivers):
        key = (type(dialect), dialect.paramstyle, drivers)
        found = cls._rendered.get(key)
        if found is None:
            found = cls._rendered[key] = tuple(
                (str(compiled), compiled.positiontup)
                for compiled in (
                    build(drivers).compile(dialect=dialect)
                    for build in (_devices_with_cpids,
                                  _deployables_with_handles, _attributes)))
        return found

    @classmethod
    def read(cls, conn, hostname, drivers):
        """(devices with cpids, deployables with handles, attributes):
        lists of the driver's tuples."""
        values = {'hostname': hostname}
        values.update(('d%d' % i, d) for i, d in enumerate(drivers))
        results = []
        for sql, positions in cls._render(conn.dialect, len(drivers)):
            params = (tuple(values[p] for p in positions)
                      if positions is not None else values)
            result = conn.exec_driver_sql(sql, params)
            try:
                results.append(result.cursor.fetchall())
            finally:
                result.close()
        return results


def _index(names, start=0, count=None):
    """{column name: position} of ``names[start:start + count]``."""
    stop = None if count is None else start + count
    return {name: i for i, name in enumerate(names[start:stop], start)}


class _Diff:
    """What the stored rows of a host lack to be what ``scans`` wants.

    Reads the host's rows as the database driver's tuples (no ORM) in
    three SELECTs and compares exactly what ``_apply`` would assign. The
    result is either ``structural`` (a row to add or remove, or one
    stored twice: the ORM path decides) or ``updates``, the new values
    of stored rows as [(model, id, version or None, {column: value})];
    ``unchanged`` when there are neither. A value of another type reads
    as a difference, never as equal.
    """

    _DEV_AT = _index([c.name for c in _DEV.c])
    _CPID_ID = len(_DEV.c)
    _DEP_AT = _index([c.name for c in _DEP.c])
    _INFO, _TYPE, _HANDLE_CPID, _HANDLE_ID, _HANDLE_VERSION = range(
        len(_DEP.c), len(_DEP.c) + 5)

    def __init__(self, conn, hostname, scans):
        devices, deployables, attributes = _HostReads.read(
            conn, hostname, sorted(scans))
        self.updates = []
        self.structural = not self._compare(devices, deployables,
                                            attributes, scans)

    @property
    def unchanged(self):
        return not self.structural and not self.updates

    def _compare(self, devices, deployables, attributes, scans):
        """Collect the updates; False if the difference is structural."""
        dev = self._DEV_AT
        stored = {(r[dev['driver_name']], r[dev['identity']]): r
                  for r in devices}
        wanted = {(driver, w['identity']): w
                  for driver, rows in scans.items() for w in rows}
        if len(stored) != len(devices) or stored.keys() != wanted.keys():
            return False
        by_device = self._deployables(deployables, attributes)
        if by_device is None:
            return False
        for key, want in wanted.items():
            row = stored[key]
            self._update(models.Device, row, dev,
                         dict(want['values'], health=want['health']))
            if not self._compare_cpid(row, want['cpid_info']):
                return False
            deps = by_device.get(row[dev['id']], {})
            if deps.keys() != want['deployables'].keys():
                return False
            for name, dep in want['deployables'].items():
                if not self._compare_deployable(deps[name], dep,
                                                row[self._CPID_ID]):
                    return False
        return True

    def _update(self, model, row, index, values):
        """Record the columns of ``row`` that differ from ``values``."""
        new = {name: value for name, value in values.items()
               if row[index[name]] != value}
        if new:
            version = row[index['version']] if 'version' in index else None
            self.updates.append((model, row[index['id']], version, new))

    def _compare_cpid(self, row, info):
        cpid_id = row[self._CPID_ID]
        if (cpid_id is None) != (info is None):
            return False
        if info is not None and row[self._CPID_ID + 1] != info:
            self.updates.append((models.ControlpathId, cpid_id, None,
                                 {'cpid_info': info}))
        return True

    def _compare_deployable(self, stored, want, cpid_id):
        row, attributes, handles = stored
        self._update(models.Deployable, row, self._DEP_AT, want['values'])
        if attributes.keys() != want['attributes'].keys() or \
                handles.keys() != want['handles'].keys():
            return False
        for key, value in want['attributes'].items():
            attr_id, stored_value = attributes[key]
            if stored_value != value:
                self.updates.append((models.Attribute, attr_id, None,
                                     {'value': value}))
        for info, attach_type in want['handles'].items():
            handle_id, version, values = handles[info]
            new = {name: value for name, value in
                   (('attach_type', attach_type), ('cpid_id', cpid_id))
                   if values[name] != value}
            if new:
                self.updates.append((models.AttachHandle, handle_id,
                                     version, new))
        return True

    def _deployables(self, deployables, attributes):
        """{device id: {name: (row, {key: (id, value)}, {attach_info:
        (id, version, {attach_type, cpid_id})})}} as stored; None if a
        handle is stored twice (the writer sorts that out)."""
        attrs = {}
        for dep_id, key, value, attr_id in attributes:
            attrs.setdefault(dep_id, {})[key] = (attr_id, value)
        dep = self._DEP_AT
        result = {}
        for r in deployables:
            by_name = result.setdefault(r[dep['device_id']], {})
            stored = by_name.get(r[dep['name']])
            if stored is None:
                stored = by_name[r[dep['name']]] = (
                    r, attrs.get(r[dep['id']], {}), {})
            info = r[self._INFO]
            if info is not None:
                if info in stored[2]:
                    return None
                stored[2][info] = (r[self._HANDLE_ID], r[self._HANDLE_VERSION],
                                   {'attach_type': r[self._TYPE],
                                    'cpid_id': r[self._HANDLE_CPID]})
        return result


def _lock_devices(s, hostname, drivers):
    # NOTE: as _Stored: FOR UPDATE (ignored by SQLite, whose writer holds
    # the database lock) makes a second conductor applying a report of
    # the same host wait here, then read what the first one committed.
    s.execute(sa.select(_DEV.c.id)
              .where(_DEV.c.hostname == hostname,
                     _DEV.c.driver_name.in_(drivers))
              .order_by(_DEV.c.id).with_for_update())


def _apply_values(s, hostname, scans):
    """Apply a report that only changes values of stored rows (a function
    loaded, a health change: nearly every changed report) as UPDATEs by
    id, each versioned row's checked and bumped as the ORM would; Changes,
    or None when a row must be added or removed (the ORM path, ``_apply``,
    does that)."""
    _lock_devices(s, hostname, sorted(scans))
    diff = _Diff(s.connection(), hostname, scans)
    if diff.structural:
        return None
    for model, row_id, version, values in diff.updates:
        conditions = [] if version is None else [model.version == version]
        if not conditional.update(s, model, model.id == row_id, values,
                                  *conditions):
            raise orm_exc.StaleDataError('%s %s changed meanwhile'
                                         % (model.__tablename__, row_id))
    return Changes(updated=len(diff.updates))


class _Stored:
    """What is stored for the reported (hostname, driver) pairs."""

    def __init__(self, s, hostname, drivers):
        # NOTE: FOR UPDATE (ignored by SQLite, whose writer already holds
        # the database lock) makes a second conductor applying a report of
        # the same host wait here, then read what the first one committed.
        self.devices = list(s.scalars(
            sa.select(models.Device)
            .where(models.Device.hostname == hostname,
                   models.Device.driver_name.in_(drivers))
            .order_by(models.Device.id).with_for_update()))
        dev_ids = [d.id for d in self.devices]
        self.cpids = {c.device_id: c for c in
                      _rows(s, models.ControlpathId,
                            models.ControlpathId.device_id, dev_ids)}
        self.deployables = {}
        deps = _rows(s, models.Deployable, models.Deployable.device_id,
                     dev_ids)
        for dep in deps:
            self.deployables.setdefault(dep.device_id, {})[dep.name] = dep
        dep_ids = [d.id for d in deps]
        self.attributes = {}
        for attr in _rows(s, models.Attribute,
                          models.Attribute.deployable_id, dep_ids):
            self.attributes.setdefault(attr.deployable_id, {})[
                attr.key] = attr
        self.handles = {}
        handles = _rows(s, models.AttachHandle,
                        models.AttachHandle.deployable_id, dep_ids)
        for handle in handles:
            self.handles.setdefault(handle.deployable_id, {})[
                handle.attach_info] = handle
        self._session = s
        self._stored_handles = handles
        self._busy = None

    @property
    def busy(self):
        """Ids of the stored attach handles in use (flag or an ARQ).

        Asked only when a handle is about to be removed, so a report that
        removes none (nearly all of them) skips the ARQ query.
        """
        if self._busy is None:
            handles = self._stored_handles
            busy = {h.id for h in handles if h.in_use}
            ids = [h.id for h in handles if not h.in_use]
            if ids:
                arq = models.AcceleratorRequest
                busy.update(self._session.scalars(
                    sa.select(arq.attach_handle_id)
                    .where(arq.attach_handle_id.in_(ids))))
            self._busy = busy
        return self._busy

    def device(self, driver, identity):
        for dev in self.devices:
            if dev.driver_name == driver and dev.identity == identity:
                return dev
        return None


def _rows(s, model, column, ids):
    # NOTE: no statement at all for an empty id list.
    if not ids:
        return []
    return list(s.scalars(sa.select(model).where(column.in_(ids))
                          .order_by(model.id)))


def _new_uuid():
    return str(uuid.uuid4())


def _set(obj, field, value):
    """Assign only a real difference, so an equal report writes nothing."""
    if getattr(obj, field) != value:
        setattr(obj, field, value)
        return True
    return False


def _set_all(obj, values, changes):
    changed = [_set(obj, field, value) for field, value in values.items()]
    if any(changed):
        changes.updated += 1


def _apply(s, hostname, scans):
    changes = Changes()
    stored = _Stored(s, hostname, sorted(scans))
    for driver in sorted(scans):
        wanted = scans[driver]
        _refuse_foreign_claims(s, hostname, driver, wanted, stored)
        reported = {w['identity'] for w in wanted}
        for want in wanted:
            _sync_device(s, hostname, driver, want, stored, changes)
        for dev in [d for d in stored.devices if d.driver_name == driver
                    and d.identity not in reported]:
            _remove_device(s, dev, stored, changes)
    return changes


def _refuse_foreign_claims(s, hostname, driver, wanted, stored):
    new = [w['identity'] for w in wanted
           if stored.device(driver, w['identity']) is None]
    if not new:
        return
    owner = s.execute(sa.select(models.Device.identity,
                                models.Device.driver_name)
                      .where(models.Device.hostname == hostname,
                             models.Device.identity.in_(new),
                             models.Device.driver_name != driver)).first()
    if owner is not None:
        raise exception.InvalidReport(
            host=hostname,
            reason='driver %s reports device %s, which driver %s already '
                   'reported; enable only one of them for this device'
                   % (driver, owner.identity, owner.driver_name))


def _sync_device(s, hostname, driver, want, stored, changes):
    dev = stored.device(driver, want['identity'])
    if dev is None:
        dev = models.Device(uuid=_new_uuid(), hostname=hostname,
                            driver_name=driver, identity=want['identity'],
                            health=want['health'], **want['values'])
        s.add(dev)
        s.flush()
        stored.devices.append(dev)
        changes.created += 1
    cpid = _sync_cpid(s, dev, want['cpid_info'], stored, changes)
    kept = _sync_deployables(s, dev, want['deployables'],
                             cpid.id if cpid else None, stored, changes)
    values = dict(want['values'],
                  health='unhealthy' if kept else want['health'])
    _set_all(dev, values, changes)


def _sync_cpid(s, dev, info, stored, changes):
    cpid = stored.cpids.get(dev.id)
    if info is None:
        if cpid is not None:
            # NOTE: attach handles referencing it get cpid_id NULL (FK).
            s.delete(cpid)
            s.flush()
            del stored.cpids[dev.id]
            changes.deleted += 1
        return None
    if cpid is None:
        cpid = models.ControlpathId(uuid=_new_uuid(), device_id=dev.id,
                                    cpid_type='PCI', cpid_info=info)
        s.add(cpid)
        s.flush()
        stored.cpids[dev.id] = cpid
        changes.created += 1
    else:
        _set_all(cpid, {'cpid_info': info}, changes)
    return cpid


def _sync_deployables(s, dev, wanted, cpid_id, stored, changes):
    """Make the device's deployables match; True if some were kept in use.

    ``bitstream_id`` is left alone: the programming workflow owns it, and a
    scan taken before a job finished must not undo what the job recorded.
    """
    existing = stored.deployables.setdefault(dev.id, {})
    kept = False
    for name, want in sorted(wanted.items()):
        dep = existing.get(name)
        if dep is None:
            dep = models.Deployable(uuid=_new_uuid(), device_id=dev.id,
                                    name=name, driver_name=dev.driver_name,
                                    **want['values'])
            s.add(dep)
            s.flush()
            existing[name] = dep
            changes.created += 1
        else:
            _set_all(dep, want['values'], changes)
        _sync_attributes(s, dep, want['attributes'], stored, changes)
        kept |= _sync_handles(s, dep, want['handles'], cpid_id, stored,
                              changes)
    for name in sorted(set(existing) - set(wanted)):
        kept |= _remove_deployable(s, existing[name], stored, changes)
    return kept


def _sync_attributes(s, dep, values, stored, changes):
    existing = stored.attributes.setdefault(dep.id, {})
    for key, value in values.items():
        attr = existing.get(key)
        if attr is None:
            existing[key] = models.Attribute(uuid=_new_uuid(),
                                             deployable_id=dep.id, key=key,
                                             value=value)
            s.add(existing[key])
            changes.created += 1
        else:
            _set_all(attr, {'value': value}, changes)
    for key in sorted(set(existing) - set(values)):
        s.delete(existing.pop(key))
        changes.deleted += 1


def _sync_handles(s, dep, wanted, cpid_id, stored, changes):
    """Make the deployable's attach handles match; True if one was kept."""
    existing = stored.handles.setdefault(dep.id, {})
    for key, attach_type in sorted(wanted.items()):
        handle = existing.get(key)
        values = {'attach_type': attach_type, 'cpid_id': cpid_id}
        if handle is None:
            existing[key] = models.AttachHandle(
                uuid=_new_uuid(), deployable_id=dep.id, in_use=False,
                attach_info=key, **values)
            s.add(existing[key])
            changes.created += 1
        else:
            _set_all(handle, values, changes)
    kept = False
    for key in sorted(set(existing) - set(wanted)):
        if existing[key].id in stored.busy:
            kept = True
            changes.kept_in_use += 1
            LOG.warning('Attach handle %s (%s) of deployable %s is gone from '
                        'the scan but still in use; keeping it and marking '
                        'the device unhealthy', existing[key].uuid, key,
                        dep.name)
            continue
        s.delete(existing.pop(key))
        changes.deleted += 1
    s.flush()
    return kept


def _remove_deployable(s, dep, stored, changes):
    """Delete a deployable no longer reported; True if kept for an ARQ."""
    if _sync_handles(s, dep, {}, None, stored, changes):
        return True
    for attr in stored.attributes.pop(dep.id, {}).values():
        s.delete(attr)
        changes.deleted += 1
    # NOTE: children first, flushed, so the database's ON DELETE CASCADE
    # never removes a versioned row under the ORM's feet.
    s.flush()
    del stored.deployables[dep.device_id][dep.name]
    s.delete(dep)
    s.flush()
    changes.deleted += 1
    return False


def _remove_device(s, dev, stored, changes):
    kept = False
    for dep in list(stored.deployables.get(dev.id, {}).values()):
        kept |= _remove_deployable(s, dep, stored, changes)
    if kept:
        _set_all(dev, {'health': 'unhealthy'}, changes)
        return
    cpid = stored.cpids.pop(dev.id, None)
    if cpid is not None:
        s.delete(cpid)
        s.flush()
        changes.deleted += 1
    s.delete(dev)
    s.flush()
    stored.devices.remove(dev)
    changes.deleted += 1


def _store_rp_uuid(s, model, rp_uuids):
    # NOTE: leaves ``version`` alone: rp_uuid is derived data only the
    # Placement sink writes, and bumping the version would make a
    # concurrent report's optimistic update fail for nothing.
    changed = 0
    for row_uuid, rp in rp_uuids.items():
        changed += conditional.update(
            s, model, model.uuid == row_uuid, {'rp_uuid': rp},
            sa.or_(model.rp_uuid.is_(None), model.rp_uuid != rp),
            bump_version=False)
    return changed


def store_rp_uuids(device_rps, deployable_rps, url=None):
    """Set the resource provider uuids the Placement sink computed
    ({row uuid: rp uuid}) where they differ; the number of rows changed."""
    with session.writer(url) as s:
        return (_store_rp_uuid(s, models.Device, device_rps) +
                _store_rp_uuid(s, models.Deployable, deployable_rps))
