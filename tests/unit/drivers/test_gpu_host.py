"""The simulated GPU host (tests/fixtures/drivers/gpu_host.py) read by
the real nvidia driver and the agent's health monitor: what a passthrough,
a hot removal and a recorded fault look like to them."""
import pytest

from cyborg_lite.common import exception
from cyborg_lite.drivers import nvidia
from cyborg_lite.drivers import pci_health
from tests.fixtures.drivers import gpu_host
from tests.unit.drivers import health_helpers as hh

A, B = gpu_host.GPUS


def _driver(conf, tmp_path):
    host = gpu_host.GpuHost(tmp_path / 'gpus')
    host.configure(conf)
    driver = nvidia.NvidiaDriver(conf)
    driver.name = 'nvidia'
    return host, driver


def _listed(driver):
    return [r.identity for r in driver.discover()]


def test_a_gpu_passed_through_is_unlisted_and_stays_on_the_bus(conf,
                                                               tmp_path):
    host, driver = _driver(conf, tmp_path)
    records = driver.discover()
    assert [r.identity for r in records] == [A, B]
    assert [d.name for d in records[1].deployables] == ['pgpu']

    host.bind_vfio(B)

    assert _listed(driver) == [A]
    assert host.driver_of(B) == 'vfio-pci'
    assert pci_health.vanished(host.sys, B) is None
    # Handed over: no finding about it (drivers/nvidia.py _lost).
    [b] = records[1:]
    assert B not in driver.read_health([], [b])
    host.unbind_vfio(B)
    assert _listed(driver) == [A, B]


def test_a_recorded_fault_and_a_reset(conf, tmp_path):
    host, driver = _driver(conf, tmp_path)
    monitor = hh.monitor(conf, to_fault=1, to_clear=1)
    hh.scan(monitor, driver)
    host.set_health(A, 'unhealthy')
    found = hh.scan(monitor, driver)
    assert found[A][0] == 'unhealthy' and found[B][0] == 'healthy'
    host.reset_function(A)
    assert [hh.scan(monitor, driver)[A][0] for _ in range(2)] == [
        'recovering', 'healthy']


def test_a_gpu_removed_from_the_bus_and_added_again(conf, tmp_path):
    host, driver = _driver(conf, tmp_path)
    monitor = hh.monitor(conf, to_fault=1)
    hh.scan(monitor, driver)
    host.hot_remove(A)
    assert _listed(driver) == [B]
    assert hh.scan(monitor, driver)[A][:2] == (
        'unhealthy', 'pci %s is gone from the PCI bus' % A)
    host.hot_add(A)
    assert _listed(driver) == [A, B]


def test_a_reset_is_for_a_gpu_nvidia_holds(conf, tmp_path):
    host, driver = _driver(conf, tmp_path)
    driver.clean(B, 'pgpu')
    host.bind_vfio(B)
    with pytest.raises(exception.CleaningError, match='no NVIDIA GPU'):
        driver.clean(B, 'pgpu')
    assert host.reset_log() == [B]
