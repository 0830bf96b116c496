"""Generic PCI driver against the fixture host and this machine's /sys."""
import logging
import os
import shutil

import pytest

from cyborg_lite.common import device_records
from cyborg_lite.drivers import pci
from tests.unit.drivers.conftest import fixture_path

PAC_DIR = 'sys/devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0'


@pytest.fixture
def pci_host(tmp_path):
    root = tmp_path / 'host'
    shutil.copytree(fixture_path('pci_host'), root, symlinks=True)
    return root


def _driver(conf, root, **overrides):
    conf.set_override('sysfs_root', str(root / 'sys') if root else '/sys',
                      group='pci_driver')
    for key, value in overrides.items():
        conf.set_override(key, value, group='pci_driver')
    driver = pci.PciDriver(conf)
    driver.name = 'pci'
    return driver


def _by_identity(records):
    return {r.identity: r for r in records}


def test_this_machines_real_sys_has_no_accelerators(conf):
    # research/drivers/pci.md: this host has a host bridge and virtio
    # functions only. The scan must read the real tree without error.
    records = _driver(conf, None).discover()
    for record in records:
        device_records.DeviceRecord.from_dict(record.to_dict())
    if os.path.exists('/sys/bus/pci/devices/0000:00:01.0/vendor'):
        with open('/sys/bus/pci/devices/0000:00:01.0/vendor') as f:
            if f.read() == '0x1af4\n':   # still the virtio build machine
                assert records == []


def test_accelerator_classes_are_reported_for_any_vendor(conf, pci_host):
    records = _by_identity(_driver(conf, pci_host).discover())
    assert sorted(records) == ['0000:5e:00.0', '0000:d8:00.1']
    coproc = records['0000:d8:00.1']
    assert (coproc.type, coproc.vendor, coproc.model) == \
        ('PCI', '0x10ee', 'PCI 10ee:5001')
    assert coproc.std_board_info == {
        'vendor_id': '0x10ee', 'device_id': '0x5001', 'class': '0x0b4000',
        'subsystem_vendor': '0x10ee', 'subsystem_device': '0x1100',
        'numa_node': 1}
    [dep] = coproc.deployables
    assert (dep.name, dep.resource_class, dep.traits) == \
        ('pf', 'CUSTOM_PCI_10EE_5001', ['CUSTOM_PCI_VENDOR_10EE'])
    assert dep.attach_handles[0].attach_info == {
        'domain': '0000', 'bus': 'd8', 'device': '00', 'function': '1'}


def test_sriov_pf_offers_its_vfs_and_vfs_are_not_cards(conf, pci_host):
    pac = _by_identity(_driver(conf, pci_host).discover())['0000:5e:00.0']
    assert pac.std_board_info['kernel_driver'] == 'dfl-pci'
    [dep] = pac.deployables
    assert dep.num_accelerators == 1
    assert [h.attach_info['function'] for h in dep.attach_handles] == ['1']


def test_display_classes_need_the_allow_list(conf, pci_host):
    records = _by_identity(_driver(conf, pci_host,
                                   allowed_ids=['0x10de']).discover())
    assert '0000:00:02.0' not in records    # on-board VGA, not allowed
    gpu = records['0000:3b:00.0']
    assert (gpu.type, gpu.deployables[0].name,
            gpu.deployables[0].resource_class) == ('GPU', 'pgpu', 'PGPU')


def test_vendor_device_pairs_are_exact(conf, pci_host):
    records = _driver(conf, pci_host,
                      allowed_ids=['0x10de:0x1eb8']).discover()
    assert '0000:3b:00.0' not in _by_identity(records)


def test_ignored_ids_hide_cards_another_driver_reports(conf, pci_host):
    records = _driver(conf, pci_host,
                      ignored_ids=['0x8086:0x09c4']).discover()
    assert [r.identity for r in records] == ['0000:d8:00.1']


@pytest.mark.parametrize('content', ['processing\n', '0x12000000\n', ''])
def test_garbage_class_skips_only_that_function(conf, pci_host, content,
                                                caplog):
    (pci_host / PAC_DIR / 'class').write_text(content)
    with caplog.at_level(logging.WARNING):
        records = _driver(conf, pci_host).discover()
    assert [r.identity for r in records] == ['0000:d8:00.1']
    assert '0000:5e:00.0' in caplog.text


def test_negative_numa_node_means_unknown(conf, pci_host):
    (pci_host / PAC_DIR / 'numa_node').write_text('-1\n')
    pac = _by_identity(_driver(conf, pci_host).discover())['0000:5e:00.0']
    assert 'numa_node' not in pac.std_board_info


def test_missing_vendor_file_skips_the_function(conf, pci_host):
    os.unlink(pci_host / PAC_DIR / 'vendor')
    assert [r.identity for r in _driver(conf, pci_host).discover()] == \
        ['0000:d8:00.1']


def test_no_pci_bus_is_an_empty_answer(conf, tmp_path):
    (tmp_path / 'sys').mkdir()
    assert _driver(conf, tmp_path).discover() == []


@pytest.mark.parametrize('code,patterns,expected', [
    (0x120000, ['0x12'], True), (0x120000, ['0x1200'], True),
    (0x0b4000, ['0x0b40'], True), (0x0b4000, ['0x0b'], True),
    (0x030200, ['0x0300'], False), (0x060000, ['0x1200', '0x0b40'], False)])
def test_class_matching(code, patterns, expected):
    assert pci.class_matches(code, patterns) is expected
