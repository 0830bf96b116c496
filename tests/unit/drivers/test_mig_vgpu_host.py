"""The simulated H100 host of MIG-backed vGPUs keeps the rules its module
states: real runs of its nvidia-smi, real reads of its sysfs files."""
import errno
import os
import subprocess

import pytest

from cyborg_lite.drivers import nvidia_vgpu_vfio
from cyborg_lite.drivers import sysfs
from tests.fixtures.drivers import mig_vgpu_host

PF = mig_vgpu_host.PF
HEADER = 'ID    : vGPU Name\n'
ONE_G = HEADER + '1101  : NVIDIA H100XM-1-10C\n'


@pytest.fixture
def host(tmp_path):
    return mig_vgpu_host.MigVgpuHost(tmp_path / 'h100')


def _smi(host, *args):
    return subprocess.run([host.tool] + list(args), capture_output=True,
                          text=True, timeout=30)


def _mig(host, *args):
    return _smi(host, 'mig', '-i', PF, *args)


def _path(host, vf, name):
    return os.path.join(host.sys, 'bus', 'pci', 'devices', vf, 'nvidia',
                        name)


def _read(host, vf, name):
    return sysfs.read_text(_path(host, vf, name))


def _creatable(host, vf):
    with open(_path(host, vf, 'creatable_vgpu_types')) as f:
        return f.read()


def _write(host, vf, text):
    host.write(_path(host, vf, 'current_vgpu_type'), text)


def _refused(host, vf, text):
    with pytest.raises(OSError) as e:
        _write(host, vf, text)
    return e.value.errno


def _snapshot(host):
    """Everything a refusal must leave as it was."""
    return ([(host.vf_state(vf), _creatable(host, vf),
              _read(host, vf, 'current_vgpu_type'),
              _read(host, vf, 'gpu_instance_id')) for vf in host.vfs],
            host.instances(), host.log())


def test_the_tree_is_an_h100_sriov_pf_with_32_vfs(host):
    pf = os.path.join(host.sys, 'bus', 'pci', 'devices', PF)
    assert sysfs.read_text(os.path.join(pf, 'device')) == '0x2330'
    assert sysfs.read_text(os.path.join(pf, 'sriov_totalvfs')) == '32'
    assert len(host.vfs) == 32
    assert os.readlink(os.path.join(pf, 'virtfn0')) == '../0000:61:00.4'
    assert nvidia_vgpu_vfio.is_vfio_pf(host.sys, PF)
    vfs = nvidia_vgpu_vfio.read_vfs(host.sys, PF)
    assert [v.address for v in vfs] == host.vfs
    assert {(v.current, tuple(v.creatable)) for v in vfs} == {(0, ())}
    xml = _smi(host, '-q', '-x').stdout
    assert '<current_mig>Enabled</current_mig>' in xml
    assert '<product_name>NVIDIA H100 80GB HBM3</product_name>' in xml
    assert '<pci_device_id>233010DE</pci_device_id>' in xml


def test_without_gpu_instances_only_the_header_and_a_write_fails_eio(host):
    vf = host.vfs[0]
    assert [_creatable(host, v) for v in host.vfs] == [HEADER] * 32
    assert _read(host, vf, 'gpu_instance_id') is None     # ENXIO
    assert _refused(host, vf, '1101') == errno.EIO
    assert host.vf_state(vf) == (0, None)


def test_free_vfs_list_the_types_of_the_profiles_with_a_free_gi(host):
    assert _mig(host, '-cgi', '19:0', '-C').returncode == 0
    assert [_creatable(host, v) for v in host.vfs] == [ONE_G] * 32
    assert _mig(host, '-cgi', '9:4', '-C').returncode == 0
    assert _creatable(host, host.vfs[5]) == (
        ONE_G + '1105  : NVIDIA H100XM-3-40C\n')
    # A GI of another profile does not serve the type.
    assert _refused(host, host.vfs[0], '1103') == errno.EIO


def test_a_vgpu_lands_on_a_gi_the_driver_picks_and_takes_it(host):
    host.make_other(19, 0)
    [(gi, _p, _s)] = host.instances()
    vf, other = host.vfs[0], host.vfs[1]
    _write(host, vf, '1101')
    assert _read(host, vf, 'current_vgpu_type') == '1101'
    assert _read(host, vf, 'gpu_instance_id') == str(gi)
    assert host.vf_state(vf) == (1101, gi)
    # The only 1g GI is taken: no VF lists its type any more.
    assert [_creatable(host, v) for v in host.vfs] == [HEADER] * 32
    assert _refused(host, other, '1101') == errno.EIO


def test_a_gi_with_a_vgpu_refuses_destruction_and_nothing_changes(host):
    gi = host.make_other(19, 0)
    _write(host, host.vfs[0], '1101')
    before = _snapshot(host)
    for flag in ('-dgi', '-dci'):
        run = _mig(host, flag, '-gi', str(gi))
        assert run.returncode == 19
        assert run.stdout == ('Unable to destroy GPU instance ID %d from '
                              'GPU  0: In use by another client\n' % gi)
    assert _snapshot(host) == before
    assert host.mig.compute_instances(PF, gi) == [0]


def test_removing_the_vgpu_frees_its_gi_which_then_goes(host):
    gi = host.make_other(19, 0)
    vf = host.vfs[3]
    _write(host, vf, '1101')
    _write(host, vf, '0')
    assert host.vf_state(vf) == (0, None)
    assert _read(host, vf, 'current_vgpu_type') == '0'
    assert _read(host, vf, 'gpu_instance_id') is None
    assert [_creatable(host, v) for v in host.vfs] == [ONE_G] * 32
    assert _mig(host, '-dci', '-gi', str(gi)).returncode == 0
    assert _mig(host, '-dgi', '-gi', str(gi)).returncode == 0
    assert host.instances() == []
    assert [_creatable(host, v) for v in host.vfs] == [HEADER] * 32


def test_the_free_gi_with_the_lowest_id_is_chosen(host):
    first = host.make_other(19, 5)
    second = host.make_other(19, 0)
    assert first < second
    _write(host, host.vfs[0], '1101')
    assert host.vf_state(host.vfs[0]) == (1101, first)
    # A 1g GI is still free, but a VF that holds a vGPU lists nothing.
    assert _creatable(host, host.vfs[0]) == HEADER
    assert _creatable(host, host.vfs[1]) == ONE_G
    _write(host, host.vfs[1], '1101')
    assert host.vf_state(host.vfs[1]) == (1101, second)


def test_refusals_carry_the_kernels_errno_and_change_nothing(host):
    host.make_other(19, 0)
    host.make_other(9, 4)
    vf, held = host.vfs[0], host.vfs[1]
    _write(host, held, '1105')
    before = _snapshot(host)
    assert _refused(host, vf, '1110') == errno.EINVAL   # time-sliced
    assert _refused(host, vf, '1111') == errno.EINVAL
    assert _refused(host, vf, '4242') == errno.ENODEV
    assert _refused(host, vf, 'x1101') == errno.EINVAL
    assert _refused(host, vf, '0') == errno.EPERM        # has no type
    assert _refused(host, held, '1101') == errno.EPERM   # has one
    host.guest_opens(held)
    assert _refused(host, held, '0') == errno.EBUSY
    assert _snapshot(host) == before
    host.guest_closes(held)
    _write(host, held, '0')
    assert host.vf_state(held) == (0, None)


def test_other_files_are_read_only(host):
    with pytest.raises(OSError) as e:
        host.write(_path(host, host.vfs[0], 'creatable_vgpu_types'), '1')
    assert e.value.errno == errno.EACCES


def test_vgpu_s_v_parses_with_the_drivers_parser(host):
    run = _smi(host, 'vgpu', '-s', '-v', '-i', PF)
    assert run.returncode == 0
    assert nvidia_vgpu_vfio.parse_supported(run.stdout, 'nvidia-smi') == {
        t[0]: (t[1], t[2]) for t in mig_vgpu_host.H100XM_TYPES}
    blocks = run.stdout.split('vGPU Type ID')[1:]
    assert 'GPU Instance Profile ID           : 19\n' in blocks[0]
    assert 'Max Instances Per GI              : 1\n' in blocks[0]
    assert 'GPU Instance Profile ID           : N/A\n' in blocks[-1]
    assert 'Max Instances Per GI              : N/A\n' in blocks[-1]


def test_the_gpu_instances_are_the_h100s(host):
    assert _mig(host, '-cgi', '15:1', '-C').returncode == 2   # 1g.20gb
    assert _mig(host, '-cgi', '20:0', '-C').returncode == 0
    # One 1g.10gb+me per GPU, as the recorded table's 1/1 says.
    assert _mig(host, '-cgi', '20:1', '-C').returncode == 2
    run = _mig(host, '-cgi', '15:2', '-C')
    assert run.stdout.splitlines()[0] == (
        'Successfully created GPU instance ID  2 on GPU  0 using profile '
        'MIG 1g.20gb (ID 15)')
    assert host.instances() == [(1, 20, 0), (2, 15, 2)]
    assert '<multiprocessor_count>26</multiprocessor_count>' in \
        _smi(host, '-q', '-x').stdout
