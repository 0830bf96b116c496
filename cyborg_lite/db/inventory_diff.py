"""How a host's stored inventory differs from what its report wants.

``Diff(conn, hostname, scans)`` reads the host's rows of the reported
drivers as the database driver's tuples, in three SELECTs with no lock,
and compares them with exactly what db/inventory.py's writing path would
assign. Nearly every periodic report is found ``unchanged`` here, with no
writer transaction; db/inventory.py writes the ``updates`` of a
value-only difference itself, and sends a ``structural`` one down its
ORM path. ``scans`` is db/inventory.apply_report's.
"""
import sqlalchemy as sa

from cyborg_lite.db import models
from cyborg_lite.db.sql import clock

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


# The columns compared: those a report's rows set (conductor/report.py's
# desired_device), and what finds and versions a row. A value the report
# sets that is not read here makes the difference structural (the ORM
# path writes it): slower, never wrong. Reading no more than these halves
# the deployables' columns, most of a host's rows.
_TOPOLOGY_COLUMNS = ('numa_node', 'local_cpulist', 'socket', 'pcie_root')
_DEV_COLUMNS = ('id', 'version', 'driver_name', 'identity', 'health',
                'health_reason', 'type', 'vendor', 'model', 'pci_address',
                'std_board_info', 'vendor_board_info', 'rp_uuid') + \
    _TOPOLOGY_COLUMNS
_DEP_COLUMNS = ('id', 'version', 'device_id', 'name', 'num_accelerators',
                'region_type', 'function_id', 'function_name',
                'local_memory_mb', 'rp_uuid', 'pci_bus_id', 'health',
                'health_reason') + _TOPOLOGY_COLUMNS


def _devices_with_cpids(drivers):
    # NOTE: a device has at most one control path (the writer keeps one);
    # a second would show as a repeated device and read as "changed".
    return _of_host(sa.select(*(_DEV.c[n] for n in _DEV_COLUMNS),
                              _CPID.c.id, _CPID.c.cpid_info)
                    .select_from(_DEV.outerjoin(
                        _CPID, _CPID.c.device_id == _DEV.c.id)), drivers)


def _deployables_with_handles(drivers):
    return _of_host(sa.select(*(_DEP.c[n] for n in _DEP_COLUMNS),
                              _HANDLE.c.attach_info,
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


def with_health(values, want):
    """A device's or deployable's wanted ``values`` with its health and
    reason (``health_since`` follows a change of health, by the
    database's clock)."""
    return dict(values, health=want['health'],
                health_reason=want['health_reason'])


def _index(names, start=0, count=None):
    """{column name: position} of ``names[start:start + count]``."""
    stop = None if count is None else start + count
    return {name: i for i, name in enumerate(names[start:stop], start)}


class Diff:
    """What the stored rows of a host lack to be what ``scans`` wants.

    Reads the host's rows as the database driver's tuples (no ORM) in
    three SELECTs and compares exactly what db/inventory.py's ``_apply``
    would assign. The result is either ``structural`` (a row to add or
    remove, or one stored twice: the ORM path decides) or ``updates``,
    the new values of stored rows as [(model, id, version or None,
    {column: value})]; ``unchanged`` when there are neither. A value of
    another type reads as a difference, never as equal.
    """

    _DEV_AT = _index(_DEV_COLUMNS)
    _CPID_ID = len(_DEV_COLUMNS)
    _DEP_AT = _index(_DEP_COLUMNS)
    _INFO, _TYPE, _HANDLE_CPID, _HANDLE_ID, _HANDLE_VERSION = range(
        len(_DEP_COLUMNS), len(_DEP_COLUMNS) + 5)

    def __init__(self, conn, hostname, scans):
        devices, deployables, attributes = _HostReads.read(
            conn, hostname, sorted(scans))
        self.updates = []
        # [(device id, deployable id or None, old health, new health,
        # reason)] among the updates.
        self.health_moves = []
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
            if not self._update(models.Device, row, dev,
                                with_health(want['values'], want)):
                return False
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
        """Record the columns of ``row`` that differ from ``values``;
        False if one of them is not read here."""
        try:
            new = {name: value for name, value in values.items()
                   if row[index[name]] != value}
        except KeyError:
            return False
        if 'health' in new:
            new['health_since'] = clock.utc_now()
            row_id = row[index['id']]
            device_id, deployable_id = (
                (row_id, None) if model is models.Device
                else (row[index['device_id']], row_id))
            self.health_moves.append((device_id, deployable_id,
                                      row[index['health']], new['health'],
                                      values['health_reason']))
        if new:
            self.updates.append((model, row[index['id']],
                                 row[index['version']], new))
        return True

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
        if not self._update(models.Deployable, row, self._DEP_AT,
                            with_health(want['values'], want)):
            return False
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
