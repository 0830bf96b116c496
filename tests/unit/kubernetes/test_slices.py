"""The ResourceSlice builder: fields, names, taints, limits, schemas."""
import dataclasses

import kubernetes
import kubernetes_validate
import pytest

from cyborg_lite.kubernetes import inventory
from cyborg_lite.kubernetes import slices
from tests.unit.kubernetes import inventories as inv
from tests.unit.kubernetes import schemas

DRIVER = inv.DRIVER


def _build(host, **kwargs):
    return slices.build_slices(host, DRIVER, **kwargs)


def _assert_valid(objs):
    for obj in objs:
        assert schemas.schema_errors(obj) == []
        assert schemas.slice_rule_errors(obj) == []


def test_one_pool_per_node_with_every_field():
    host = inv.host(with_gpu=True)
    (obj,) = _build(host)
    assert obj['apiVersion'] == 'resource.k8s.io/v1'
    assert obj['metadata'] == {'name': 'node-1-cyborg-lite.openstack.org-0'}
    spec = obj['spec']
    assert spec['driver'] == DRIVER and spec['nodeName'] == 'node-1'
    assert spec['pool'] == {'name': 'node-1', 'generation': 0,
                            'resourceSliceCount': 1}
    names = [d['name'] for d in spec['devices']]
    assert names == sorted(names) == [
        'fpga-0000-5e-00-0-region0', 'fpga-0000-5e-00-0-region1',
        'fpga-0000-5f-00-0-region0', 'fpga-0000-5f-00-0-region1',
        'gpu-0000-80-00-0-pgpu']
    card, region = host.devices[0], host.devices[0].deployables[1]
    assert spec['devices'][1] == {
        'name': 'fpga-0000-5e-00-0-region1',
        'attributes': {
            'type': {'string': 'fpga-region'},
            'vendor': {'string': '0x8086'},
            'model': {'string': 'pac-a10'},
            'regionType': {'string': inv.REGION_TYPE},
            'functionID': {'string': inv.FUNCTION_ID},
            'bitstreamID': {'string': ''},
            'deployableUUID': {'string': region.uuid},
            'deviceUUID': {'string': card.uuid},
            'programmable': {'bool': True},
            'numaNode': {'int': 0},
            'resource.kubernetes.io/numaNode': {'int': 0},
            'resource.kubernetes.io/pciBusID': {'string': '0000:5e:00.0'},
            'resource.kubernetes.io/pcieRoot': {'string': 'pci0000:5d'},
        },
        'capacity': {'localMemory': {'value': '4Gi'}},
    }
    gpu = spec['devices'][4]
    assert gpu['attributes']['type'] == {'string': 'gpu'}
    assert gpu['attributes']['programmable'] == {'bool': False}
    assert gpu['capacity'] == {'localMemory': {'value': '0'},
                               'memory': {'value': '80Gi'}}
    assert 'taints' not in gpu
    _assert_valid([obj])


@pytest.mark.parametrize('reason', ['unhealthy', 'maintaining'])
def test_device_reasons_taint_all_its_regions(reason):
    taint = {'key': DRIVER + '/' + reason, 'effect': 'NoSchedule'}
    host = inv.change_all_regions(inv.host(), 0, unavailable=(reason,))
    (obj,) = _build(host)
    devices = obj['spec']['devices']
    assert [d.get('taints') for d in devices] == [[taint], [taint], None,
                                                  None]
    _assert_valid([obj])


def test_cleaning_and_nova_bound_regions_are_tainted():
    host = inv.change_region(inv.host(), 0, 0, unavailable=('cleaning',))
    host = inv.change_region(host, 1, 1, bound_to_nova=True)
    (obj,) = _build(host)
    taints = {d['name']: d.get('taints') for d in obj['spec']['devices']}
    assert taints['fpga-0000-5e-00-0-region0'] == [
        {'key': DRIVER + '/cleaning', 'effect': 'NoSchedule'}]
    assert taints['fpga-0000-5f-00-0-region1'] == [
        {'key': DRIVER + '/in-use', 'value': 'nova', 'effect': 'NoSchedule'}]
    assert taints['fpga-0000-5e-00-0-region1'] is None
    _assert_valid([obj])


def test_without_taints_a_tainted_device_is_left_out():
    host = inv.change_region(inv.host(), 0, 0, bound_to_nova=True)
    host = inv.change_all_regions(host, 1, unavailable=('unhealthy',))
    (obj,) = _build(host, publish_taints=False)
    assert [d['name'] for d in obj['spec']['devices']] == [
        'fpga-0000-5e-00-0-region1']


def test_every_reason_is_a_taint_with_dashes():
    host = inv.change_region(inv.host(), 0, 0, unavailable=(
        'agent_down', 'handle_shared_in_use'), bound_to_nova=True)
    (obj,) = _build(host)
    assert obj['spec']['devices'][0]['taints'] == [
        {'key': DRIVER + '/agent-down', 'effect': 'NoSchedule'},
        {'key': DRIVER + '/handle-shared-in-use', 'effect': 'NoSchedule'},
        {'key': DRIVER + '/in-use', 'value': 'nova', 'effect': 'NoSchedule'}]
    _assert_valid([obj])


def test_pool_is_split_at_64_devices_and_each_slice_is_valid():
    host = inv.host(cards=13, regions=10)          # 130 devices
    host = inv.change_region(host, 0, 0, bound_to_nova=True)
    objs = _build(host)
    assert [len(o['spec']['devices']) for o in objs] == [64, 64, 2]
    assert [o['metadata']['name'] for o in objs] == [
        'node-1-cyborg-lite.openstack.org-%d' % i for i in range(3)]
    assert {o['spec']['pool']['resourceSliceCount'] for o in objs} == {3}
    all_names = [d['name'] for o in objs for d in o['spec']['devices']]
    assert len(set(all_names)) == 130 and all_names == sorted(all_names)
    _assert_valid(objs)


def test_host_without_devices_publishes_nothing():
    assert _build(inv.host(cards=0)) == []


def test_unknown_numa_node_and_non_pci_device_leave_those_out():
    device = dataclasses.replace(inv.fpga_card('node-1', 0), numa_node=None,
                                 pci_address=None, pcie_root=None,
                                 identity='sim-card-0')
    host = inventory.HostInventory('node-1', 'node-1', (device,))
    (obj,) = _build(host)
    attributes = obj['spec']['devices'][0]['attributes']
    assert 'numaNode' not in attributes
    assert not any(k.startswith('resource.kubernetes.io/')
                   for k in attributes)
    _assert_valid([obj])


def test_value_over_64_characters_is_left_out_not_cut():
    host = inv.change_device(inv.host(cards=1), 0, model='m' * 65)
    (obj,) = _build(host)
    for device in obj['spec']['devices']:
        assert 'model' not in device['attributes']
    _assert_valid([obj])


def test_value_of_exactly_64_characters_is_kept():
    host = inv.change_device(inv.host(cards=1), 0, model='m' * 64)
    (obj,) = _build(host)
    for device in obj['spec']['devices']:
        assert device['attributes']['model'] == {'string': 'm' * 64}
    _assert_valid([obj])


def test_names_that_fold_alike_get_distinct_hashed_names():
    one = dataclasses.replace(inv.fpga_card('node-1', 0), pci_address=None,
                              identity='card.a')
    two = dataclasses.replace(inv.fpga_card('node-1', 1), pci_address=None,
                              identity='card-a')
    (obj,) = _build(inventory.HostInventory('node-1', 'node-1', (one, two)))
    names = [d['name'] for d in obj['spec']['devices']]
    assert len(set(names)) == 4
    assert all(n.startswith('fpga-card-a-region') for n in names)
    _assert_valid([obj])


def test_long_node_name_gives_a_valid_slice_name():
    node = '.'.join(['n' * 60] * 4)                 # 243 characters
    host = inventory.HostInventory(node, node, inv.host().devices)
    (obj,) = _build(host)
    assert len(obj['metadata']['name']) <= 253
    _assert_valid([obj])


def test_bad_node_name_is_refused():
    host = inventory.HostInventory('Node_1', 'Node_1', inv.host().devices)
    with pytest.raises(slices.InvalidSlice, match='Node_1'):
        _build(host)


def _slice_with(device):
    (obj,) = _build(inv.host(cards=1, regions=1))
    obj['spec']['devices'] = [dict(obj['spec']['devices'][0], **device)]
    return obj


@pytest.mark.parametrize('device,reason', [
    ({'name': 'Bad_Name'}, 'not a DNS label'),
    ({'name': 'a' * 64}, 'not a DNS label'),
    ({'attributes': {'x%d' % i: {'int': i} for i in range(32)}},
     'more than 32'),
    ({'attributes': {'bad-name': {'int': 1}}}, 'not a qualified name'),
    ({'attributes': {'x': {'string': 'y' * 65}}}, 'at most 64'),
    ({'attributes': {'x': {'int': 1, 'bool': True}}}, 'exactly one'),
    ({'attributes': {'x': {'int': True}}}, 'an integer'),
    ({'attributes': {'localMemory': {'int': 1}}}, 'both attribute'),
    ({'taints': [{'key': 'x/-bad', 'effect': 'NoSchedule'}]}, 'bad taint'),
    ({'taints': [{'key': 'x', 'effect': 'PreferNoSchedule'}]}, 'bad taint'),
    ({'taints': [{'key': 'x', 'value': '-nova', 'effect': 'NoSchedule'}]},
     'bad taint'),
    ({'taints': [{'key': 'x', 'value': 'n' * 64, 'effect': 'NoSchedule'}]},
     'bad taint'),
    ({'taints': [{'key': 'k%d' % i, 'effect': 'None'} for i in range(17)]},
     'more than 16 taints'),
])
def test_check_slice_refuses_what_the_apiserver_would(device, reason):
    with pytest.raises(slices.InvalidSlice, match=reason):
        slices.check_slice(_slice_with(device))


def test_check_slice_takes_the_longest_values_the_apiserver_takes():
    obj = _slice_with({
        'attributes': {'x': {'string': 'y' * 64}},
        'taints': [{'key': 'x', 'value': 'n' * 63, 'effect': 'NoSchedule'}]})
    slices.check_slice(obj)
    _assert_valid([obj])


def test_check_slice_counts_devices_with_and_without_taints():
    (obj,) = _build(inv.host(cards=1, regions=1))
    device = obj['spec']['devices'][0]
    obj['spec']['devices'] = [dict(device, name='d%d' % i)
                              for i in range(128)]
    slices.check_slice(obj)
    obj['spec']['devices'].append(dict(device, name='d128'))
    with pytest.raises(slices.InvalidSlice, match='129 devices, at most 128'):
        slices.check_slice(obj)
    tainted = [dict(device, name='t%d' % i,
                    taints=[{'key': 'k', 'effect': 'None'}])
               for i in range(65)]
    obj['spec']['devices'] = tainted
    with pytest.raises(slices.InvalidSlice, match='65 devices, at most 64'):
        slices.check_slice(obj)


@pytest.mark.parametrize('mib,text', [
    (0, '0'), (1, '1Mi'), (1000, '1000Mi'), (1024, '1Gi'), (1536, '1536Mi'),
    (4096, '4Gi'), (81920, '80Gi'), (1 << 20, '1Ti'),
])
def test_quantities_are_canonical(mib, text):
    assert slices.mib_quantity(mib) == text
    assert kubernetes.utils.parse_quantity(text) == mib * 2 ** 20


@pytest.mark.parametrize('bad', [-1, True, 1.0, '1'])
def test_quantity_refuses_non_integers(bad):
    with pytest.raises(slices.InvalidSlice):
        slices.mib_quantity(bad)


def test_cached_schemas_agree_with_kubernetes_validate():
    """Guard for the cache above: same verdicts as the package's own API."""
    good = {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceSlice',
            'metadata': {'name': 'n'},
            'spec': {'driver': 'd.io', 'nodeName': 'n', 'pool': {
                'name': 'n', 'generation': 1, 'resourceSliceCount': 1}}}
    bad = dict(good, spec=dict(good['spec'], unknownField=1))
    for version in schemas.VERSIONS:
        kubernetes_validate.validate(good, version, strict=True)
        try:
            kubernetes_validate.validate(bad, version, strict=True)
        except kubernetes_validate.ValidationError:
            pass
        else:
            raise AssertionError('kubernetes-validate took a bad slice')
    assert schemas.schema_errors(good) == []
    assert len(schemas.schema_errors(bad)) == len(schemas.VERSIONS)
