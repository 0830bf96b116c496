"""Health of NVIDIA GPUs from ``nvidia-smi -q -x`` recordings (healthy,
degraded, unhealthy; the T.Limit temperatures of 555+, the recovery
action of 570+) and the GPU's AER counters in sysfs."""
import os
import shutil

import pytest

from cyborg_lite.drivers import fake
from tests.unit.drivers import health_helpers as hh
from tests.unit.drivers import test_nvidia as tn
from tests.unit.drivers.conftest import fixture_path
from tests.unit.drivers.test_nvidia import tool  # noqa: F401

A100 = '0000:3b:00.0'
L4 = '0000:01:00.0'


@pytest.fixture
def gpu_host(conf, tool, tmp_path):
    """An nvidia-smi printing ``current.xml`` (the test swaps it) and a
    sysfs tree with the GPU's function, bound to the nvidia driver."""
    current = tmp_path / 'current.xml'
    sys_root = tmp_path / 'sys'
    function = sys_root / 'devices/pci0000:3a/0000:3a:00.0' / A100
    fake.write_pci_health(str(function))
    (sys_root / 'bus/pci/drivers/nvidia').mkdir(parents=True)
    os.symlink('../../../../bus/pci/drivers/nvidia', function / 'driver')
    (sys_root / 'bus/pci/devices').mkdir(parents=True)
    os.symlink('../../../devices/pci0000:3a/0000:3a:00.0/' + A100,
               sys_root / 'bus/pci/devices' / A100)

    def use(name):
        shutil.copyfile(fixture_path('nvidia', name), current)
    use('health_healthy.xml')
    driver = tn._driver(conf, tool(str(current)), str(sys_root))
    return driver, use, function


def test_healthy(conf, gpu_host):
    driver, _use, _function = gpu_host
    assert hh.scan(hh.monitor(conf), driver, times=3) == {
        A100: ('healthy', None, {'pgpu': ('healthy', None)})}


def test_degraded(conf, gpu_host):
    driver, use, _function = gpu_host
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    use('health_degraded.xml')
    assert hh.scan(monitor, driver, times=2)[A100][:2] == (
        'degraded', 'remapped_rows pending: a GPU reset remaps them; '
        'clocks_event_reasons hw_slowdown, hw_thermal_slowdown active')


def test_unhealthy(conf, gpu_host):
    driver, use, _function = gpu_host
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    use('health_unhealthy.xml')
    assert hh.scan(monitor, driver, times=2)[A100][:2] == (
        'unhealthy', 'temperature 93 °C ≥ shutdown 92 °C; remapped_rows '
        'failure: no spare rows left, the GPU needs service; '
        'ecc_uncorrectable grew from 0 to 2')


def test_uncorrectable_errors_counted_at_start_are_no_fault(conf, gpu_host):
    driver, use, _function = gpu_host
    use('health_unhealthy.xml')
    text = open(fixture_path('nvidia', 'health_unhealthy.xml')).read()
    # Cool, rows left: only the count of 2 remains, seen from the start.
    path = driver.nvidia_smi_path.replace('nvidia-smi', 'current.xml')
    with open(path, 'w') as f:
        f.write(text.replace('93 C', '40 C').replace(
            '<remapped_row_failure>Yes', '<remapped_row_failure>No'))
    monitor = hh.monitor(conf, to_clear=1)
    for _ in range(5):
        assert hh.scan(monitor, driver)[A100][0] == 'healthy'


def test_aer_counters_of_the_gpu_function(conf, gpu_host):
    driver, _use, function = gpu_host
    monitor = hh.monitor(conf, to_fault=1)
    hh.scan(monitor, driver)
    (function / 'aer_dev_fatal').write_text(fake.aer_text(
        fake.AER_UNCORRECTABLE, 'TOTAL_ERR_FATAL', 1))
    # An idle GPU trains its link down: its speed is no fault.
    (function / 'current_link_speed').write_text('2.5 GT/s PCIe\n')
    assert hh.scan(monitor, driver)[A100][:2] == (
        'unhealthy', 'aer_dev_fatal grew from 0 to 1')


def test_a_gpu_nvidia_smi_loses_while_its_driver_holds_it(conf, gpu_host,
                                                        tmp_path):
    driver, use, function = gpu_host
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    (tmp_path / 'current.xml').write_text(
        '<?xml version="1.0" ?>\n<nvidia_smi_log>\n\t<attached_gpus>0'
        '</attached_gpus>\n</nvidia_smi_log>\n')
    assert hh.scan(monitor, driver, times=2)[A100][:2] == (
        'unhealthy', 'pci 0000:3b:00.0 is bound to the nvidia driver but '
        'nvidia-smi no longer lists it')
    # Handed to vfio-pci (passthrough): simply not ours any more.
    os.unlink(function / 'driver')
    assert A100 not in hh.scan(monitor, driver)


@pytest.mark.parametrize('name,expected', [
    ('health_tlimit_555.xml',
     ('degraded', 'temperature T.Limit margin -3 °C ≤ slowdown -2 °C')),
    ('health_recovery_570.xml',
     ('unhealthy', 'gpu_recovery_action Reset')),
])
def test_newer_drivers(conf, tool, name, expected):
    driver = tn._driver(conf, tool(fixture_path('nvidia', name)))
    assert hh.scan(hh.monitor(conf), driver, times=2)[L4][:2] == expected
