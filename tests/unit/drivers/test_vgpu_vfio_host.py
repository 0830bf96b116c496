"""The simulated vendor-VFIO vGPU host behaves as the NVIDIA driver does."""
import errno
import os
import subprocess

import pytest

from tests.fixtures.drivers import vgpu_vfio_host

PF = '0000:41:00.0'
ALL_TYPES = ('ID    : vGPU Name\n'
             '1420  : NVIDIA H200X-4C\n'
             '1421  : NVIDIA H200X-7C\n'
             '1422  : NVIDIA H200X-8C\n'
             '1423  : NVIDIA H200X-14C\n'
             '1424  : NVIDIA H200X-17C\n'
             '1425  : NVIDIA H200X-28C\n'
             '1426  : NVIDIA H200X-35C\n'
             '1427  : NVIDIA H200X-70C\n'
             '1428  : NVIDIA H200X-141C\n')


@pytest.fixture
def host(tmp_path):
    return vgpu_vfio_host.VgpuVfioHost(tmp_path / 'h200', num_vfs=8)


def _creatable(host, index):
    return host.read(host.vf_file(PF, index, 'creatable_vgpu_types'))


def _current(host, index):
    return host.read(host.vf_file(PF, index, 'current_vgpu_type'))


def _refused(host, index, text):
    with pytest.raises(OSError) as e:
        host.write(host.vf_file(PF, index, 'current_vgpu_type'), text)
    return e.value.errno


def test_the_tree_is_an_sriov_pf_with_its_vfs(host):
    pf = host.function_dir(PF)
    assert host.read(os.path.join(pf, 'sriov_totalvfs')) == '32\n'
    assert host.read(os.path.join(pf, 'sriov_numvfs')) == '8\n'
    assert os.readlink(os.path.join(pf, 'virtfn0')) == '../0000:41:00.4'
    assert os.readlink(os.path.join(pf, 'virtfn4')) == '../0000:41:01.0'
    vf = host.function_dir('0000:41:00.4')
    assert os.readlink(os.path.join(vf, 'physfn')) == '../' + PF
    for function in (pf, vf):
        assert os.path.basename(os.readlink(
            os.path.join(function, 'driver'))) == 'nvidia'
    assert not os.path.exists(os.path.join(pf, 'nvidia'))
    assert _creatable(host, 0) == ALL_TYPES
    assert _current(host, 0) == '0\n'


def test_a_type_written_narrows_every_sibling_until_the_card_is_full(host):
    path = host.vf_file(PF, 0, 'current_vgpu_type')
    host.write(path, '1427')
    assert _current(host, 0) == '1427\n'
    assert _creatable(host, 0) == vgpu_vfio_host.HEADER
    assert _creatable(host, 1) == ('ID    : vGPU Name\n'
                                   '1427  : NVIDIA H200X-70C\n')
    host.write(host.vf_file(PF, 1, 'current_vgpu_type'), '1427\n')
    assert [_creatable(host, i) for i in range(8)] == \
        [vgpu_vfio_host.HEADER] * 8
    assert _refused(host, 2, '1427') == errno.ENOSPC
    host.write(path, '0')
    assert _current(host, 0) == '0\n'
    assert _creatable(host, 2) == ('ID    : vGPU Name\n'
                                   '1427  : NVIDIA H200X-70C\n')
    host.write(host.vf_file(PF, 1, 'current_vgpu_type'), '0')
    assert _creatable(host, 2) == ALL_TYPES


def test_refusals_carry_the_kernels_errno_and_change_nothing(host):
    host.write(host.vf_file(PF, 0, 'current_vgpu_type'), '1426')
    before = [(_creatable(host, i), _current(host, i)) for i in range(8)]
    assert _refused(host, 0, '1426') == errno.EPERM     # VF has a type
    assert _refused(host, 1, '0') == errno.EPERM        # none to remove
    assert _refused(host, 1, 'x') == errno.EINVAL       # not a number
    assert _refused(host, 1, '9999') == errno.ENODEV    # not supported
    assert _refused(host, 1, '1420') == errno.EINVAL    # another type
    host.guest_opens('0000:41:00.4')
    assert _refused(host, 0, '0') == errno.EBUSY
    assert [(_creatable(host, i), _current(host, i))
            for i in range(8)] == before
    with pytest.raises(OSError) as e:
        host.write(host.vf_file(PF, 1, 'creatable_vgpu_types'), '1')
    assert e.value.errno == errno.EACCES


def test_nvidia_smi_lists_the_pf_and_its_supported_types(host):
    xml = subprocess.run([host.tool, '-q', '-x'], check=True,
                         capture_output=True, text=True).stdout
    assert '<pci_bus_id>00000000:41:00.0</pci_bus_id>' in xml
    assert '<product_name>NVIDIA H200</product_name>' in xml
    types = subprocess.run([host.tool, 'vgpu', '-s', '-v', '-i',
                            '00000000:41:00.0'], check=True,
                           capture_output=True, text=True).stdout
    assert types.startswith('GPU 00000000:41:00.0\n'
                            '    vGPU Type ID                          '
                            ': 0x58c\n'
                            '        Name                              '
                            ': NVIDIA H200X-4C\n')
    assert '        Max Instances                     : 4\n' in types
    other = subprocess.run([host.tool, 'vgpu', '-s', '-v', '-i',
                            '00000000:81:00.0'], capture_output=True,
                           text=True)
    assert other.returncode == 6
