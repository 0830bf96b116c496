"""A GPU's mode changes only once nothing this host made on it is left
(drivers/nvidia_modes.py): the H200 of tests/fixtures/drivers/
vgpu_vfio_host.py shows MIG mode while a vGPU this host made is on one of
its VFs."""
from cyborg_lite.drivers import fake
from cyborg_lite.drivers import nvidia
from tests.fixtures.drivers import vgpu_vfio_host

PF = vgpu_vfio_host.PFS[0]


def _driver(conf, kernel):
    driver = nvidia.NvidiaDriver(conf)
    driver.name = 'nvidia'
    driver.write_attribute = kernel.write
    return driver


def _names(driver):
    [gpu] = driver.discover()
    return sorted(d.name for d in gpu.deployables)


def _mig_mode(kernel, enabled):
    with open(kernel.xml) as f:
        text = f.read()
    modes = ('<current_mig>Disabled</current_mig>',
             '<current_mig>Enabled</current_mig>')
    fake.atomic_write(kernel.xml, text.replace(*(
        modes if enabled else modes[::-1])))


def test_the_vgpu_mode_is_reported_while_a_vgpu_made_here_is_left(
        conf, tmp_path):
    conf.set_override('vgpu_state_file', str(tmp_path / 'made.json'),
                      group='nvidia_driver')
    kernel = vgpu_vfio_host.VgpuVfioHost(tmp_path / 'h200')
    kernel.configure(conf)
    driver = _driver(conf, kernel)
    types = _names(driver)
    vf = kernel.vfs[PF][2]
    driver.make_instance(PF, 'vgpu_1426', dict(
        domain=vf[:4], bus=vf[5:7], device=vf[8:10], function=vf[11],
        vgpu_type='1426'))
    assert _names(driver) == types

    _mig_mode(kernel, True)
    # As its last scan found it: the type this host made, nothing else.
    assert _names(driver) == ['vgpu_1426']
    # An agent started since has no last scan: nothing of the GPU.
    assert _names(_driver(conf, kernel)) == []

    assert driver.remove_instance(PF, 'vgpu_1426', dict(
        domain=vf[:4], bus=vf[5:7], device=vf[8:10], function=vf[11],
        vgpu_type='1426'))
    # Nothing made here is left: the new mode (MIG, no instance yet).
    assert _names(driver) == []
    _mig_mode(kernel, False)
    assert _names(driver) == types
