"""sriov_nic driver: SmartNIC VFs with the fields Nova's port path reads."""
import json
import shutil

import pytest
from oslo_config import cfg

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.conf import drivers as conf_drivers
from cyborg_lite.drivers import base
from cyborg_lite.drivers import sriov_nic
from tests import nova
from tests.unit.drivers.conftest import fixture_path

PF0 = '0000:1b:00.0'     # XL710 of an N3000, two VFs enabled
PF1 = '0000:1b:00.1'     # same card, SR-IOV capable, no VFs
PF0_DIR = 'sys/devices/pci0000:1a/0000:1a:00.0/0000:1b:00.0'


@pytest.fixture
def nic_host(tmp_path):
    root = tmp_path / 'host'
    shutil.copytree(fixture_path('nic_host'), root, symlinks=True)
    return root


def _driver(conf, root, physnets=('physnet1:%s|%s' % (PF0, PF1),),
            functions=('GTPv1:%s' % PF0,)):
    conf.set_override('sysfs_root', str(root / 'sys'),
                      group='sriov_nic_driver')
    conf.set_override('physical_device_mappings', list(physnets),
                      group='sriov_nic_driver')
    conf.set_override('function_device_mappings', list(functions),
                      group='sriov_nic_driver')
    driver = sriov_nic.SriovNicDriver(conf)
    driver.name = 'sriov_nic'
    return driver


def _by_identity(records):
    return {r.identity: r for r in records}


def test_each_enabled_vf_is_a_handle_on_the_physical_network(conf,
                                                             nic_host):
    records = _by_identity(_driver(conf, nic_host).discover())
    assert sorted(records) == [PF0, PF1]
    pf0 = records[PF0]
    assert (pf0.type, pf0.vendor, pf0.model, pf0.health) == \
        ('NIC', '0x8086', 'Intel PAC N3000 XL710 25G', 'healthy')
    assert pf0.vendor_board_info == {'sriov_totalvfs': 64,
                                     'sriov_numvfs': 2}
    [vfs] = pf0.deployables
    assert (vfs.name, vfs.resource_class, vfs.num_accelerators,
            vfs.function_name) == ('vfs', 'CUSTOM_NIC', 2, 'GTPv1')
    assert vfs.traits == ['CUSTOM_VF', 'CUSTOM_GTPV1', 'CUSTOM_PHYSNET1']
    assert vfs.attributes == {'physical_network': 'physnet1'}
    assert [h.attach_info for h in vfs.attach_handles] == [
        {'domain': '0000', 'bus': '1b', 'device': '02', 'function': '0',
         'physical_network': 'physnet1'},
        {'domain': '0000', 'bus': '1b', 'device': '02', 'function': '1',
         'physical_network': 'physnet1'}]
    assert pf0.shared_groups() == {}
    assert device_records.DeviceRecord.from_dict(pf0.to_dict()) == pf0


def test_pf_without_vfs_offers_nothing(conf, nic_host):
    pf1 = _by_identity(_driver(conf, nic_host).discover())[PF1]
    assert pf1.deployables == []
    assert pf1.vendor_board_info['sriov_numvfs'] == 0


def test_function_trait_is_optional(conf, nic_host):
    records = _by_identity(_driver(conf, nic_host, functions=()).discover())
    [vfs] = records[PF0].deployables
    assert vfs.function_name is None
    assert vfs.traits == ['CUSTOM_VF', 'CUSTOM_PHYSNET1']


def test_numvfs_disagreeing_with_the_links_degrades(conf, nic_host):
    (nic_host / PF0_DIR / 'sriov_numvfs').write_text('4\n')
    pf0 = _by_identity(_driver(conf, nic_host).discover())[PF0]
    assert pf0.health == 'degraded'
    assert pf0.deployables[0].num_accelerators == 2


def test_unconfigured_functions_and_absent_pfs_are_not_reported(conf,
                                                                nic_host):
    records = _driver(conf, nic_host,
                      physnets=['physnet2:0000:1b:00.0|0000:99:00.0'],
                      functions=()).discover()
    assert [r.identity for r in records] == [PF0]
    handle = records[0].deployables[0].attach_handles[0]
    assert handle.attach_info['physical_network'] == 'physnet2'


def test_a_vf_named_as_pf_is_skipped(conf, nic_host, caplog):
    records = _driver(conf, nic_host, physnets=['physnet1:0000:1b:02.0'],
                      functions=()).discover()
    assert records == []
    assert 'not a physical function' in caplog.text


@pytest.mark.parametrize('physnets,functions,message', [
    (['physnet1:0000:1b:00.0', 'physnet2:0000:1b:00.0'], [],
     'mapped to both'),
    (['physnet1:0000:1b:00.0', 'physnet1:0000:1b:00.1'], [],
     'given twice'),
    (['physnet1:0000:1b:00'], [], 'not a PCI address'),
    (['-bad:0000:1b:00.0'], [], 'not a valid name'),
    (['physnet1:0000:1b:00.0'], ['GTPv1:0000:1b:00.1'],
     'physical_device_mappings does not'),
])
def test_bad_mappings_stop_the_driver_with_a_clear_error(
        conf, nic_host, physnets, functions, message):
    with pytest.raises(exception.ConfigError, match=message):
        _driver(conf, nic_host, physnets=physnets, functions=functions)


def test_malformed_entry_in_a_file_is_a_config_error(tmp_path):
    path = tmp_path / 'agent.conf'
    path.write_text('[sriov_nic_driver]\n'
                    'physical_device_mappings = physnet1\n')
    fresh = cfg.ConfigOpts()
    conf_drivers.register_opts(fresh)
    fresh(['--config-file', str(path)])
    with pytest.raises(cfg.ConfigFileValueError, match='physnet1'):
        fresh.sriov_nic_driver.physical_device_mappings


def test_it_is_a_discovery_driver_only(conf, nic_host):
    driver = _driver(conf, nic_host)
    assert isinstance(driver, base.DiscoveryInterface)
    assert not isinstance(driver, base.ProgrammingInterface)


# --- what Nova reads ------------------------------------------------------

def _arq(handle, arq_uuid='a1b2c3d4-0000-4000-8000-000000000001'):
    """The ARQ the API shows once ``handle`` is bound: attach_handle_type
    and attach_handle_info are the stored handle, passed through whole
    (api/controllers/accelerator_requests.py view())."""
    return {'uuid': arq_uuid, 'state': 'Bound',
            'attach_handle_type': handle.attach_type,
            'attach_handle_info': json.loads(json.dumps(
                handle.attach_info, sort_keys=True))}


def nova_port_binding_profile(arq):
    """What Nova does with a port's ARQ, field for field.

    nova/accelerator/cyborg.py get_arq_pci_device_profile() (nova 34.0.0,
    master 2026-08): physical_network, domain, bus, device, function of
    attach_handle_info and the ARQ uuid, each read with [] (a missing key
    is a KeyError that fails the boot). nova/network/neutron.py
    _populate_neutron_binding_profile() puts the result in the port's
    binding:profile. nova/virt/libvirt/driver.py only composes ARQs
    whose attach_handle_type is 'PCI' into the guest.
    """
    pci_info = arq['attach_handle_info']
    return {
        'physical_network': pci_info['physical_network'],
        'pci_slot': '%s:%s:%s.%s' % (pci_info['domain'], pci_info['bus'],
                                     pci_info['device'],
                                     pci_info['function']),
        'arq_uuid': arq['uuid'],
    }


def test_every_vf_gives_nova_a_complete_port_binding_profile(conf,
                                                             nic_host):
    pf0 = _by_identity(_driver(conf, nic_host).discover())[PF0]
    profiles = [nova_port_binding_profile(_arq(h))
                for h in pf0.deployables[0].attach_handles]
    assert [p['pci_slot'] for p in profiles] == ['0000:1b:02.0',
                                                 '0000:1b:02.1']
    assert {p['physical_network'] for p in profiles} == {'physnet1'}
    assert {h.attach_type for h in pf0.deployables[0].attach_handles} == \
        {'PCI'}


def test_an_fpga_region_handle_is_what_nova_cannot_plug_a_port_into(
        conf, nic_host):
    # The check above can fail: a handle without physical_network is the
    # KeyError Nova raised on our ARQs before this driver.
    handle = device_records.AttachHandleRecord(
        'PCI', {'domain': '0000', 'bus': '5e', 'device': '00',
                'function': '1'})
    with pytest.raises(KeyError, match='physical_network'):
        nova_port_binding_profile(_arq(handle))


def test_novas_own_function_reads_our_handles(conf, nic_host):
    pf0 = _by_identity(_driver(conf, nic_host).discover())[PF0]
    arqs = [_arq(h) for h in pf0.deployables[0].attach_handles]
    script = ('import json, sys\n'
              'from nova.accelerator import cyborg\n'
              'arqs = json.load(sys.stdin)\n'
              'print(json.dumps([cyborg.get_arq_pci_device_profile(a) '
              'for a in arqs]))\n')
    assert nova.run(script, arqs) == \
        [nova_port_binding_profile(a) for a in arqs]
