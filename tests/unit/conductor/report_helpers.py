"""Builders for agent reports and probes of what the database holds."""
import contextlib
import copy

import sqlalchemy as sa

from cyborg_lite.db import models
from cyborg_lite.db.sql import session

INVENTORY = (models.Device, models.ControlpathId, models.Deployable,
             models.Attribute, models.AttachHandle)


def fpga(identity='0000:5e:00.0', regions=2, model='PAC A10'):
    """An FPGA card as a driver's DeviceRecord.to_dict() gives it."""
    bus = identity.split(':')[1]
    return {
        'type': 'FPGA', 'vendor': '8086', 'model': model,
        'identity': identity, 'pci_address': identity, 'health': 'healthy',
        'std_board_info': {'device_id': '09c4'}, 'vendor_board_info': {},
        'deployables': [{
            'name': 'region%d' % i, 'resource_class': 'FPGA',
            'num_accelerators': 1, 'region_type': 'a1b2',
            'function_id': None, 'function_name': None,
            'local_memory_mb': 4096,
            'traits': ['CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_REGION_A1B2'],
            'attributes': {'slot': i},
            'attach_handles': [{'attach_type': 'PCI', 'attach_info': {
                'domain': '0000', 'bus': bus, 'device': '00',
                'function': str(i + 1)}}],
        } for i in range(regions)],
    }


def ok(driver, *devices):
    return {'driver': driver, 'ok': True, 'devices': list(devices),
            'error': None}


def failed(driver, error='sysfs unreadable'):
    return {'driver': driver, 'ok': False, 'devices': [], 'error': error}


def changed(device, **fields):
    device = copy.deepcopy(device)
    device.update(fields)
    return device


def snapshot():
    """Every inventory row with every column (versions and timestamps
    included), so any write at all shows as a difference."""
    rows = {}
    with session.reader() as s:
        for model in INVENTORY:
            table = model.__table__
            rows[table.name] = [tuple(r) for r in s.execute(
                sa.select(table).order_by(table.c.id))]
    return rows


def devices(hostname=None):
    with session.reader() as s:
        query = sa.select(models.Device).order_by(models.Device.identity)
        if hostname:
            query = query.where(models.Device.hostname == hostname)
        return list(s.scalars(query))


def rows(model, **where):
    with session.reader() as s:
        return list(s.scalars(sa.select(model).filter_by(**where)
                              .order_by(model.id)))


@contextlib.contextmanager
def count_statements():
    """The first keyword of every statement run inside the block."""
    statements = []
    engine = session.get_engine()

    def before(conn, cursor, statement, params, context, executemany):
        statements.append(statement.lstrip().split(None, 1)[0].upper())

    sa.event.listen(engine, 'before_cursor_execute', before)
    try:
        yield statements
    finally:
        sa.event.remove(engine, 'before_cursor_execute', before)


@contextlib.contextmanager
def count_writes():
    """Collect the INSERT/UPDATE/DELETE statements run inside the block."""
    writes = []
    engine = session.get_engine()

    def before(conn, cursor, statement, params, context, executemany):
        if statement.lstrip().split(None, 1)[0].upper() in (
                'INSERT', 'UPDATE', 'DELETE'):
            writes.append(statement)

    sa.event.listen(engine, 'before_cursor_execute', before)
    try:
        yield writes
    finally:
        sa.event.remove(engine, 'before_cursor_execute', before)
