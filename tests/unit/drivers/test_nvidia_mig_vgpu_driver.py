"""MIG-backed vGPUs through the nvidia driver on the simulated H100 of
tests/fixtures/drivers/mig_vgpu_host.py: a bind's instance beside the
MIG placements Kubernetes' Prepare makes on the same GPU, the GPU kept
in MIG mode, and the note of what binds made across a kill -9."""
import pytest

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.drivers import nvidia
from cyborg_lite.drivers import nvidia_mig_made
from cyborg_lite.drivers import nvidia_mig_vgpu
from cyborg_lite.drivers import sysfs
from tests.fixtures.drivers import mig_vgpu_host

PF = mig_vgpu_host.PF


@pytest.fixture
def host(conf, tmp_path):
    found = mig_vgpu_host.MigVgpuHost(tmp_path / 'h100')
    found.configure(conf)
    return found


@pytest.fixture
def driver(conf, host):
    driver = nvidia.NvidiaDriver(conf)
    driver.name = 'nvidia'
    driver.write_attribute = host.write
    return driver


def _deployables(driver):
    [gpu] = driver.discover()
    return {d.name: d for d in gpu.deployables}


def _vf_info(host, index):
    """The handle of VF ``index`` in the 3g type's deployable."""
    return dict(sysfs.pci_attach_info(host.vfs[index]), vgpu_type='1105')


def _placements(deployables):
    return sorted(nvidia_mig_made.placement_of_name(n) for n in deployables
                  if nvidia_mig_made.placement_of_name(n))


def test_a_binds_instance_takes_its_slices_from_the_placements_and_types(
        driver, host):
    before = _deployables(driver)
    assert before['vgpu_1105'].num_accelerators == 2
    assert (9, 4) in _placements(before)
    made = driver.make_instance(PF, 'vgpu_1105', _vf_info(host, 0))
    assert device_records.pci_address(made) == host.vfs[0]
    assert host.vf_state(host.vfs[0])[0] == 1105
    after = _deployables(driver)
    # Kubernetes is offered nothing over slices 4-7; the instance is
    # not someone else's MIG instance offered as such (mig_<SMs>sm_...).
    assert not [n for n, d in after.items() if 'mig_start' in d.attributes
                and d.attributes['mig_start'] + d.attributes['mig_size'] > 4]
    assert (5, 0) in _placements(after)
    assert not [n for n in after if n.startswith('mig_')]
    assert after['vgpu_1105'].num_accelerators == 2    # 1 more + ours
    assert after['vgpu_1107'].num_accelerators == 0
    # The GPU stays in MIG mode: the vGPU is the MIG mode's.
    assert driver.remove_instance(PF, 'vgpu_1105', _vf_info(host, 0))
    assert host.instances() == []
    assert _placements(_deployables(driver)) == _placements(before)


def test_a_placement_prepare_made_takes_its_slices_from_the_types(
        driver, host):
    [dep] = [d for d in _deployables(driver).values()
             if nvidia_mig_made.placement_of_name(d.name) == (0, 0)]
    driver.make_instance(PF, dep.name, dep.attach_handles[0].attach_info)
    offered = _deployables(driver)
    assert {n: d.num_accelerators for n, d in offered.items()
            if n.startswith('vgpu_')} == {
        'vgpu_%d' % t[0]: 0 for t in mig_vgpu_host.H100XM_TYPES if t[4]
        is not None}
    with pytest.raises(nvidia_mig_vgpu.Refused, match='no room'):
        driver.make_instance(PF, 'vgpu_1105', _vf_info(host, 0))
    assert [s for s, _i in map(host.vf_state, host.vfs) if s] == []


def test_a_bind_killed_after_its_instance_is_finished_by_its_clean(
        conf, driver, host):
    # The agent noted the placement, ran -cgi and died before noting the
    # id: the next agent adopts the instance and the type's clean (its
    # failed bind gave the handle back) destroys it.
    noted = nvidia_mig_vgpu.Noted(conf.nvidia_driver.mig_vgpu_state_file)
    noted.note(host.vfs[3], PF, 1105, '9:4')
    theirs = host.make_other(9, 0)
    ours = host.make_other(9, 4)
    deployables = _deployables(driver)
    assert deployables['vgpu_1105'].num_accelerators == 0
    assert noted.read()[host.vfs[3]]['gi'] == ours
    driver.clean(PF, 'vgpu_1105')
    assert [g for g, _p, _s in host.instances()] == [theirs]
    assert noted.read() == {}


def test_a_retried_bind_finishes_what_its_killed_try_made(
        conf, driver, host):
    noted = nvidia_mig_vgpu.Noted(conf.nvidia_driver.mig_vgpu_state_file)
    noted.note(host.vfs[2], PF, 1105, '9:4')
    gi = host.make_other(9, 4)
    made = driver.make_instance(PF, 'vgpu_1105', _vf_info(host, 2))
    assert device_records.pci_address(made) == host.vfs[2]
    assert host.vf_state(host.vfs[2]) == (1105, gi)
    assert [g for g, _p, _s in host.instances()] == [gi]
    # Asked again (a retried call), it answers the same and makes nothing.
    assert driver.make_instance(PF, 'vgpu_1105', _vf_info(host, 2)) == made
    assert len(host.instances()) == 1


def test_a_held_mig_backed_vgpu_keeps_the_gpu_in_mig_mode(driver, host):
    driver.make_instance(PF, 'vgpu_1105', _vf_info(host, 0))
    assert 'vgpu_1105' in _deployables(driver)
    # MIG turned off under it (the hardware would refuse while VFs are
    # on): nothing of the time-sliced mode is offered beside the held
    # vGPU's type, as its last scan found it.
    host.mig.set_mig_mode(False)
    assert list(_deployables(driver)) == ['vgpu_1105']


def test_an_instance_made_whose_output_did_not_parse_stays_ours(
        conf, driver, host):
    # -cgi made the instance but printed what the driver cannot read:
    # the bind fails, and the note (placement, no id) is kept, so the
    # next scan adopts the instance and the type's clean destroys it.
    run = driver.run_tool

    def garbled(name, argv, timeout):
        output = run(name, argv, timeout)
        return b'garbled\n' if '-cgi' in argv else output
    driver.run_tool = garbled
    with pytest.raises(exception.DriverError,
                       match='Successfully created GPU instance'):
        driver.make_instance(PF, 'vgpu_1105', _vf_info(host, 1))
    driver.run_tool = run
    noted = nvidia_mig_vgpu.Noted(conf.nvidia_driver.mig_vgpu_state_file)
    assert noted.read() == {host.vfs[1]: {
        'gpu': PF, 'type': 1105, 'placement': '9:4', 'gi': None}}
    [(gi, _p, _s)] = host.instances()
    assert _deployables(driver)['vgpu_1105'].num_accelerators == 1
    assert noted.read()[host.vfs[1]]['gi'] == gi
    driver.clean(PF, 'vgpu_1105')
    assert host.instances() == [] and noted.read() == {}
