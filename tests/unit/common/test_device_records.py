"""The report records: what a peer may send, and what sharing means."""
import pytest

from cyborg_lite.common import device_records
from cyborg_lite.common import exception

PF = {'domain': '0000', 'bus': 'af', 'device': '00', 'function': '0'}
VF1 = dict(PF, bus='5e', function='1')
VF2 = dict(PF, bus='5e', function='2')


def _handle(info, attach_type='PCI'):
    return {'attach_type': attach_type, 'attach_info': info}


def _device(*handle_lists, pci_address='0000:af:00.0'):
    return {'type': 'FPGA', 'vendor': '0x8086', 'model': 'PAC',
            'identity': 'card', 'pci_address': pci_address,
            'deployables': [
                {'name': 'region%d' % i, 'resource_class': 'FPGA',
                 'attach_handles': [_handle(info) for info in handles]}
                for i, handles in enumerate(handle_lists)]}


def test_a_vf_per_region_shares_nothing():
    record = device_records.DeviceRecord.from_dict(_device([VF1], [VF2]))
    assert record.shared_groups() == {}


def test_regions_behind_one_pf_share_its_handle():
    record = device_records.DeviceRecord.from_dict(
        _device([PF], [PF], [VF1]))
    pair = frozenset({'region0', 'region1'})
    assert record.shared_groups() == {'region0': pair, 'region1': pair}


def test_handle_key_ignores_key_order_but_not_type():
    a = device_records.AttachHandleRecord('PCI', dict(PF))
    b = device_records.AttachHandleRecord(
        'PCI', dict(reversed(list(PF.items()))))
    c = device_records.AttachHandleRecord('TEST_PCI', dict(PF))
    assert a.key() == b.key() != c.key()


def test_physical_network_rides_on_a_pci_handle():
    info = dict(VF1, physical_network='physnet1')
    record = device_records.DeviceRecord.from_dict(_device([info]))
    assert record.deployables[0].attach_handles[0].attach_info == info
    assert device_records.pci_address(info) == '0000:5e:00.1'


@pytest.mark.parametrize('info,field', [
    (dict(PF, bus='5E'), 'bus'),
    (dict(PF, function='8'), 'function'),
    (dict(PF, domain='0000\n'), 'domain'),
    (dict(PF, device=0), 'device'),
    ({'domain': '0000', 'bus': 'af', 'device': '00'}, 'function'),
    (dict(PF, physical_network=''), 'physical_network'),
    (dict(PF, physical_network='phys net'), 'physical_network'),
    (dict(PF, physical_network='a' * 65), 'physical_network'),
    (dict(PF, physical_network='physnet1\n'), 'physical_network'),
    (dict(PF, slot='3'), 'unknown keys'),
])
def test_malformed_pci_handle_is_refused(info, field):
    with pytest.raises(exception.Invalid, match=field):
        device_records.DeviceRecord.from_dict(_device([info]))


@pytest.mark.parametrize('address', ['0000:af:00.0\n', '0000:AF:00.0',
                                     ' 0000:af:00.0', '0000:af:00.8'])
def test_pci_address_is_matched_whole(address):
    with pytest.raises(exception.Invalid, match='pci_address'):
        device_records.DeviceRecord.from_dict(
            _device([PF], pci_address=address))


def test_mdev_and_test_handles_keep_their_own_keys():
    data = _device([])
    data['deployables'][0]['attach_handles'] = [
        _handle({'mdev_type': 'nvidia-35', 'parent': '0000:3b:00.0',
                 'slot': '0'}, 'MDEV'),
        _handle({'anything': 'goes'}, 'TEST_PCI')]
    record = device_records.DeviceRecord.from_dict(data)
    assert [h.attach_type for h in record.deployables[0].attach_handles] \
        == ['MDEV', 'TEST_PCI']
