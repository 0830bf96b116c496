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
    assert q35.attributes == {'bind': 'make', 'vgpu_type_id': '1426',
                              'vgpu_type_name': 'NVIDIA H200X-35C',
                              'made': '0', 'gpu_vfs': '32',
                              'vgpu_max_instances': '4'}
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


# --- made at bind, removed at release ----------------------------------

def _handle(host, index, type_id):
    vf = host.vfs[PF][index]
    return dict(domain=vf[:4], bus=vf[5:7], device=vf[8:10],
                function=vf[11], vgpu_type=str(type_id))


def _deployable(driver, name):
    [gpu] = driver.discover()
    [found] = [d for d in gpu.deployables if d.name == name]
    return found


@pytest.fixture
def kernel(driver, host):
    """The driver's sysfs writes go to the simulated host's kernel."""
    driver.write_attribute = host.write
    return host


def test_a_type_is_made_on_the_vf_a_handle_names(driver, kernel):
    before = _deployable(driver, 'vgpu_1426')
    assert before.num_accelerators == 4 and len(before.attach_handles) == 32
    made = driver.make_instance(PF, 'vgpu_1426', _handle(kernel, 3, 1426))
    vf = kernel.vfs[PF][3]
    assert made == {'domain': '0000', 'bus': '41', 'device': vf[8:10],
                    'function': vf[11]}
    assert kernel.read(kernel.vf_file(PF, 3, 'current_vgpu_type')) == \
        '1426\n'
    assert driver.made_here.read() == {vf: 1426}
    # Its own vGPU stays a handle of its type and in its count (the
    # bind's allocation holds it); the card makes only 35C now.
    after = _deployable(driver, 'vgpu_1426')
    assert after.num_accelerators == 4
    assert _handle(kernel, 3, 1426) in [h.attach_info
                                        for h in after.attach_handles]
    other = _deployable(driver, 'vgpu_1420')
    assert (other.num_accelerators, other.attach_handles) == (0, [])


def test_a_time_sliced_bind_runs_no_nvidia_smi_on_a_gpu_out_of_mig_mode(
        driver, kernel):
    driver.discover()
    ran, run = [], driver.run_tool
    driver.run_tool = lambda *a: ran.append(a[1]) or run(*a)
    driver.make_instance(PF, 'vgpu_1426', _handle(kernel, 3, 1426))
    # The last scan found the GPU out of MIG mode: no type of it is
    # MIG-backed, nothing asked of nvidia-smi on the bind's path.
    assert ran == []


def test_made_again_for_its_holder_the_same_vf_nothing_written(
        driver, kernel):
    """A Prepare the kubelet asks again makes nothing twice; a VF of
    the type that this host did not make is still refused."""
    first = driver.make_instance(PF, 'vgpu_1426', _handle(kernel, 3, 1426))
    writes = []
    driver.write_attribute = lambda path, text: writes.append(text)
    assert driver.make_instance(PF, 'vgpu_1426',
                                _handle(kernel, 3, 1426)) == first
    assert writes == []
    _write(kernel, 5, '1426')
    with pytest.raises(nvidia_vgpu_vfio.VgpuRefused, match='already'):
        driver.make_instance(PF, 'vgpu_1426', _handle(kernel, 5, 1426))
    assert writes == []


def test_a_prepare_retried_after_a_kill_9_makes_its_vgpu_once(
        conf, driver, kernel):
    """The agent killed after noting the VF (before its write) or after
    its write: the kubelet's retried Prepare, on a restarted agent, makes
    the vGPU, or answers the VF made, and never writes twice."""
    vf = kernel.vfs[PF][7]
    driver.made_here.note(vf, 1426)             # killed before the write
    restarted = nvidia.NvidiaDriver(conf)
    writes = []

    def write(path, text):
        writes.append(text)
        kernel.write(path, text)
    restarted.write_attribute = write
    made = restarted.make_instance(PF, 'vgpu_1426', _handle(kernel, 7, 1426))
    assert kernel.current[vf] == 1426 and writes == ['1426\n']
    again = nvidia.NvidiaDriver(conf)           # killed after the write
    again.write_attribute = write
    assert again.make_instance(PF, 'vgpu_1426',
                               _handle(kernel, 7, 1426)) == made
    assert writes == ['1426\n']


def test_someone_else_s_vgpu_is_no_handle_and_never_removed(driver, kernel):
    _write(kernel, 5, '1426')
    found = _deployable(driver, 'vgpu_1426')
    assert found.num_accelerators == 3
    assert _handle(kernel, 5, 1426) not in [h.attach_info
                                            for h in found.attach_handles]
    with pytest.raises(nvidia_vgpu_vfio.VgpuRefused, match='left alone'):
        driver.remove_instance(PF, 'vgpu_1426', _handle(kernel, 5, 1426))
    assert kernel.current[kernel.vfs[PF][5]] == 1426
    # A VF that cannot make the type now is refused before any write.
    with pytest.raises(nvidia_vgpu_vfio.VgpuRefused,
                       match='not among those it can make now'):
        driver.make_instance(PF, 'vgpu_1420', _handle(kernel, 0, 1420))
    assert kernel.current[kernel.vfs[PF][0]] == 0
    assert driver.made_here.read() == {}


def test_a_write_the_kernel_refuses_leaves_nothing_made_nor_noted(
        driver, kernel):
    # The card's one 141C is taken by someone else between the driver's
    # read of the VF's list and its write: ENOSPC.
    def racing(path, text):
        if kernel.current[kernel.vfs[PF][1]] == 0:
            kernel.write(kernel.vf_file(PF, 1, 'current_vgpu_type'), '1428')
        kernel.write(path, text)
    driver.write_attribute = racing
    with pytest.raises(nvidia_vgpu_vfio.VgpuRefused, match='ENOSPC'):
        driver.make_instance(PF, 'vgpu_1428', _handle(kernel, 0, 1428))
    assert kernel.current[kernel.vfs[PF][0]] == 0
    assert driver.made_here.read() == {}


def test_removed_once_no_guest_has_it_open(driver, kernel):
    vf = kernel.vfs[PF][2]
    driver.make_instance(PF, 'vgpu_1427', _handle(kernel, 2, 1427))
    kernel.guest_opens(vf)
    with pytest.raises(nvidia_vgpu_vfio.VgpuRefused, match='EBUSY'):
        driver.remove_instance(PF, 'vgpu_1427', _handle(kernel, 2, 1427))
    assert kernel.current[vf] == 1427 and driver.made_here.read() == {
        vf: 1427}
    kernel.guest_closes(vf)
    assert driver.remove_instance(PF, 'vgpu_1427', _handle(kernel, 2, 1427))
    assert kernel.read(kernel.vf_file(PF, 2, 'current_vgpu_type')) == '0\n'
    assert driver.made_here.read() == {}
    assert _deployable(driver, 'vgpu_1420').num_accelerators == 32
    # Removed already: nothing to do.
    assert not driver.remove_instance(PF, 'vgpu_1427',
                                      _handle(kernel, 2, 1427))


def test_what_a_killed_agent_made_is_still_its_own_after_a_restart(
        conf, driver, kernel):
    driver.make_instance(PF, 'vgpu_1426', _handle(kernel, 4, 1426))
    restarted = nvidia.NvidiaDriver(conf)
    restarted.name = 'nvidia'
    restarted.write_attribute = kernel.write
    assert _handle(kernel, 4, 1426) in [
        h.attach_info for h in
        _deployable(restarted, 'vgpu_1426').attach_handles]
    assert restarted.remove_instance(PF, 'vgpu_1426',
                                     _handle(kernel, 4, 1426))
    # Killed after noting a VF and before writing its type: nothing made,
    # nothing counted, and its removal only forgets it.
    restarted.made_here.note(kernel.vfs[PF][6], 1426)
    assert _deployable(restarted, 'vgpu_1426').num_accelerators == 4
    assert not restarted.remove_instance(PF, 'vgpu_1426',
                                         _handle(kernel, 6, 1426))
    assert restarted.made_here.read() == {}


def test_a_handle_of_another_kind_is_refused(driver, kernel):
    with pytest.raises(exception.DriverError, match='not a vGPU type'):
        driver.make_instance(PF, 'vgpu_1426', _handle(kernel, 0, 1420))
    assert kernel.current == dict.fromkeys(kernel.current, 0)
