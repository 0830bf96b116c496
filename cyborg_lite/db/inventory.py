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
     'health_reason': None,                 # why, when not healthy
     'values': {column: value},             # other devices columns
     'cpid_info': '{"bus":...}' or None,    # PCI controlpath id
     'deployables': {db_name: {'health': ..., 'health_reason': ...,
                               'values': {column: value},
                               'attributes': {key: value},
                               'handles': {attach_info_json: attach_type}}}}

Rules:
- Devices are keyed by (hostname, driver, identity), deployables by their
  global name, attributes by key, attach handles by canonical attach_info
  JSON. Rows of other hosts and drivers are never read for update.
- Only attributes whose value really differs are assigned, so a report
  equal to what is stored issues no INSERT, UPDATE or DELETE at all.
- A report equal to what is stored is found so by one read transaction
  of plain tuples (db/inventory_diff.py), with no writer lock and no
  ORM objects: what nearly every periodic report is. One that only
  changes values of stored rows is written as UPDATEs by id and version
  from the same comparison (``_apply_values``); only one that adds or
  removes rows loads the host as ORM objects (``_apply``).
- A report that writes rows requests a publish of the host in the same
  transaction (db/publish_requests.py).
- A row missing from the scan is deleted, except what is held: an
  attach handle whose function is in use (its flag or an ARQ, or those
  of a sibling's handle naming the same function) is kept with its
  deployable and device, and so is a deployable not wiped yet after its
  last tenant (``device_state`` other than available), with every
  deployable behind one of its functions, until a later scan no longer
  needs them. A held function handed to a guest (vfio-pci) leaves the
  host driver's view with everything behind it: a VF its region, a PF of
  a card without SR-IOV every region of the card (common/
  shared_functions.py: one accelerator). That is who holds them, not
  what their hardware says, so a kept deployable is kept whole and as it
  was: its health stays what the agent last reported, and what does not
  share its function is offered as before (inventory/views.py
  decides availability).
  Nothing of a held one is written: a function handed to a guest and
  given back leaves no trace. A kept deployable to be wiped
  (pending_cleaning, cleaning or error: its last tenant is gone) gets
  one row, a note, the attribute db/cleaning.UNREPORTED, added by a
  report that leaves it out and dropped by one that lists it again (as
  any attribute a report leaves out): it is not cleaned while another
  driver has its function, and its clean starts once it is back
  (``Changes.returned``). A region released while out of view is noted
  by the report its agent sends when a clean finds it so
  (agent/cleaning.py). The note changes no offer: it is not counted in
  Changes and requests no publish.
- ``health_since`` is the database's time of the last change of health
  (or of the row's creation).

``store_rp_uuids`` records the resource provider uuids the Placement sink
computed, touching only rows whose value differs.
"""
import collections
import dataclasses
import random
import time

import sqlalchemy as sa
from oslo_log import log as logging
from sqlalchemy.orm import exc as orm_exc

from cyborg_lite.common import exception
from cyborg_lite.common import states
from cyborg_lite.common import uuids
from cyborg_lite.db import cleaning
from cyborg_lite.db import devices
from cyborg_lite.db import inventory_diff
from cyborg_lite.db import models
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import clock
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import session

LOG = logging.getLogger(__name__)

# NOTE: what another writer doing the same work at the same moment can
# cause: a unique-key clash on a row we both inserted, a stale version,
# a deadlock or a busy SQLite. Each is cured by starting over.
_RETRYABLE = (sa.exc.IntegrityError, sa.exc.OperationalError,
              orm_exc.StaleDataError)


HealthMove = collections.namedtuple(
    'HealthMove', ['device_id', 'deployable_id', 'old', 'new', 'reason'])


@dataclasses.dataclass
class Changes:
    """Rows written by one report; false when nothing was."""
    created: int = 0
    updated: int = 0
    deleted: int = 0
    kept_in_use: int = 0
    # Kept deployables a report lists again (their UNREPORTED note
    # dropped, counted in ``deleted``): a clean they wait for may start.
    returned: int = 0
    # The stored health of a device (deployable_id None) or region moved.
    health_moves: list = dataclasses.field(default_factory=list)

    def __bool__(self):
        return bool(self.created or self.updated or self.deleted)


def apply_report(hostname, scans, attempts=5, expect_change=False):
    """Apply ``{driver: [wanted device]}`` for ``hostname``; return Changes.

    ``expect_change``: the caller has reason to think the rows differ (the
    report is not the host's last one), so the read-only comparison that
    spares an unchanged report the writer is skipped; the writer's own
    comparison still decides what, if anything, is written.

    Raises InvalidReport (nothing changed) when a device is already stored
    under another driver of the host, ReportConflict after ``attempts``
    tries spoiled by concurrent writers.
    """
    if not scans:
        return Changes()
    if not expect_change:
        with session.core_reader(in_turn=True) as conn:
            if inventory_diff.Diff(conn, hostname, scans).unchanged:
                return Changes()
    for attempt in range(1, attempts + 1):
        try:
            with session.writer() as s:
                changes = _apply_values(s, hostname, scans)
                if changes is None:
                    changes = _apply(s, hostname, scans)
                if changes:
                    # NOTE: committed with the rows, so a conductor killed
                    # before it publishes them leaves the host to the
                    # next one's periodic task.
                    publish_requests.add(s, hostname, 'report changed '
                                         'its inventory')
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
_LOCK_DEVICES = (sa.select(_DEV.c.id)
                 .where(_DEV.c.hostname == sa.bindparam('hostname'),
                        _DEV.c.driver_name.in_(
                            sa.bindparam('drivers', expanding=True)))
                 .order_by(_DEV.c.id).with_for_update())


def _lock_devices(s, hostname, drivers):
    # NOTE: as _Stored: FOR UPDATE (ignored by SQLite, whose writer holds
    # the database lock) makes a second conductor applying a report of
    # the same host wait here, then read what the first one committed.
    s.connection().execute(_LOCK_DEVICES, {'hostname': hostname,
                                           'drivers': list(drivers)})


def _apply_values(s, hostname, scans):
    """Apply a report that only changes values of stored rows (a function
    loaded, a health change: nearly every changed report) as UPDATEs by
    id, each versioned row's checked and bumped as the ORM would; Changes,
    or None when a row must be added or removed (the ORM path, ``_apply``,
    does that)."""
    _lock_devices(s, hostname, sorted(scans))
    diff = inventory_diff.Diff(s.connection(), hostname, scans)
    if diff.structural:
        return None
    for model, row_id, version, values in diff.updates:
        if model is models.Device and 'health' in values:
            devices.health_changed(s, row_id, values['health'],
                                   reason=values.get('health_reason'))
        conditions = [] if version is None else [model.version == version]
        if not conditional.update(s, model, model.id == row_id, values,
                                  *conditions):
            raise orm_exc.StaleDataError('%s %s changed meanwhile'
                                         % (model.__tablename__, row_id))
    return Changes(updated=len(diff.updates),
                   health_moves=[HealthMove(*move)
                                 for move in diff.health_moves])


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
        self._kept_functions = None

    @property
    def busy(self):
        """Ids of the stored attach handles in use (flag or an ARQ).

        Asked only when a handle or deployable is about to be removed,
        so a report that removes none (nearly all of them) skips the ARQ
        query.
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

    def kept_functions(self):
        """(the functions a handle in use names, {function: ids of the
        deployables behind it not wiped yet}), a function being a
        handle's stored attach_info (canonical JSON: equal text, same
        function; the host's PCI addresses and mdev uuids are its own).

        Read from the rows as loaded: the report deletes only what no
        holder keeps, so removals never change the answer.
        """
        if self._kept_functions is None:
            unwiped = {dep.id for deps in self.deployables.values()
                       for dep in deps.values()
                       if dep.device_state != 'available'}
            in_use, not_wiped = set(), collections.defaultdict(set)
            for handle in self._stored_handles:
                if handle.id in self.busy:
                    in_use.add(handle.attach_info)
                if handle.deployable_id in unwiped:
                    not_wiped[handle.attach_info].add(handle.deployable_id)
            self._kept_functions = in_use, not_wiped
        return self._kept_functions

    def function_in_use(self, attach_info):
        """Whether a handle naming this function is in use (the one
        asked about, or a sibling's behind the same function)."""
        return attach_info in self.kept_functions()[0]

    def why_kept(self, dep):
        """Why a deployable missing from the scan is kept, or None."""
        if dep.device_state != 'available':
            return 'it is %s (not wiped yet)' % dep.device_state
        in_use, not_wiped = self.kept_functions()
        infos = {h.attach_info for h in self.handles.get(dep.id, {}).values()}
        if infos & in_use:
            return 'its PCI function is in use'
        if any(not_wiped[info] - {dep.id} for info in infos):
            return 'its PCI function reaches a sibling not wiped yet'
        return None

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
    return uuids.new()


def _set(obj, field, value):
    """Assign only a real difference, so an equal report writes nothing
    (a SQL expression, the database's clock, is always a change)."""
    if isinstance(value, sa.sql.ClauseElement) or \
            getattr(obj, field) != value:
        setattr(obj, field, value)
        return True
    return False


def _with_health(obj, values, want, changes):
    """``values`` with the health of ``want``; health_since when the
    health changes (a move recorded in ``changes``)."""
    values = inventory_diff.with_health(values, want)
    if obj.health != values['health']:
        values['health_since'] = clock.utc_now()
        is_device = isinstance(obj, models.Device)
        changes.health_moves.append(HealthMove(
            obj.id if is_device else obj.device_id,
            None if is_device else obj.id, obj.health, values['health'],
            values['health_reason']))
    return values


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
                            health_since=clock.utc_now(),
                            **inventory_diff.with_health(want['values'],
                                                         want))
        s.add(dev)
        s.flush()
        stored.devices.append(dev)
        changes.created += 1
    cpid = _sync_cpid(s, dev, want['cpid_info'], stored, changes)
    _sync_deployables(s, dev, want['deployables'],
                      cpid.id if cpid else None, stored, changes)
    values = _with_health(dev, want['values'], want, changes)
    if dev.health != values['health']:
        devices.health_changed(s, dev.id, values['health'],
                               reason=values['health_reason'])
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
    """Make the device's deployables match (keeping what is held).

    ``bitstream_id`` is left alone: the programming workflow owns it, and a
    scan taken before a job finished must not undo what the job recorded.
    """
    existing = stored.deployables.setdefault(dev.id, {})
    for name, want in sorted(wanted.items()):
        dep = existing.get(name)
        if dep is None:
            dep = models.Deployable(
                uuid=_new_uuid(), device_id=dev.id, name=name,
                driver_name=dev.driver_name, health_since=clock.utc_now(),
                **inventory_diff.with_health(want['values'], want))
            s.add(dep)
            s.flush()
            existing[name] = dep
            changes.created += 1
        else:
            _set_all(dep, _with_health(dep, want['values'], want, changes),
                     changes)
        if cleaning.UNREPORTED in stored.attributes.get(dep.id, {}):
            changes.returned += 1
        _sync_attributes(s, dep, want['attributes'], stored, changes)
        _sync_handles(s, dep, want['handles'], cpid_id, stored, changes)
    for name in sorted(set(existing) - set(wanted)):
        _remove_deployable(s, existing[name], stored, changes)


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
    """Make the deployable's attach handles match; a handle missing from
    the scan whose function is in use is kept."""
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
    for key in sorted(set(existing) - set(wanted)):
        if stored.function_in_use(key):
            changes.kept_in_use += 1
            LOG.info('Attach handle %s (%s) of deployable %s is gone from '
                     'the scan while its function is in use (handed to its '
                     'holder, e.g. a VF bound to vfio-pci for a guest); kept '
                     'while held', existing[key].uuid, key, dep.name)
            continue
        s.delete(existing.pop(key))
        changes.deleted += 1
    s.flush()


def _remove_deployable(s, dep, stored, changes):
    """Delete a deployable no longer reported; True if kept, whole and as
    it was: a function of it in use (through it or a sibling: a PF in a
    guest takes every region behind it out of the scan), or it, or a
    sibling behind one of its functions, not wiped yet after its last
    tenant (deleted, it would come back as a new, available row with the
    tenant's data)."""
    why = stored.why_kept(dep)
    if why is not None:
        changes.kept_in_use += 1
        LOG.info('Deployable %s is gone from the scan; kept while held, '
                 'as it is: %s', dep.name, why)
        _note_unreported(s, dep, stored)
        return True
    for handle in stored.handles.pop(dep.id, {}).values():
        s.delete(handle)
        changes.deleted += 1
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


def _note_unreported(s, dep, stored):
    """Note, once, that the kept ``dep``, to be wiped, is out of its host
    driver's view (db/cleaning.py waits for it before a clean). A held
    one is left as it is: nothing waits on the note while its holder has
    it, and its release sends a clean whose agent tells (agent/
    cleaning.py)."""
    if dep.device_state in states.DEVICE_SCHEDULABLE:
        return
    attrs = stored.attributes.setdefault(dep.id, {})
    if cleaning.UNREPORTED in attrs:
        return
    attrs[cleaning.UNREPORTED] = models.Attribute(
        uuid=_new_uuid(), deployable_id=dep.id, key=cleaning.UNREPORTED,
        value=clock.now(s).isoformat(sep=' ', timespec='seconds'))
    s.add(attrs[cleaning.UNREPORTED])
    s.flush()
    if dep.device_state == 'pending_cleaning':
        cleaning.note_wait(s, dep.id)


def _remove_device(s, dev, stored, changes):
    kept = False
    for dep in list(stored.deployables.get(dev.id, {}).values()):
        kept |= _remove_deployable(s, dep, stored, changes)
    if kept:
        # NOTE: as it was: a device handed whole to a guest (a GPU or a
        # PF bound to vfio-pci) is held, not faulty.
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
