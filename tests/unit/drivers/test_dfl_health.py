"""Health of DFL cards from the fixture host's own files (FME error
registers, hwmon, FPGA manager, PCIe AER and link, port errors), through
the agent's health monitor: healthy, degraded and unhealthy, each reason
as a person reads it."""
import os
import shutil

import pytest

from tests.unit.drivers import health_helpers as hh
from tests.unit.drivers import test_fpga_sysfs as t

PAC, D5005 = t.PAC, t.D5005
FME0 = t.PAC_REGION + '/dfl-fme.0'


@pytest.fixture
def driver(conf, dfl_host):
    return t._driver(conf, dfl_host)


def test_the_fixture_host_is_healthy(conf, driver):
    state = hh.scan(hh.monitor(conf), driver, times=3)
    assert state == {
        PAC: ('healthy', None, {'region0': ('healthy', None)}),
        D5005: ('healthy', None, {'region0': ('healthy', None),
                                  'region1': ('healthy', None)})}


def test_degraded(conf, driver, dfl_host):
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    hh.overlay(dfl_host, 'dfl_health', 'degraded')
    assert hh.scan(monitor, driver)[PAC][0] == 'healthy'  # one reading
    state = hh.scan(monitor, driver)
    assert state[PAC][:2] == ('degraded', 'nonfatal_errors 0x2; '
                              'link_width x4 < max x8')
    assert state[D5005][:2] == ('degraded',
                                'temperature 91.5 °C ≥ max 90 °C')
    # Offered still: nothing of a region's own.
    assert state[D5005][2]['region0'] == ('healthy', None)


def test_unhealthy(conf, driver, dfl_host):
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    hh.overlay(dfl_host, 'dfl_health', 'unhealthy')
    state = hh.scan(monitor, driver, times=2)
    assert state[PAC][:2] == ('unhealthy', 'catfatal_errors 0x4')
    assert state[D5005][:2] == (
        'unhealthy', 'temperature 97 °C ≥ crit 95 °C; '
        'aer_dev_fatal grew from 0 to 2')
    # The port in error is its region's own; its sibling is fine.
    assert state[D5005][2] == {
        'region0': ('healthy', None),
        'region1': ('unhealthy', 'port_errors 0x1')}


def test_a_fatal_count_that_stays_is_no_new_fault(conf, driver, dfl_host):
    monitor = hh.monitor(conf, to_clear=1)
    hh.overlay(dfl_host, 'dfl_health', 'unhealthy')
    # Seen first at 2: the count a card came up with is its baseline.
    fme1 = (dfl_host / t.D5005_REGION / 'dfl-fme.1')
    for path in (fme1 / 'hwmon/hwmon2/temp1_input',):
        path.write_text('40000\n')
    for _ in range(20):
        assert hh.scan(monitor, driver)[D5005][0] == 'healthy'


def test_the_manager_and_the_tree(conf, driver, dfl_host):
    manager = t._manager(dfl_host)
    monitor = hh.monitor(conf, to_fault=1)
    (manager / 'state').write_text('write error\n')
    assert hh.scan(monitor, driver)[PAC][:2] == (
        'unhealthy', "fpga_manager state is 'write error'")
    monitor = hh.monitor(conf, to_fault=1, host='other')
    (manager / 'state').write_text('operating\n')
    (manager / 'status').write_text('reconfig CRC error\n')
    assert hh.scan(monitor, driver)[PAC][:2] == (
        'degraded', 'fpga_manager status: reconfig CRC error')


def test_an_unreadable_register_changes_nothing(conf, driver, dfl_host):
    monitor = hh.monitor(conf, to_fault=1, to_clear=1)
    register = dfl_host / FME0 / 'errors/catfatal_errors'
    register.write_text('0x4\n')
    assert hh.scan(monitor, driver)[PAC][0] == 'unhealthy'
    register.write_text('garbage\n')
    for _ in range(3):
        assert hh.scan(monitor, driver)[PAC][0] == 'unhealthy'
    register.write_text('0x0\n')
    assert hh.scan(monitor, driver)[PAC][0] == 'recovering'


@pytest.mark.parametrize('unreadable', ['temp1_input', 'name'])
def test_an_unreadable_sensor_keeps_its_finding(conf, driver, dfl_host,
                                                unreadable):
    monitor = hh.monitor(conf, to_fault=1, to_clear=1)
    hh.overlay(dfl_host, 'dfl_health', 'degraded')
    hot = ('degraded', 'temperature 91.5 °C ≥ max 90 °C')
    assert hh.scan(monitor, driver)[D5005][:2] == hot
    hwmon = dfl_host / t.D5005_REGION / 'dfl-fme.1/hwmon/hwmon2'
    kept = (hwmon / unreadable).read_text()
    if unreadable == 'name':
        (hwmon / 'name').unlink()
        (hwmon / 'name').mkdir()      # its read fails (EISDIR)
    else:
        (hwmon / unreadable).write_text('garbage\n')
    # The temperature could not be read: not a cool reading.
    for _ in range(3):
        assert hh.scan(monitor, driver)[D5005][:2] == hot
    if unreadable == 'name':
        (hwmon / 'name').rmdir()
        (hwmon / 'name').write_text(kept)
    (hwmon / 'temp1_input').write_text('40000\n')
    assert hh.scan(monitor, driver)[D5005][0] == 'healthy'


def test_a_card_gone_from_the_bus_is_reported_unhealthy(conf, driver,
                                                         dfl_host):
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    shutil.rmtree(dfl_host / 'sys/devices/pci0000:ae')
    state = hh.scan(monitor, driver, times=2)
    assert state[D5005][:2] == ('unhealthy',
                                'pci 0000:af:00.0 is gone from the PCI bus')
    assert state[PAC][0] == 'healthy'


def test_a_card_merely_unlisted_is_not_kept(conf, driver, dfl_host):
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    # Its regions are gone (its driver unbound), the function is there.
    os.unlink(dfl_host / 'sys/class/fpga_region/region2')
    assert D5005 not in hh.scan(monitor, driver)
