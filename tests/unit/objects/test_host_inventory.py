"""objects/host_inventory: a host's rows as one neutral, detached view."""
import json
import uuid

from cyborg_lite.db import models
from cyborg_lite.db import session
from cyborg_lite.objects import host_inventory
from tests.functional.placement import db_rows


def _add_handle(deployable_name, function, in_use=False):
    with session.writer() as s:
        dep = s.query(models.Deployable).filter_by(
            name=deployable_name).one()
        s.add(models.AttachHandle(
            uuid=str(uuid.uuid4()), deployable_id=dep.id, in_use=in_use,
            attach_type='PCI', attach_info=json.dumps({
                'domain': '0000', 'bus': '5e', 'device': '00',
                'function': function})))


def test_a_host_with_devices_deployables_and_handles(db):
    db_rows.add_fpga('node1', regions=2)
    db_rows.add_gpu('node1', mig_slices=7)
    db_rows.add_fpga('node2', regions=1)
    region0 = 'node1_0000:5e:00.0_region0'
    _add_handle(region0, '1', in_use=True)
    _add_handle(region0, '2')

    inventory = host_inventory.load('node1')

    assert inventory.hostname == 'node1'
    fpga, gpu = inventory.devices
    assert (fpga.type, fpga.identity, fpga.driver_name, fpga.model) == (
        'FPGA', '0000:5e:00.0', 'fake', 'pac_a10')
    assert fpga.schedulable and gpu.type == 'GPU'
    first, second = fpga.deployables
    assert first.name == region0 and first.function_id == 'f00d'
    assert first.traits == ('fpga intel arria10',)
    assert first.resource_class is None and first.local_memory_mb == 4096
    assert [(h.attach_info['function'], h.in_use)
            for h in first.attach_handles] == [('1', True), ('2', False)]
    assert second.attach_handles == ()
    [mig] = gpu.deployables
    assert (mig.resource_class, mig.num_accelerators) == ('VGPU', 7)


def test_other_attributes_are_kept_apart_from_rc_and_traits(db):
    db_rows.add_fpga('node1', regions=1)
    with session.writer() as s:
        dep = s.query(models.Deployable).one()
        s.add(models.Attribute(uuid=str(uuid.uuid4()), deployable_id=dep.id,
                               key='numa_node', value='1'))
    [device] = host_inventory.load('node1').devices
    [dep] = device.deployables
    assert dep.attributes == (('numa_node', '1'),)
    assert dep.traits == ('fpga intel arria10',)


def test_an_unknown_host_has_no_devices(db):
    assert host_inventory.load('nowhere') == host_inventory.HostInventory(
        'nowhere', ())


def test_unhealthy_or_maintained_devices_are_not_schedulable():
    make = host_inventory.DeviceView
    assert make('d', 'FPGA', 'v', 'i', health='degraded').schedulable
    assert not make('d', 'FPGA', 'v', 'i', health='unhealthy').schedulable
    assert not make('d', 'FPGA', 'v', 'i', status='maintaining').schedulable
