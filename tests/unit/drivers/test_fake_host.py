"""The simulated host's actions (drivers/fake_host.py) change the fake
driver's tree as the kernel changes sysfs, and the real DFL reader and
the agent's health monitor see what they would on a real host."""
import errno
import os

import pytest

from cyborg_lite.common import exception
from cyborg_lite.drivers import dfl
from cyborg_lite.drivers import fake
from cyborg_lite.drivers import fake_host
from cyborg_lite.drivers import pci_health
from cyborg_lite.drivers import sysfs
from tests.unit.drivers import health_helpers as hh
from tests.unit.drivers import test_fake as tf

CARD0 = tf.CARD0
VF0, VF1 = '0000:5e:00.1', '0000:5e:00.2'


@pytest.fixture
def host_conf(conf, tmp_path):
    conf.set_override('state_dir', str(tmp_path / 'fake'),
                      group='fake_driver')
    conf.set_override('program_delay', 0, group='fake_driver')
    conf.set_override('num_cards', 1, group='fake_driver')
    return conf


def _host(conf, sriov):
    driver = tf._driver(conf, sriov=sriov)
    driver.discover()
    return driver, fake_host.FakeHost(conf.fake_driver.state_dir)


def _regions(driver):
    [card] = driver.discover()
    return {d.name: d for d in card.deployables}


def _memory(driver, region, text=None):
    """The simulated local memory of region N (port N of card 0), read
    where the port is or not."""
    path = os.path.join(driver.tree.root, 'local_memory',
                        'dfl-port.%s' % region[len('region'):])
    if text is not None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(text)
    with open(path) as f:
        return f.read()


def test_a_vf_bound_to_vfio_leaves_the_dfl_tree_but_not_the_bus(
        host_conf, tmp_path):
    driver, host = _host(host_conf, sriov=True)
    image = tmp_path / 'afu.bin'
    image.write_bytes(b'tenant image')
    driver.program(CARD0, 'region0', str(image))
    loaded = _regions(driver)['region0'].function_id
    _memory(driver, 'region0', 'tenant data')
    assert host.driver_of(VF0) == 'dfl-pci'

    host.bind_vfio(VF0)

    assert list(_regions(driver)) == ['region1']
    assert host.driver_of(VF0) == 'vfio-pci'
    vf = host.function_dir(VF0)
    assert open(os.path.join(vf, 'driver_override')).read() == 'vfio-pci\n'
    assert os.path.islink(host.sys + '/bus/pci/drivers/vfio-pci/' + VF0)
    assert not os.path.lexists(host.sys + '/bus/pci/drivers/dfl-pci/' + VF0)
    assert not os.path.exists(os.path.join(host.dev, 'dfl-port.0'))
    assert not os.path.exists(host.port_dir(0, 0))
    # On the bus still: not a device that fell off it.
    assert pci_health.vanished(host.sys, VF0) is None
    with pytest.raises(exception.CleaningError, match='no region region0'):
        driver.clean(CARD0, 'region0')
    with pytest.raises(fake_host.ActionRefused, match='already'):
        host.bind_vfio(VF0)

    host.unbind_vfio(VF0)

    regions = _regions(driver)
    assert list(regions) == ['region0', 'region1']
    assert regions['region0'].function_id == loaded
    assert regions['region0'].attach_handles[0].attach_info['function'] == \
        '1'
    assert host.driver_of(VF0) == 'dfl-pci'
    assert open(os.path.join(vf, 'driver_override')).read() == '(null)\n'
    assert os.path.exists(os.path.join(host.dev, 'dfl-port.0'))
    # The guest's data is still there: the wipe is Cyborg's to do.
    assert _memory(driver, 'region0') == 'tenant data'
    with pytest.raises(fake_host.ActionRefused, match='not bound'):
        host.unbind_vfio(VF0)


def test_a_pf_with_vfs_is_not_handed_over(host_conf):
    _driver, host = _host(host_conf, sriov=True)
    with pytest.raises(fake_host.ActionRefused, match='2 VFs enabled'):
        host.bind_vfio(CARD0)
    assert host.driver_of(CARD0) == 'dfl-pci'


def test_a_pf_without_vfs_takes_its_whole_card(host_conf):
    driver, host = _host(host_conf, sriov=False)
    host.bind_vfio(CARD0)
    assert driver.discover() == []
    assert pci_health.vanished(host.sys, CARD0) is None
    assert host.driver_of(CARD0) == 'vfio-pci'
    host.unbind_vfio(CARD0)
    assert list(_regions(driver)) == ['region0', 'region1']


def test_the_state_outlives_a_restart_of_the_driver(host_conf):
    driver, host = _host(host_conf, sriov=True)
    fme_file = host.fme_dir(0) + '/errors/nonfatal_errors'
    host.bind_vfio(VF0)
    host.sensor_unreadable(fme_file, vanish=True)
    # A new agent (a new driver over the same tree) writes no health file
    # into what is handed over or gone.
    again = tf._driver(host_conf, sriov=True)
    assert list(_regions(again)) == ['region1']
    assert not os.path.lexists(fme_file)
    vf_regions = os.path.join(host.function_dir(VF0), 'fpga_region')
    assert not os.path.exists(vf_regions)
    host.unbind_vfio(VF0)
    assert list(_regions(again)) == ['region0', 'region1']


def test_a_reset_empties_the_memory_behind_the_function_only(host_conf):
    driver, host = _host(host_conf, sriov=True)
    loaded = _regions(driver)['region0'].function_id
    for region in ('region0', 'region1'):
        _memory(driver, region, 'data of ' + region)
    aer = os.path.join(host.function_dir(VF0), 'aer_dev_fatal')
    with open(aer, 'w') as f:
        f.write(fake.aer_text(fake.AER_UNCORRECTABLE, 'TOTAL_ERR_FATAL', 2))

    host.reset_function(VF0)

    assert _memory(driver, 'region0') == ''
    assert _memory(driver, 'region1') == 'data of region1'
    assert _regions(driver)['region0'].function_id == loaded
    assert 'TOTAL_ERR_FATAL 2' in open(aer).read()
    # Handed to vfio-pci, it is reset too.
    _memory(driver, 'region1', 'data of region1')
    host.bind_vfio(VF1)
    host.reset_function(VF1)
    assert _memory(driver, 'region1') == ''


def test_a_pf_reset_resets_the_ports_it_holds(host_conf):
    driver, host = _host(host_conf, sriov=False)
    for region in ('region0', 'region1'):
        _memory(driver, region, 'data')
    host.reset_function(CARD0)
    assert _memory(driver, 'region0') == _memory(driver, 'region1') == ''


@pytest.mark.parametrize('vanish', [False, True])
def test_an_unreadable_sensor_keeps_its_last_finding(host_conf, vanish):
    driver, host = _host(host_conf, sriov=False)
    register = host.fme_dir(0) + '/errors/catfatal_errors'
    monitor = hh.monitor(host_conf, to_fault=2, to_clear=2)
    with open(register, 'w') as f:
        f.write('0x4\n')
    assert hh.scan(monitor, driver, times=2)[CARD0][:2] == (
        'unhealthy', 'catfatal_errors 0x4')

    host.sensor_unreadable(register, vanish=vanish)

    if not vanish:
        with pytest.raises(exception.HostDataError) as raised:
            sysfs.read_text(register)
        assert raised.value.kwargs['errno'] == errno.EIO
    else:
        assert not os.path.lexists(register)
    [card] = driver.discover()
    assert any(r.signal == 'catfatal_errors' for r in dfl.card_signals(
        driver._cards[0], host.sys).device)
    for _ in range(5):
        assert hh.scan(monitor, driver)[CARD0][0] == 'unhealthy'

    host.sensor_readable(register, text='0x0\n')
    assert open(register).read() == '0x0\n'
    states = [hh.scan(monitor, driver)[CARD0][0] for _ in range(4)]
    assert states == ['unhealthy', 'recovering', 'recovering', 'healthy']


def test_a_sensor_reads_again_what_it_held(host_conf):
    _driver, host = _host(host_conf, sriov=False)
    temp = host.fme_dir(0) + '/hwmon/hwmon0/temp1_input'
    host.sensor_unreadable(temp)
    host.sensor_unreadable(temp, vanish=True)
    host.sensor_readable(temp)
    assert open(temp).read() == '40000\n'
    with pytest.raises(fake_host.ActionRefused, match='not made unreadable'):
        host.sensor_readable(temp)
    with pytest.raises(fake_host.ActionRefused, match='not in the tree'):
        host.sensor_unreadable('/etc/hostname')


def test_an_unreadable_temperature_keeps_its_finding(host_conf):
    driver, host = _host(host_conf, sriov=False)
    temp = host.fme_dir(0) + '/hwmon/hwmon0/temp1_input'
    monitor = hh.monitor(host_conf, to_fault=1, to_clear=1)
    with open(temp, 'w') as f:
        f.write('101000\n')
    assert hh.scan(monitor, driver)[CARD0][0] == 'unhealthy'
    host.sensor_unreadable(temp, vanish=True)
    assert [hh.scan(monitor, driver)[CARD0][0] for _ in range(3)] == \
        ['unhealthy'] * 3


def test_a_card_removed_from_the_bus_and_added_again(host_conf):
    driver, host = _host(host_conf, sriov=True)
    pf_aer = os.path.join(host.function_dir(CARD0), 'aer_dev_nonfatal')
    with open(pf_aer, 'w') as f:
        f.write(fake.aer_text(fake.AER_UNCORRECTABLE,
                              'TOTAL_ERR_NONFATAL', 7))
    host.bind_vfio(VF1)

    host.hot_remove(CARD0)

    assert driver.discover() == []
    for address in (CARD0, VF0, VF1):
        assert pci_health.vanished(host.sys, address) is not None
    assert not os.listdir(os.path.join(host.dev))
    assert host.removed() == [CARD0]
    with pytest.raises(fake_host.ActionRefused, match='no PCI function'):
        host.bind_vfio(VF0)

    host.hot_add()

    assert host.removed() == []
    # As it left: VF1 still with vfio-pci, its region still away.
    assert list(_regions(driver)) == ['region0']
    assert host.driver_of(VF1) == 'vfio-pci'
    # A new pci_dev: its AER counters start again.
    assert 'TOTAL_ERR_NONFATAL 0' in open(os.path.join(
        host.function_dir(CARD0), 'aer_dev_nonfatal')).read()
    host.unbind_vfio(VF1)
    assert list(_regions(driver)) == ['region0', 'region1']


def test_a_vf_alone_is_not_removed(host_conf):
    _driver, host = _host(host_conf, sriov=True)
    with pytest.raises(fake_host.ActionRefused, match='is a VF'):
        host.hot_remove(VF0)
    with pytest.raises(fake_host.ActionRefused, match='not removed'):
        host.hot_add(CARD0)


def test_the_command_line(host_conf, capsys):
    driver, host = _host(host_conf, sriov=True)
    state = ['--state-dir', host.root]
    assert fake_host.main(state + ['bind-vfio', VF0]) == 0
    assert list(_regions(driver)) == ['region1']
    assert fake_host.main(state + ['bind-vfio', CARD0]) == 1
    assert 'VFs enabled' in capsys.readouterr().err
    assert fake_host.main(state + ['unbind-vfio', VF0]) == 0
    path = 'class/fpga_region/region0/dfl-fme.0/errors/catfatal_errors'
    assert fake_host.main(state + ['unreadable', path]) == 0
    assert os.path.islink(os.path.join(host.sys, path))
    assert fake_host.main(state + ['readable', path, '--text', '0x4']) == 0
    assert open(os.path.join(host.sys, path)).read() == '0x4\n'
    assert fake_host.main(state + ['remove', CARD0]) == 0
    assert driver.discover() == []
    assert fake_host.main(state + ['rescan']) == 0
    assert len(driver.discover()) == 1
