"""A whole FPGA card beside its regions in the ResourceSlices (KEP-4815):
one counter set per card, one counter per region; a region consumes its
own, the card every one. Built from the neutral host view, checked
against the published schemas and the apiserver's rules, synced through
the real client to the apiserver stand-in (DRAPartitionableDevices on),
and allocated by the reference allocator from what it stores."""
import types

from cyborg_lite.common import shared_functions
from cyborg_lite.inventory import views as host_inventory
from cyborg_lite.kubernetes import slices as k8s_slices
from cyborg_lite.kubernetes import view as k8s_view
from tests.unit.kubernetes import allocator
from tests.unit.kubernetes import inventories as inv
from tests.unit.kubernetes import schemas

DRIVER = inv.DRIVER
SET = 'fpga-0000-5e-00-0'
PF = {'domain': '0000', 'bus': '5e', 'device': '00', 'function': '0'}
CLASSES = {
    'card': lambda driver, device: device['name'].endswith('-card'),
    'region': lambda driver, device: '-region' in device['name'],
}


def _handle(function, in_use=False):
    return host_inventory.AttachHandleView(
        uuid='h' + function, attach_type='PCI',
        attach_info=dict(PF, function=function), in_use=in_use)


def _host(card_in_use=False, region0_in_use=False):
    prefix = 'node-1_0000:5e:00.0_'
    regions = tuple(host_inventory.DeployableView(
        uuid='r%d' % i, name=prefix + 'region%d' % i, resource_class='FPGA',
        region_type='9346116d-a52d',
        attach_handles=(_handle(str(i + 1), region0_in_use and i == 0),))
        for i in range(2))
    card = host_inventory.DeployableView(
        uuid='c', name=prefix + 'card', resource_class='FPGA',
        traits=(shared_functions.WHOLE_CARD_TRAIT,),
        attach_handles=(_handle('0', card_in_use),))
    device = host_inventory.DeviceView(
        uuid='d', type='FPGA', vendor='0x8086', identity='0000:5e:00.0',
        pci_address='0000:5e:00.0', deployables=regions + (card,))
    conf = types.SimpleNamespace(node_names={}, informational_taints=True,
                                 unhealthy_taint_effect='NoSchedule')
    return k8s_view.k8s_inventory(host_inventory.HostInventory(
        'node-1', (device,)), 'node-1', conf)


def _claim(device_class):
    return {'devices': {'requests': [
        {'name': 'a', 'exactly': {'deviceClassName': device_class}}]}}


def test_a_card_set_has_a_counter_per_region_the_card_consumes_all():
    devices, counters = k8s_slices.build_slices(_host(), DRIVER)
    for obj in (devices, counters):
        assert schemas.schema_errors(obj) == []
        assert schemas.slice_rule_errors(obj) == []
    one = {'value': '1'}
    assert counters['spec']['sharedCounters'] == [
        {'name': SET, 'counters': {'region0': one, 'region1': one}}]
    assert {d['name']: d['consumesCounters']
            for d in devices['spec']['devices']} == {
        SET + '-region0': [{'counterSet': SET, 'counters': {'region0': one}}],
        SET + '-region1': [{'counterSet': SET, 'counters': {'region1': one}}],
        SET + '-card': [{'counterSet': SET,
                         'counters': {'region0': one, 'region1': one}}]}


def test_the_scheduler_never_gives_out_a_card_and_one_of_its_regions(
        apiserver, sync):
    assert sync.sync(_host()).created == 2
    stored = sorted(apiserver.slices.values(),
                    key=lambda s: s['metadata']['name'])
    card = allocator.allocate(_claim('card'), stored, CLASSES)
    assert card == {'a': [(DRIVER, 'node-1', SET + '-card')]}
    assert allocator.allocate(_claim('region'), stored, CLASSES,
                              allocated=card['a']) is None
    region = allocator.allocate(_claim('region'), stored, CLASSES)
    assert allocator.allocate(_claim('card'), stored, CLASSES,
                              allocated=region['a']) is None
    # The other region is free still; then nothing is.
    other = allocator.allocate(_claim('region'), stored, CLASSES,
                               allocated=region['a'])
    assert other is not None and other != region
    assert allocator.allocate(_claim('region'), stored, CLASSES,
                              allocated=region['a'] + other['a']) is None


def test_what_nova_holds_taints_the_other_side():
    def taints(host):
        [obj, _counters] = k8s_slices.build_slices(host, DRIVER)
        return {d['name'].rsplit('-', 1)[-1]: sorted(
            t['key'] for t in d.get('taints', ()))
            for d in obj['spec']['devices']}
    held = DRIVER + '/whole-card-in-use'
    nova = DRIVER + '/in-use'
    assert taints(_host(card_in_use=True)) == {
        'region0': [held], 'region1': [held], 'card': [nova]}
    assert taints(_host(region0_in_use=True)) == {
        'region0': [nova], 'region1': [], 'card': [held]}
