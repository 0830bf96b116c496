"""The device nodes the nvidia driver gives a container
(drivers/nvidia_device_nodes.py), read from the simulated hosts'
/dev and /proc trees (tests/fixtures/drivers/gpu_host.py, mig_host.py)
and their nvidia-smi: a whole GPU's, a MIG instance's capability nodes,
and an error for anything the host does not have."""
import os

import pytest

from cyborg_lite.common import exception
from cyborg_lite.drivers import nvidia
from cyborg_lite.drivers import nvidia_mig_made
from tests.fixtures.drivers import gpu_host
from tests.fixtures.drivers import mig_host

GPU_A, GPU_B = gpu_host.GPUS        # minors 0 and 1 (bus order)


def _driver(conf):
    driver = nvidia.NvidiaDriver(conf)
    driver.name = 'nvidia'
    driver.discover()
    return driver


def _expected(host, names):
    return [('/dev/' + n, os.path.join(host.dev, n)) for n in names]


def _placement(driver, gpu, profile_id, start):
    [record] = [r for r in driver.discover() if r.identity == gpu]
    [dep] = [d for d in record.deployables
             if d.attributes.get(nvidia_mig_made.PROFILE_ID) == profile_id
             and d.attributes.get(nvidia_mig_made.START) == start]
    return dep.name, dep.attach_handles[0].attach_info


def test_a_whole_gpu_gets_the_control_nodes_and_its_own_minor(conf,
                                                                tmp_path):
    host = gpu_host.GpuHost(tmp_path / 'gpus')
    host.configure(conf)
    driver = _driver(conf)
    control = ['nvidiactl', 'nvidia-uvm', 'nvidia-uvm-tools']
    assert driver.device_nodes(GPU_A, 'pgpu') == _expected(
        host, control + ['nvidia0'])
    assert driver.device_nodes(GPU_B, 'pgpu') == _expected(
        host, control + ['nvidia1'])


@pytest.mark.parametrize('missing', ['nvidia-uvm', 'nvidia1'])
def test_a_node_the_host_lacks_fails_with_its_path(conf, tmp_path, missing):
    host = gpu_host.GpuHost(tmp_path / 'gpus')
    host.configure(conf)
    host.remove_node(missing)
    with pytest.raises(exception.DriverError, match=os.path.join(
            host.dev, missing)):
        _driver(conf).device_nodes(GPU_B, 'pgpu')


def test_a_host_without_uvm_tools_gives_the_rest(conf, tmp_path):
    host = gpu_host.GpuHost(tmp_path / 'gpus')
    host.configure(conf)
    host.remove_node('nvidia-uvm-tools')
    assert _driver(conf).device_nodes(GPU_A, 'pgpu') == _expected(
        host, ['nvidiactl', 'nvidia-uvm', 'nvidia0'])


def test_an_unknown_gpu_or_deployable_is_a_driver_error(conf, tmp_path):
    gpu_host.GpuHost(tmp_path / 'gpus').configure(conf)
    driver = _driver(conf)
    with pytest.raises(exception.DriverError, match='no NVIDIA GPU '
                       '0000:5e:00.0'):
        driver.device_nodes('0000:5e:00.0', 'pgpu')
    with pytest.raises(exception.DriverError, match='no deployable mdev_x'):
        driver.device_nodes(GPU_A, 'mdev_x')


def test_a_gpu_no_record_has_yet_is_looked_for_once(conf, tmp_path):
    host = gpu_host.GpuHost(tmp_path / 'gpus')
    host.configure(conf)
    driver = nvidia.NvidiaDriver(conf)
    driver.name = 'nvidia'          # no scan yet: device_nodes makes one
    assert driver.device_nodes(GPU_B, 'pgpu')[-1] == (
        '/dev/nvidia1', os.path.join(host.dev, 'nvidia1'))


@pytest.fixture
def mig(conf, tmp_path):
    host = mig_host.MigHost(tmp_path / 'mig')
    host.configure(conf)
    return host


def test_a_placement_made_at_prepare_gets_its_instance_caps(conf, mig):
    driver = _driver(conf)
    name, info = _placement(driver, GPU_B, 9, 4)
    with pytest.raises(exception.DriverError, match='no MIG instance'):
        driver.device_nodes(GPU_B, name)        # not made yet
    mig.make_other(GPU_B, 19, 0)                # GI 1, someone else's
    gi = int(driver.make_instance(GPU_B, name, info)['mig_gpu_instance'])
    assert gi == 2
    caps = ['nvidia-caps/nvidia-cap%d' % mig_host.cap_minor(1, gi),
            'nvidia-caps/nvidia-cap%d' % mig_host.cap_minor(1, gi, 0)]
    assert caps == ['nvidia-caps/nvidia-cap156',
                    'nvidia-caps/nvidia-cap157']
    assert driver.device_nodes(GPU_B, name) == _expected(
        mig, ['nvidiactl', 'nvidia-uvm', 'nvidia-uvm-tools', 'nvidia1'] +
        caps)

    # Destroyed: its /proc entries go (its /dev nodes stay, as real ones
    # do), so it has no nodes to give.
    assert driver.remove_instance(GPU_B, name, info)
    with pytest.raises(exception.DriverError, match='no MIG instance'):
        driver.device_nodes(GPU_B, name)


def test_a_cap_node_the_host_lacks_fails(conf, mig):
    driver = _driver(conf)
    name, info = _placement(driver, GPU_A, 19, 6)
    gi = int(driver.make_instance(GPU_A, name, info)['mig_gpu_instance'])
    cap = 'nvidia-cap%d' % mig_host.cap_minor(0, gi, 0)
    os.unlink(os.path.join(mig.dev, 'nvidia-caps', cap))
    with pytest.raises(exception.DriverError, match=cap):
        driver.device_nodes(GPU_A, name)


def test_instances_someone_made_get_each_instance_s_caps(conf, mig):
    conf.set_override('mig_on_demand', False, group='nvidia_driver')
    one = mig.make_other(GPU_A, 19, 0)
    two = mig.make_other(GPU_A, 19, 1)
    big = mig.make_other(GPU_A, 9, 4)
    driver = _driver(conf)
    [record] = [r for r in driver.discover() if r.identity == GPU_A]
    names = {d.attributes['gpu_instance_ids']: d.name
             for d in record.deployables}
    small = driver.device_nodes(GPU_A, names['%d,%d' % (one, two)])
    assert [p for p, _h in small[4:]] == [
        '/dev/nvidia-caps/nvidia-cap%d' % m for m in (
            mig_host.cap_minor(0, one), mig_host.cap_minor(0, one, 0),
            mig_host.cap_minor(0, two), mig_host.cap_minor(0, two, 0))]
    assert [p for p, _h in driver.device_nodes(GPU_A, names[str(big)])] == [
        '/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools',
        '/dev/nvidia0', '/dev/nvidia-caps/nvidia-cap%d'
        % mig_host.cap_minor(0, big),
        '/dev/nvidia-caps/nvidia-cap%d' % mig_host.cap_minor(0, big, 0)]


def test_the_proc_files_agree_with_mig_minors(mig):
    """The simulated kernel's two views of a capability's minor."""
    gi = mig.make_other(GPU_B, 14, 2)
    with open(os.path.join(mig.proc, 'driver', 'nvidia-caps',
                           'mig-minors')) as f:
        table = dict(line.split(' ') for line in f.read().splitlines())
    assert (table['config'], table['monitor']) == ('1', '2')
    base = os.path.join(mig.proc, 'driver', 'nvidia', 'capabilities',
                        'gpu1', 'mig', 'gi%d' % gi)
    for cap, path in (('gpu1/gi%d/access' % gi, 'access'),
                      ('gpu1/gi%d/ci0/access' % gi, 'ci0/access')):
        with open(os.path.join(base, path)) as f:
            assert f.read() == ('DeviceFileMinor: %s\nDeviceFileMode: 292\n'
                                'DeviceFileModify: 1\n' % table[cap])
