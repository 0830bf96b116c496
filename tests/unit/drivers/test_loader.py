"""Loading drivers by name through stevedore entry points."""
import logging

import pytest
from oslo_config import cfg
from stevedore import extension

from cyborg_lite.drivers import base
from cyborg_lite.drivers import fake
from cyborg_lite.drivers import loader
from cyborg_lite.drivers import pci


def test_enabled_drivers_load_by_name_with_their_name_set(conf):
    drivers = loader.load_drivers(conf, ['pci', 'fake'])
    assert list(drivers) == ['pci', 'fake']
    assert isinstance(drivers['fake'], fake.FakeDriver)
    assert isinstance(drivers['pci'], pci.PciDriver)
    assert drivers['fake'].name == 'fake'
    assert isinstance(drivers['fake'], base.ProgrammingInterface)
    assert not isinstance(drivers['pci'], base.ProgrammingInterface)


def test_every_shipped_driver_is_installed(conf):
    names = ['fake', 'fpga_sysfs', 'pci', 'nvidia', 'xilinx', 'sriov_nic']
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


class _NotADriver:
    def __init__(self, conf):
        self.conf = conf

    def discover(self):
        return []


class _NoInterface(base.Driver):
    """A Driver that implements none of the interfaces."""


@pytest.mark.parametrize('plugin', [_NotADriver, _NoInterface])
def test_object_that_is_no_driver_is_logged_and_skipped(conf, caplog,
                                                        monkeypatch,
                                                        plugin):
    # A stevedore extension as the entry point would give it.
    fake_ext = extension.Extension('impostor', None, plugin, plugin(conf))
    real_ext = extension.Extension('fake', None, fake.FakeDriver,
                                   fake.FakeDriver(conf))
    manager = extension.ExtensionManager.make_test_instance(
        [fake_ext, real_ext], namespace=loader.NAMESPACE)
    monkeypatch.setattr(loader.named, 'NamedExtensionManager',
                        lambda **kwargs: manager)
    with caplog.at_level(logging.ERROR):
        drivers = loader.load_drivers(conf, ['impostor', 'fake'])
    assert list(drivers) == ['fake']
    assert 'Driver impostor is not a cyborg_lite driver' in caplog.text


def test_capabilities_are_the_interfaces_a_driver_inherits(conf):
    drivers = loader.load_drivers(conf, ['fake', 'fpga_sysfs', 'pci',
                                         'nvidia', 'xilinx', 'sriov_nic'])
    programmers = sorted(name for name, d in drivers.items()
                         if isinstance(d, base.ProgrammingInterface))
    assert programmers == ['fake', 'fpga_sysfs']
    cleaners = sorted(name for name, d in drivers.items()
                      if isinstance(d, base.CleaningInterface))
    assert cleaners == ['fake', 'fpga_sysfs', 'nvidia']
    assert all(isinstance(d, base.DiscoveryInterface)
               for d in drivers.values())
