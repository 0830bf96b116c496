"""Rows the bind tests need, written with the models as the conductor's
report would write them, and small readers of the outcome."""
import datetime
import itertools
import json
import threading
import uuid as uuidlib

import sqlalchemy as sa

from cyborg_lite.common import canonical_json
from cyborg_lite.common import device_records
from cyborg_lite.db import cleaning as cleaning_db
from cyborg_lite.db import models
from cyborg_lite.db.sql import clock
from cyborg_lite.db.sql import session
from cyborg_lite.placement import naming

_counter = itertools.count()


def _uuid():
    return str(uuidlib.uuid4())


def make_region(hostname='host1', handles=1, function_id=None,
                bitstream_id=None, rc='FPGA', deployable_rp=True):
    """A device with one deployable and ``handles`` attach handles.

    Returns {'rp_uuid', 'deployable_uuid', 'deployable_id',
    'device_rp_uuid'} with rp uuids named like the conductor's report;
    deployable_rp=False leaves the deployable's rp_uuid empty, as for a
    whole device whose provider only the device row records.
    """
    n = next(_counter)
    identity = '0000:%02x:00.0' % (n % 256)
    name = 'region%d' % n
    dep_rp = naming.rp_uuid(naming.deployable_rp_name(hostname, identity,
                                                      name, rc))
    dev_rp = naming.rp_uuid(naming.device_rp_name(hostname, identity))
    with session.writer() as s:
        device = models.Device(
            uuid=_uuid(), type='FPGA', vendor='8086', model='m',
            hostname=hostname, driver_name='fake', identity=identity,
            pci_address=identity, rp_uuid=dev_rp)
        s.add(device)
        s.flush()
        dep = models.Deployable(
            uuid=_uuid(), device_id=device.id,
            name=device_records.deployable_db_name(hostname, identity,
                                                   name),
            rp_uuid=dep_rp if deployable_rp else None, driver_name='fake',
            function_id=function_id, bitstream_id=bitstream_id)
        s.add(dep)
        s.flush()
        s.add(models.Attribute(uuid=_uuid(), deployable_id=dep.id,
                               key='rc', value=rc))
        for i in range(handles):
            s.add(models.AttachHandle(
                uuid=_uuid(), deployable_id=dep.id, attach_type='PCI',
                attach_info=json.dumps({'domain': '0000', 'bus': '%02x' % n,
                                        'device': '00', 'function': str(i)})))
        return {'rp_uuid': dep_rp, 'deployable_uuid': dep.uuid,
                'deployable_id': dep.id, 'device_rp_uuid': dev_rp}


def clean(region):
    """Wipe a released region, as a cleaning try that succeeded ends it
    (conductor/cleaning.py); it is bindable again."""
    started = cleaning_db.begin(region['deployable_id'])
    cleaning_db.finish(started.uuid, started.cleaning_uuid)


def pci_info(bus, function):
    """attach_info as the report stores it (canonical JSON)."""
    return canonical_json.dumps({'domain': '0000', 'bus': '%02x' % bus,
                                 'device': '00', 'function': str(function)})


def make_card(hostname='host1', regions=2, sriov=False, rc='FPGA'):
    """A device with ``regions`` deployables of one attach handle each:
    with ``sriov`` each region's own VF (functions 1..N), else the card's
    PF (function 0) for all of them, as the fake driver reports without
    [fake_driver] sriov. Returns a list of dicts as make_region does."""
    n = next(_counter)
    identity = '0000:%02x:00.0' % (n % 256)
    dev_rp = naming.rp_uuid(naming.device_rp_name(hostname, identity))
    made = []
    with session.writer() as s:
        device = models.Device(
            uuid=_uuid(), type='FPGA', vendor='8086', model='m',
            hostname=hostname, driver_name='fake', identity=identity,
            pci_address=identity, rp_uuid=dev_rp)
        s.add(device)
        s.flush()
        for i in range(regions):
            name = 'region%d' % i
            dep_rp = naming.rp_uuid(naming.deployable_rp_name(
                hostname, identity, name, rc))
            dep = models.Deployable(
                uuid=_uuid(), device_id=device.id, rp_uuid=dep_rp,
                name=device_records.deployable_db_name(hostname, identity,
                                                   name),
                driver_name='fake')
            s.add(dep)
            s.flush()
            s.add(models.Attribute(uuid=_uuid(), deployable_id=dep.id,
                                   key='rc', value=rc))
            s.add(models.AttachHandle(
                uuid=_uuid(), deployable_id=dep.id, attach_type='PCI',
                attach_info=pci_info(n % 256, i + 1 if sriov else 0)))
            made.append({'rp_uuid': dep_rp, 'deployable_uuid': dep.uuid,
                         'deployable_id': dep.id, 'device_rp_uuid': dev_rp,
                         'device_uuid': device.uuid})
    return made


def report_fake_card(conf, tmp_path, **fake_driver):
    """One card of the fake driver with ``fake_driver`` options, reported
    by host1's agent to a conductor (host1's rows as it stores them);
    {region or card name: its deployable row}."""
    # NOTE: imported here: the bind tests that write rows need neither.
    from cyborg_lite.agent import manager as agent_manager
    from cyborg_lite.common import context
    from cyborg_lite.conductor import manager as conductor_manager
    from cyborg_lite.db import devices as devices_db
    from cyborg_lite.drivers import fake
    for name, value in dict(fake_driver, num_cards=1,
                            state_dir=str(tmp_path / 'fake')).items():
        conf.set_override(name, value, group='fake_driver')
    records = fake.FakeDriver(conf).discover()
    conductor_manager.ConductorManager('cond1').report(
        context.get_admin_context(), 'host1', [agent_manager.driver_entry(
            'fake', [r.to_dict() for r in records])])
    return {d.name.rsplit('_', 1)[-1]: d
            for d in devices_db.host_rows('host1').deployables}


def make_profile(groups=None):
    groups = groups if groups is not None else [{'resources:FPGA': '1'}]
    with session.writer() as s:
        profile = models.DeviceProfile(
            uuid=_uuid(), name='dp%d' % next(_counter),
            profile_json=json.dumps(groups))
        s.add(profile)
        s.flush()
        return profile.id


def make_arqs(count=1, profile_id=None, group_id=0, state='Initial',
              project_id=None):
    profile_id = profile_id or make_profile()
    uuids = [_uuid() for _ in range(count)]
    with session.writer() as s:
        for arq_uuid in uuids:
            s.add(models.AcceleratorRequest(
                uuid=arq_uuid, state=state, device_profile_id=profile_id,
                device_profile_group_id=group_id, project_id=project_id))
    return uuids


def make_arq(**kwargs):
    return make_arqs(1, **kwargs)[0]


def binding(region, hostname='host1', instance_uuid=None):
    return {'hostname': hostname, 'device_rp_uuid': region['rp_uuid'],
            'instance_uuid': instance_uuid or _uuid()}


def get_arq(arq_uuid):
    with session.reader() as s:
        return s.scalars(sa.select(models.AcceleratorRequest).where(
            models.AcceleratorRequest.uuid == arq_uuid)).one()


def handles_of(region):
    with session.reader() as s:
        return list(s.scalars(sa.select(models.AttachHandle).where(
            models.AttachHandle.deployable_id == region['deployable_id'])
            .order_by(models.AttachHandle.id)))


def check_no_handle_double_use():
    """Every handle in use is held by exactly one ARQ, and the reverse."""
    with session.reader() as s:
        in_use = set(s.scalars(sa.select(models.AttachHandle.id).where(
            models.AttachHandle.in_use.is_(True))))
        held = list(s.scalars(
            sa.select(models.AcceleratorRequest.attach_handle_id).where(
                models.AcceleratorRequest.attach_handle_id.is_not(None))))
        bound_without = s.scalar(
            sa.select(sa.func.count(models.AcceleratorRequest.id)).where(
                models.AcceleratorRequest.state == 'Bound',
                models.AcceleratorRequest.attach_handle_id.is_(None)))
    assert len(held) == len(set(held)), 'a handle is on two ARQs'
    assert set(held) == in_use, 'in_use flags disagree with ARQs'
    assert bound_without == 0, 'a Bound ARQ has no attach handle'
    return in_use


def states(arq_uuids):
    with session.reader() as s:
        rows = s.execute(sa.select(models.AcceleratorRequest.uuid,
                                   models.AcceleratorRequest.state).where(
            models.AcceleratorRequest.uuid.in_(arq_uuids))).all()
    return dict(rows)


class FakeDbClock:
    """Moves the database's clock as the conductors' checks read it
    (db/sql/clock.now), ``advance(seconds)`` at a time."""

    def __init__(self, monkeypatch):
        self.offset = 0
        real_now = clock.now
        monkeypatch.setattr(clock, 'now', lambda s: real_now(s) +
                            datetime.timedelta(seconds=self.offset))

    def advance(self, seconds):
        self.offset += seconds


class RecordingNotifier:
    """A notifier that keeps what it was told (thread-safe)."""

    def __init__(self):
        self.events = []
        self._lock = threading.Lock()

    def notify(self, ctxt, events):
        with self._lock:
            self.events.extend(events)

    def by_arq(self):
        return {e['arq_uuid']: e for e in self.events}
