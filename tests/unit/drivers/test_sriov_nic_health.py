"""Health of SR-IOV SmartNIC PFs (drivers/sriov_nic.read_health) from the
fixture host's own files, through the agent's health monitor: the PF's
AER counters and link, and sriov_numvfs disagreeing with its VF links."""
import shutil

import pytest

from tests.unit.drivers import health_helpers as hh
from tests.unit.drivers import test_sriov_nic as t
from tests.unit.drivers.test_sriov_nic import nic_host  # noqa: F401

PF0, PF1 = t.PF0, t.PF1


def _health(state):
    return {identity: value[:2] for identity, value in state.items()}


def test_healthy(conf, nic_host):
    driver = t._driver(conf, nic_host)
    assert _health(hh.scan(hh.monitor(conf), driver, times=3)) == {
        PF0: ('healthy', None), PF1: ('healthy', None)}


@pytest.mark.parametrize('overlay, pf0', [
    ('degraded', ('degraded', 'link_width x4 < max x8')),
    ('unhealthy', ('unhealthy', 'aer_dev_fatal grew from 0 to 1')),
])
def test_a_fault_on_one_pf(conf, nic_host, overlay, pf0):
    driver = t._driver(conf, nic_host)
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    hh.overlay(nic_host, 'nic_health', overlay)
    assert _health(hh.scan(monitor, driver))[PF0] == ('healthy', None)
    assert _health(hh.scan(monitor, driver)) == {
        PF0: pf0, PF1: ('healthy', None)}


def test_numvfs_disagreeing_with_the_links(conf, nic_host):
    driver = t._driver(conf, nic_host)
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    (nic_host / t.PF0_DIR / 'sriov_numvfs').write_text('4\n')
    mismatch = 'sriov_numvfs is 4 but 2 virtfn links are there'
    assert _health(hh.scan(monitor, driver, times=2))[PF0] == (
        'degraded', mismatch)
    # With a narrowed link beside it, both are the reason.
    hh.overlay(nic_host, 'nic_health', 'degraded')
    assert _health(hh.scan(monitor, driver, times=2))[PF0] == (
        'degraded', 'link_width x4 < max x8; ' + mismatch)
    (nic_host / t.PF0_DIR / 'sriov_numvfs').write_text('2\n')
    (nic_host / t.PF0_DIR / 'current_link_width').write_text('8\n')
    assert _health(hh.scan(monitor, driver, times=2))[PF0][0] == 'healthy'


def test_a_pf_gone_from_the_bus(conf, nic_host):
    driver = t._driver(conf, nic_host)
    monitor = hh.monitor(conf)
    hh.scan(monitor, driver)
    # Hot-removed: its directory and its bus link go.
    shutil.rmtree(nic_host / t.PF0_DIR)
    (nic_host / 'sys/bus/pci/devices' / PF0).unlink()
    assert _health(hh.scan(monitor, driver, times=2))[PF0] == (
        'unhealthy', 'pci %s is gone from the PCI bus' % PF0)
