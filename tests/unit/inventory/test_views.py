"""inventory/views: a host's rows as one neutral, detached view."""
import json
import uuid

import pytest

from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.inventory import views as host_inventory
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

    inventory = devices_db.load_inventory('node1')

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
    [device] = devices_db.load_inventory('node1').devices
    [dep] = device.deployables
    assert dep.attributes == (('numa_node', '1'),)
    assert dep.traits == ('fpga intel arria10',)


def test_an_unknown_host_has_no_devices(db):
    assert devices_db.load_inventory('nowhere') == \
        host_inventory.HostInventory('nowhere', ())


def test_unhealthy_or_maintained_devices_are_not_schedulable():
    make = host_inventory.DeviceView
    assert make('d', 'FPGA', 'v', 'i', health='degraded').schedulable
    assert not make('d', 'FPGA', 'v', 'i', health='unhealthy').schedulable
    assert not make('d', 'FPGA', 'v', 'i', status='maintaining').schedulable


PF = {'domain': '0000', 'bus': '5e', 'device': '00', 'function': '0'}


def _dep(*handles):
    return host_inventory.DeployableView(uuid='r', name='n_r1',
                                         attach_handles=handles)


def _handle(in_use=False, held_by=None, function='0'):
    return host_inventory.AttachHandleView(
        uuid='h' + function, attach_type='PCI',
        attach_info=dict(PF, function=function), in_use=in_use,
        held_by=held_by)


def test_each_reason_is_named_by_the_one_predicate():
    make = host_inventory.DeviceView
    reasons = host_inventory.unavailable_reasons
    assert reasons(make('d', 'FPGA', 'v', 'i')) == ()
    assert reasons(make('d', 'FPGA', 'v', 'i', status='maintaining',
                        health='unhealthy', agent_down=True)) == (
        'maintaining', 'unhealthy', 'agent_down')
    assert set(host_inventory.REASONS) == {
        'maintaining', 'unhealthy', 'recovering', 'agent_down',
        'handle_shared_in_use', 'kubernetes_claimed', 'whole_card_in_use',
        'shared_function_unclean', 'bind_unsupported', 'pending_cleaning',
        'cleaning', 'cleaning_failed'}


@pytest.mark.parametrize('state,reason', [
    ('healthy', None), ('degraded', None), ('unhealthy', 'unhealthy'),
    ('recovering', 'recovering')])
def test_health_of_the_device_or_of_a_region(state, reason):
    make = host_inventory.DeviceView
    reasons = host_inventory.unavailable_reasons
    sick = make('d', 'FPGA', 'v', 'i', health=state, health_reason='why')
    fine = make('d', 'FPGA', 'v', 'i')
    region = host_inventory.DeployableView('r', 'region0')
    sick_region = host_inventory.DeployableView('r', 'region0',
                                                health=state)
    expected = (reason,) if reason else ()
    # The device's health is every region's; a region's is its own.
    assert reasons(sick) == reasons(sick, region) == expected
    assert reasons(fine, sick_region) == expected
    assert reasons(fine) == ()
    # Degraded is offered, with a note.
    assert host_inventory.advisories(sick, region) == (
        ('degraded',) if state == 'degraded' else ())
    if reason:
        assert 'why' in host_inventory.describe(expected, sick, region)


def test_the_worse_health_of_device_and_region_is_shown():
    device = host_inventory.DeviceView('d', 'FPGA', 'v', 'i',
                                       health='degraded',
                                       health_reason='link_width x8')
    region = host_inventory.DeployableView(
        'r', 'region0', health='unhealthy', health_reason='port_errors 0x1')
    assert host_inventory.health_of(device, region) == (
        'unhealthy', 'port_errors 0x1')
    assert host_inventory.health_of(device) == ('degraded', 'link_width x8')


def test_a_region_a_kubernetes_claim_holds_is_unavailable_to_nova():
    device = host_inventory.DeviceView('d', 'FPGA', 'v', 'i')
    reasons = host_inventory.unavailable_reasons
    claimed = host_inventory.AttachHandleView(
        uuid='h', attach_type='PCI', attach_info={}, in_use=True,
        k8s_claim='c0ffee00-0000-4000-8000-000000000001')
    assert reasons(device, _dep(claimed)) == ('kubernetes_claimed',)
    # An ARQ's handle is an allocation Placement already counts.
    assert reasons(device, _dep(_handle(in_use=True))) == ()


@pytest.mark.parametrize('state,reason', [
    ('available', None), ('allocated', None),
    ('pending_cleaning', 'pending_cleaning'), ('cleaning', 'cleaning'),
    ('error', 'cleaning_failed')])
def test_a_region_waiting_for_or_under_its_wipe_is_unavailable(state,
                                                                reason):
    device = host_inventory.DeviceView('d', 'FPGA', 'v', 'i')
    region = host_inventory.DeployableView('r', 'region0',
                                           device_state=state)
    assert host_inventory.unavailable_reasons(device, region) == (
        (reason,) if reason else ())
    # The device as a whole is not: only this region waits.
    assert host_inventory.unavailable_reasons(device) == ()


def test_a_deployable_whose_only_free_function_a_sibling_holds():
    device = host_inventory.DeviceView('d', 'FPGA', 'v', 'i')
    reasons = host_inventory.unavailable_reasons
    blocked = _handle(held_by=('arq-1', 'n_r0'))
    assert reasons(device, _dep(blocked)) == ('handle_shared_in_use',)
    # Asked about as a whole, the device has no such reason.
    assert reasons(device) == ()
    # Its own function in use is an allocation, not a reason...
    assert reasons(device, _dep(_handle(in_use=True))) == ()
    # ...and one free unshared handle left still offers something.
    assert reasons(device, _dep(blocked, _handle(function='3'))) == ()
    assert 'ARQ arq-1 on n_r0' in host_inventory.describe(
        ('handle_shared_in_use',), device, _dep(blocked))


def test_load_sees_the_held_function_and_the_agent_state(db):
    from cyborg_lite.conductor import bind
    from cyborg_lite.db import agents
    from tests.unit.conductor import bind_helpers as h
    region0, _region1 = h.make_card(hostname='node1', sriov=False)
    arq_uuid = h.make_arq()
    bind.bind_arqs(None, {arq_uuid: h.binding(region0, hostname='node1')},
                   notifier=h.RecordingNotifier())
    agents.heartbeat('node1')
    with session.writer() as s:
        s.query(models.Agent).update({'state': 'down'})

    [device] = devices_db.load_inventory('node1').devices

    first, second = device.deployables
    assert first.attach_handles[0].in_use
    assert first.attach_handles[0].held_by is None
    held_by = second.attach_handles[0].held_by
    assert held_by == (arq_uuid, first.name)
    assert device.agent_down and not device.schedulable
    assert host_inventory.unavailable_reasons(device, second) == (
        'agent_down', 'handle_shared_in_use')


def _host_handles(s, hostname):
    return s.query(models.AttachHandle).join(models.Deployable).join(
        models.Device).filter(models.Device.hostname == hostname).all()


def test_a_function_held_on_another_host_blocks_nothing_here(db):
    """A function's key names its host, so a host's load looks up only the
    keys its own handles hold; the answer is the one the lookup of every
    free handle's key gives."""
    from cyborg_lite.conductor import bind
    from cyborg_lite.db import attach_handles
    from cyborg_lite.db import devices as devices_db
    from tests.unit.conductor import bind_helpers as h
    h.make_card(hostname='node1', sriov=False)
    there, _sibling = h.make_card(hostname='node2', sriov=False)
    with session.writer() as s:
        # node2's card at node1's PCI address: the same attach_info.
        info = _host_handles(s, 'node1')[0].attach_info
        for handle in _host_handles(s, 'node2'):
            handle.attach_info = info
    bind.bind_arqs(None, {h.make_arq(): h.binding(there, hostname='node2')},
                   notifier=h.RecordingNotifier())

    assert devices_db.host_rows('node1').blocked_handles == {}
    assert len(devices_db.host_rows('node2').blocked_handles) == 1
    with session.reader() as s:
        for host in ('node1', 'node2'):
            assert (devices_db.host_rows(host).blocked_handles ==
                    attach_handles.blocked(s, _host_handles(s, host), host))


def test_a_host_with_no_handle_in_use_is_loaded_without_a_holder_query(db):
    import sqlalchemy as sa
    from cyborg_lite.db import devices as devices_db
    from tests.unit.conductor import bind_helpers as h
    h.make_card(hostname='node1', sriov=False)
    statements = []
    engine = session.get_engine()
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    sa.event.listen(engine, 'before_cursor_execute', listener)
    try:
        rows = devices_db.host_rows('node1')
    finally:
        sa.event.remove(engine, 'before_cursor_execute', listener)
    assert rows.blocked_handles == {} and rows.handles
    assert not [q for q in statements if 'in_use_function IN' in q]
    assert statements, 'the listener saw no statement at all'


def _region(name, state='available', function='0'):
    return host_inventory.DeployableView(
        uuid='u-' + name, name=name, device_state=state,
        attach_handles=(_handle(function=function),))


@pytest.mark.parametrize('state', ['pending_cleaning', 'cleaning', 'error'])
def test_a_function_whose_sibling_is_not_wiped_yet_is_unavailable(state):
    """Attaching a PF hands every region behind it over: one of them is
    not bindable while another behind the same PF holds a tenant's
    data."""
    dirty, clean = _region('n_r0', state), _region('n_r1')
    device = host_inventory.DeviceView('d', 'FPGA', 'v', 'i',
                                       deployables=(dirty, clean))
    assert host_inventory.unavailable_reasons(device, clean) == (
        'shared_function_unclean',)
    assert device.siblings_sharing(clean) == (dirty,)


def test_a_sibling_with_its_own_function_is_no_reason():
    dirty = _region('n_r0', 'cleaning', function='1')
    clean = _region('n_r1', function='2')
    device = host_inventory.DeviceView('d', 'FPGA', 'v', 'i',
                                       deployables=(dirty, clean))
    assert host_inventory.unavailable_reasons(device, clean) == ()
    assert device.siblings_sharing(clean) == ()


def test_what_its_driver_cannot_bind_yet_is_shown_not_offered():
    made = host_inventory.DeployableView(
        'v', 'n_vgpu_1426', num_accelerators=4, resource_class='VGPU',
        attributes=(('bind', 'unsupported'), ('vgpu_type_id', '1426')))
    other = host_inventory.DeployableView(
        'w', 'n_vgpu_588', num_accelerators=4, resource_class='VGPU',
        attributes=(('vgpu_type_id', '588'),))
    device = host_inventory.DeviceView('d', 'GPU', 'v', 'i',
                                       deployables=(made, other))
    assert host_inventory.unavailable_reasons(device, made) == (
        'bind_unsupported',)
    assert host_inventory.unavailable_reasons(device, other) == ()
    assert host_inventory.unavailable_reasons(device) == ()
