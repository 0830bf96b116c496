"""nvidia driver on a vendor-VFIO vGPU host (H200, no mdev): each VF's
creatable and current type, offered per type as the card can still make."""
import pytest

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.drivers import nvidia
from cyborg_lite.drivers import nvidia_vgpu_vfio
from tests.fixtures.drivers import vgpu_vfio_host

PF = '0000:41:00.0'
MOST = {t[0]: t[2] for t in vgpu_vfio_host.H200X_TYPES}


@pytest.fixture
def host(tmp_path):
    return vgpu_vfio_host.VgpuVfioHost(tmp_path / 'h200')


@pytest.fixture
def driver(conf, host):
    host.configure(conf)
    driver = nvidia.NvidiaDriver(conf)
    driver.name = 'nvidia'
    return driver


def _offers(driver):
    [gpu] = driver.discover()
    return {d.name: d.num_accelerators for d in gpu.deployables}


def _write(host, index, text):
    host.write(host.vf_file(PF, index, 'current_vgpu_type'), text)


def test_a_fresh_card_offers_every_type_as_many_as_it_can_make(driver):
    [gpu] = driver.discover()
    assert (gpu.identity, gpu.model, gpu.std_board_info['device_id']) == \
        (PF, 'NVIDIA H200', '0x2335')
    offers = {d.name: d for d in gpu.deployables}
    assert {n: d.num_accelerators for n, d in offers.items()} == {
        'vgpu_%d' % i: most for i, most in MOST.items()}
    q35 = offers['vgpu_1426']
    assert q35.resource_class == 'VGPU'
    assert 'CUSTOM_NVIDIA_2335_H200X_35C' in q35.traits
    assert q35.attributes == {'bind': 'unsupported', 'vgpu_type_id': '1426',
                              'vgpu_type_name': 'NVIDIA H200X-35C',
                              'made': '0'}
    # No whole-GPU offer beside the types: one way at a time.
    assert 'pgpu' not in offers
    device_records.DeviceRecord.from_dict(gpu.to_dict())


def test_a_type_someone_else_made_is_counted_and_narrows_the_card(
        driver, host):
    _write(host, 5, '1426')
    offers = _offers(driver)
    assert offers['vgpu_1426'] == 3
    assert {n: c for n, c in offers.items() if n != 'vgpu_1426'} == \
        dict.fromkeys(offers.keys() - {'vgpu_1426'}, 0)
    for index in (0, 1, 2):
        _write(host, index, '1426')
    assert set(_offers(driver).values()) == {0}
    # Left alone: discovery writes nothing.
    assert host.current[host.vfs[PF][5]] == 1426
    for index in (0, 1, 2, 5):
        _write(host, index, '0')
    assert _offers(driver) == {'vgpu_%d' % i: most
                               for i, most in MOST.items()}


def test_never_more_than_the_free_vfs(conf, tmp_path):
    small = vgpu_vfio_host.VgpuVfioHost(tmp_path / 'h', num_vfs=6)
    small.configure(conf)
    driver = nvidia.NvidiaDriver(conf)
    driver.name = 'nvidia'
    offers = _offers(driver)
    assert offers['vgpu_1420'] == 6 and offers['vgpu_1426'] == 4
    small.write(small.vf_file(PF, 0, 'current_vgpu_type'), '1420')
    assert _offers(driver)['vgpu_1420'] == 5


def test_creatable_files_as_the_driver_prints_them():
    text = ('ID    : vGPU Name\n'
            '1414  : NVIDIA H200X-1-18C\n'
            '1428  : NVIDIA H200X-141C\n')
    assert nvidia_vgpu_vfio.parse_creatable(text, 'f') == {
        1414: 'NVIDIA H200X-1-18C', 1428: 'NVIDIA H200X-141C'}
    assert nvidia_vgpu_vfio.parse_creatable('ID    : vGPU Name\n', 'f') == {}
    assert nvidia_vgpu_vfio.parse_creatable('', 'f') == {}
    with pytest.raises(exception.HostDataError):
        nvidia_vgpu_vfio.parse_creatable('ID    : vGPU Name\ngarbage\n', 'f')


def test_supported_types_from_nvidia_smi():
    text = vgpu_vfio_host.supported_types_text(PF)
    found = nvidia_vgpu_vfio.parse_supported(text, 'smi')
    assert found[0x594] == ('NVIDIA H200X-141C', 1)
    assert found[1420] == ('NVIDIA H200X-4C', 32)
    no_max = '\n'.join(line for line in text.splitlines()
                       if 'Max Instances  ' not in line)
    assert nvidia_vgpu_vfio.parse_supported(no_max, 'smi')[1426] == \
        ('NVIDIA H200X-35C', None)


def test_a_garbled_vf_file_skips_only_that_gpu(driver, host, caplog):
    with open(host.vf_file(PF, 3, 'creatable_vgpu_types'), 'a') as f:
        f.write('1426 NVIDIA H200X-35C\n')
    assert driver.discover() == []
    assert 'not "<id> : <name>"' in caplog.text


def test_a_failing_type_listing_fails_the_scan(driver, host):
    # Without Max Instances every type would be offered once per free VF:
    # the scan fails and the agent keeps the last report instead.
    with open(host.tool, 'w') as f:
        f.write('#!/bin/sh\n[ "$1" = vgpu ] && exit 6\ncat %s\n' % host.xml)
    with pytest.raises(exception.DriverError):
        driver.discover()
