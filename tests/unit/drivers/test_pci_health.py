"""Health of any PCI function from its AER counters and link
(sysfs-bus-pci-devices-aer_stats, pci-sysfs.c), and a function gone
from the bus: the pci driver over the fixture host."""
import shutil

import pytest

from cyborg_lite.drivers import pci_health
from cyborg_lite.common import exception
from tests.unit.drivers import health_helpers as hh
from tests.unit.drivers import test_pci as tp
from tests.unit.drivers.test_pci import pci_host  # noqa: F401

PAC, ALVEO, A100 = '0000:5e:00.0', '0000:d8:00.1', '0000:3b:00.0'


@pytest.fixture
def driver(conf, pci_host):
    # The A100 is a display class function: listed, it is a GPU.
    return tp._driver(conf, pci_host, allowed_ids=['0x10de'])


def _health(state):
    return {identity: value[:2] for identity, value in state.items()}


def test_healthy(conf, driver):
    assert _health(hh.scan(hh.monitor(conf), driver, times=3)) == {
        PAC: ('healthy', None), ALVEO: ('healthy', None),
        A100: ('healthy', None)}


def test_degraded(conf, driver, pci_host):
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    hh.overlay(pci_host, 'pci_health', 'degraded')
    assert _health(hh.scan(monitor, driver, times=2)) == {
        PAC: ('degraded', 'link_speed 2.5 GT/s < max 8 GT/s'),
        ALVEO: ('degraded', 'aer_dev_nonfatal grew from 0 to 1'),
        A100: ('healthy', None)}


def test_unhealthy(conf, driver, pci_host):
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    hh.overlay(pci_host, 'pci_health', 'unhealthy')
    assert _health(hh.scan(monitor, driver, times=2)) == {
        PAC: ('unhealthy', 'link_width x0: the link is down'),
        ALVEO: ('unhealthy', 'aer_dev_fatal grew from 0 to 1'),
        A100: ('healthy', None)}


def test_a_gpu_s_idle_link_speed_is_no_fault(conf, driver, pci_host):
    gpu = pci_host / 'sys/devices/pci0000:3a/0000:3a:00.0' / A100
    (gpu / 'current_link_speed').write_text('2.5 GT/s PCIe\n')
    monitor = hh.monitor(conf, to_fault=1)
    assert hh.scan(monitor, driver)[A100][0] == 'healthy'
    (gpu / 'current_link_width').write_text('8\n')
    assert hh.scan(monitor, driver)[A100][:2] == (
        'degraded', 'link_width x8 < max x16')


def test_an_unreadable_link_attribute_keeps_its_own_finding(conf, driver,
                                                           pci_host):
    monitor = hh.monitor(conf, to_fault=1, to_clear=1)
    hh.overlay(pci_host, 'pci_health', 'degraded')
    slow = ('degraded', 'link_speed 2.5 GT/s < max 8 GT/s')
    assert _health(hh.scan(monitor, driver))[PAC] == slow
    pac = pci_host / 'sys/devices/pci0000:5d/0000:5d:00.0' / PAC
    speed = pac / 'current_link_speed'
    speed.unlink()
    speed.mkdir()                 # its read fails (EISDIR)
    # The speed could not be read: not a full-speed reading.
    for _ in range(3):
        assert _health(hh.scan(monitor, driver))[PAC] == slow
    # An unreadable width says nothing of the speed, and the reverse.
    speed.rmdir()
    speed.write_text('2.5 GT/s PCIe\n')
    (pac / 'current_link_width').write_text('garbage\n')
    assert _health(hh.scan(monitor, driver))[PAC] == slow
    speed.write_text('8.0 GT/s PCIe\n')
    assert _health(hh.scan(monitor, driver))[PAC] == ('healthy', None)


def test_a_function_gone_from_the_bus(conf, driver, pci_host):
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    shutil.rmtree(pci_host / 'sys/devices/pci0000:d7')
    assert hh.scan(monitor, driver, times=2)[ALVEO][:2] == (
        'unhealthy', 'pci 0000:d8:00.1 is gone from the PCI bus')


@pytest.mark.parametrize('text', [
    'TOTAL_ERR_FATAL x\n', 'RxErr\nTOTAL_ERR_FATAL 1\n', 'RxErr 0\n',
    'TOTAL_ERR_FATAL 1 2\n'])
def test_a_malformed_aer_file_is_refused(text):
    with pytest.raises(exception.HostDataError):
        pci_health.parse_aer(text, 'TOTAL_ERR_FATAL', 'aer_dev_fatal')


def test_the_kernel_s_aer_format_old_and_new():
    # Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats (4.19
    # names, with spaces) and drivers/pci/pcie/aer.c now (short names,
    # unnamed bits as <array>_bit[N]).
    old = ('Undefined 0\nData Link Protocol 0\nSurprise Down Error 0\n'
           'Poisoned TLP 0\nCompletion Timeout 3\nTOTAL_ERR_FATAL 3\n')
    new = ('Undefined 0\nDLP 0\nSDES 0\nTLP 0\nCmpltTO 2\n'
           'dev_fatal_errs_bit[3] 1\nTOTAL_ERR_FATAL 3\n')
    assert pci_health.parse_aer(old, 'TOTAL_ERR_FATAL', 'x') == 3
    assert pci_health.parse_aer(new, 'TOTAL_ERR_FATAL', 'x') == 3


@pytest.mark.parametrize('text,expected', [
    ('8.0 GT/s PCIe', 8.0), ('16.0 GT/s PCIe', 16.0), ('8 GT/s', 8.0),
    ('2.5 GT/s', 2.5), ('Unknown', None), ('Unknown speed', None),
    ('', None), (None, None)])
def test_link_speeds_as_kernels_print_them(text, expected):
    assert pci_health.parse_speed(text) == expected
