"""Loading drivers by name through stevedore entry points."""
import logging

from oslo_config import cfg

from cyborg_lite.drivers import fake
from cyborg_lite.drivers import loader
from cyborg_lite.drivers import pci


def test_enabled_drivers_load_by_name_with_their_name_set(conf):
    drivers = loader.load_drivers(conf, ['pci', 'fake'])
    assert list(drivers) == ['pci', 'fake']
    assert isinstance(drivers['fake'], fake.FakeDriver)
    assert isinstance(drivers['pci'], pci.PciDriver)
    assert drivers['fake'].name == 'fake'
    assert drivers['fake'].programmable and not drivers['pci'].programmable


def test_every_shipped_driver_is_installed(conf):
    names = ['fake', 'fpga_sysfs', 'pci', 'nvidia', 'xilinx']
    assert sorted(loader.load_drivers(conf, names)) == sorted(names)


def test_unknown_driver_is_logged_and_skipped(conf, caplog):
    with caplog.at_level(logging.ERROR):
        drivers = loader.load_drivers(conf, ['fake', 'no_such_driver'])
    assert list(drivers) == ['fake']
    assert 'no_such_driver' in caplog.text


def test_driver_failing_to_load_is_logged_and_skipped(caplog):
    # A ConfigOpts without the driver groups makes every __init__ fail.
    with caplog.at_level(logging.ERROR):
        drivers = loader.load_drivers(cfg.ConfigOpts(), ['fake', 'pci'])
    assert drivers == {}
    assert 'Driver fake failed to load' in caplog.text
    assert 'Driver pci failed to load' in caplog.text


def test_no_names_loads_nothing(conf):
    assert loader.load_drivers(conf, []) == {}
