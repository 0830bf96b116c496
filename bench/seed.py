"""The same inventory, written into cyborg_lite's and into Cyborg's database.

``rows(n)`` yields one logical card per index: 8 cards per host, each an
Intel FPGA with one region (deployable) whose resource provider uuid is
Cyborg's uuid3 of its name, one PCI controlpath id and one PCI attach
handle, and the ``rc`` / ``trait0`` attributes. uuids are derived from
the index, so both databases hold byte-for-byte the same ids.

``seed_ours(url, n)`` inserts through cyborg_lite's models in one writer
transaction (bulk INSERTs); ``seed_cyborg(path, n)`` inserts the same rows
into the SQLite file Cyborg's ``cyborg-dbsync upgrade`` created, with the
stdlib sqlite3 module (so it needs nothing from Cyborg's venv).
"""
import datetime
import json
import sqlite3
import uuid

CARDS_PER_HOST = 8
NAMESPACE = uuid.UUID('6f1e3c9e-8a51-4d3a-9d0e-0c5b7d1e2a40')


def _uuid(kind, index):
    return str(uuid.uuid5(NAMESPACE, '%s-%d' % (kind, index)))


def host_of(index):
    return 'node-%04d' % (index // CARDS_PER_HOST)


def rows(n):
    return (row(i) for i in range(n))


def row(i):
    """The logical card number ``i`` (see the module docstring)."""
    host = host_of(i)
    bus = '%02x' % (0x5e + i % CARDS_PER_HOST)
    pci = '0000:%s:00.0' % bus
    dep_name = '%s_%s_region0' % (host, pci)
    return {
        'index': i, 'hostname': host, 'pci': pci,
        'device_uuid': _uuid('device', i),
        'std_board_info': json.dumps({'device_id': '0x09c4',
                                      'vendor_id': '0x8086'},
                                     sort_keys=True),
        'vendor_board_info': json.dumps({'ports': 1}),
        'deployable_uuid': _uuid('deployable', i),
        'deployable_name': dep_name,
        'rp_uuid': str(uuid.uuid3(uuid.NAMESPACE_DNS, dep_name)),
        'cpid_uuid': _uuid('cpid', i),
        'cpid_info': json.dumps({'bus': bus, 'device': '00',
                                 'domain': '0000', 'function': '0'},
                                sort_keys=True),
        'handle_uuid': _uuid('handle', i),
        'attach_info': json.dumps({'bus': bus, 'device': '00',
                                   'domain': '0000', 'function': '1'},
                                  sort_keys=True),
        'attr_uuids': (_uuid('attr-rc', i), _uuid('attr-trait', i)),
    }


VENDOR = '0x8086'
MODEL = 'Intel PAC Arria 10 GX'
DRIVER = 'fake'
TRAIT = 'CUSTOM_FPGA_INTEL'


def seed_ours(url, n):
    import sqlalchemy as sa

    from cyborg_lite.db import models
    from cyborg_lite.db.sql import session
    now = models.utcnow()
    data = list(rows(n))
    ids = range(1, n + 1)
    with session.writer(url) as s:
        s.execute(sa.insert(models.Device), [{
            'id': i, 'uuid': r['device_uuid'], 'type': 'FPGA',
            'vendor': VENDOR, 'model': MODEL,
            'std_board_info': r['std_board_info'],
            'vendor_board_info': r['vendor_board_info'],
            'hostname': r['hostname'], 'driver_name': DRIVER,
            'identity': r['pci'], 'pci_address': r['pci'],
            'status': 'enabled', 'health': 'healthy', 'version': 1,
            'created_at': now} for i, r in zip(ids, data)])
        s.execute(sa.insert(models.ControlpathId), [{
            'id': i, 'uuid': r['cpid_uuid'], 'device_id': i,
            'cpid_type': 'PCI', 'cpid_info': r['cpid_info'],
            'created_at': now} for i, r in zip(ids, data)])
        s.execute(sa.insert(models.Deployable), [{
            'id': i, 'uuid': r['deployable_uuid'], 'device_id': i,
            'name': r['deployable_name'], 'num_accelerators': 1,
            'rp_uuid': r['rp_uuid'], 'driver_name': DRIVER,
            'local_memory_mb': 0, 'version': 1, 'created_at': now}
            for i, r in zip(ids, data)])
        s.execute(sa.insert(models.Attribute), [
            {'uuid': u, 'deployable_id': i, 'key': k, 'value': v,
             'created_at': now}
            for i, r in zip(ids, data)
            for u, k, v in zip(r['attr_uuids'], ('rc', 'trait0'),
                               ('FPGA', TRAIT))])
        s.execute(sa.insert(models.AttachHandle), [{
            'id': i, 'uuid': r['handle_uuid'], 'deployable_id': i,
            'cpid_id': i, 'in_use': False, 'attach_type': 'PCI',
            'attach_info': r['attach_info'], 'version': 1,
            'created_at': now} for i, r in zip(ids, data)])


def seed_ours_arqs(url, n, project_id):
    """``n`` ARQs of one profile in ``project_id`` over the cards of
    ``seed_ours(url, n)``: the even ones Bound to card i's attach handle
    (marked in use), the odd ones Initial, so that a list shows both
    forms of the handle fields."""
    import sqlalchemy as sa

    from cyborg_lite.db import models
    from cyborg_lite.db.sql import session
    now = models.utcnow()
    with session.writer(url) as s:
        profile = s.execute(sa.insert(models.DeviceProfile).values(
            uuid=_uuid('profile', 0), name='bench-list', created_at=now,
            profile_json=json.dumps([{'resources:FPGA': '1'}]))
            .returning(models.DeviceProfile.id)).scalar_one()
        arqs = []
        for i, r in enumerate(rows(n)):
            arq = {'uuid': _uuid('arq', i), 'project_id': project_id,
                   'device_profile_id': profile, 'device_profile_group_id': 0,
                   'state': 'Initial', 'hostname': None,
                   'device_rp_uuid': None, 'instance_uuid': None,
                   'attach_handle_id': None, 'deployable_id': None,
                   'version': 1, 'created_at': now}
            if i % 2 == 0:
                arq.update(state='Bound', hostname=r['hostname'],
                           device_rp_uuid=r['rp_uuid'],
                           instance_uuid=_uuid('instance', i),
                           attach_handle_id=i + 1, deployable_id=i + 1)
            arqs.append(arq)
        s.execute(sa.insert(models.AcceleratorRequest), arqs)
        s.execute(sa.update(models.AttachHandle)
                  .where(models.AttachHandle.id.in_(
                      sa.select(models.AcceleratorRequest.attach_handle_id)))
                  .values(in_use=True))


def seed_cyborg(path, n):
    """Insert into Cyborg 17's schema (after cyborg-dbsync upgrade)."""
    now = datetime.datetime.utcnow().isoformat(sep=' ')
    data = list(rows(n))
    ids = range(1, n + 1)
    db = sqlite3.connect(path)
    try:
        # NOTE: the openstack-cyborg 17.0.0 on the package index has a
        # devices.device_state column; its conductor backfills NULLs one
        # device at a time at start-up (minutes for 10,000), so the seed
        # writes what that backfill would: 'available' (no handle in use).
        columns = {row[1] for row in db.execute('PRAGMA table_info(devices)')}
        state = ['device_state'] if 'device_state' in columns else []
        with db:
            db.executemany(
                'INSERT INTO devices (id, uuid, type, vendor, model, '
                'std_board_info, vendor_board_info, hostname, status, '
                'created_at%s) VALUES (?,?,?,?,?,?,?,?,?,?%s)'
                % (''.join(', ' + c for c in state), ',?' * len(state)),
                [(i, r['device_uuid'], 'FPGA', VENDOR, MODEL,
                  r['std_board_info'], r['vendor_board_info'],
                  r['hostname'], 'enabled', now) + ('available',) * len(state)
                 for i, r in zip(ids, data)])
            db.executemany(
                'INSERT INTO controlpath_ids (id, uuid, device_id, '
                'cpid_type, cpid_info, created_at) VALUES (?,?,?,?,?,?)',
                [(i, r['cpid_uuid'], i, 'PCI', r['cpid_info'], now)
                 for i, r in zip(ids, data)])
            db.executemany(
                'INSERT INTO deployables (id, uuid, name, '
                'num_accelerators, device_id, rp_uuid, driver_name, '
                'created_at) VALUES (?,?,?,?,?,?,?,?)',
                [(i, r['deployable_uuid'], r['deployable_name'], 1, i,
                  r['rp_uuid'], DRIVER, now) for i, r in zip(ids, data)])
            db.executemany(
                'INSERT INTO attributes (uuid, deployable_id, key, value, '
                'created_at) VALUES (?,?,?,?,?)',
                [(u, i, k, v, now) for i, r in zip(ids, data)
                 for u, k, v in zip(r['attr_uuids'], ('rc', 'trait0'),
                                    ('FPGA', TRAIT))])
            db.executemany(
                'INSERT INTO attach_handles (id, uuid, deployable_id, '
                'cpid_id, in_use, attach_type, attach_info, created_at) '
                'VALUES (?,?,?,?,?,?,?,?)',
                [(i, r['handle_uuid'], i, i, 0, 'PCI', r['attach_info'],
                  now) for i, r in zip(ids, data)])
    finally:
        db.close()
