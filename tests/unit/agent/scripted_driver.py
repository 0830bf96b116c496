"""A driver whose "hardware" the test sets: the hardware edge, scripted."""
from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.drivers import base


class ScriptedDriver(base.Driver, base.DiscoveryInterface):
    """Discovers ``self.devices`` (dicts), or raises ``self.error``."""

    def __init__(self, conf, name, devices=()):
        super().__init__(conf)
        self.name = name
        self.devices = list(devices)
        self.error = None
        self.scans = 0

    def discover(self):
        self.scans += 1
        if self.error is not None:
            raise exception.DriverError(driver=self.name, reason=self.error)
        return [device_records.DeviceRecord.from_dict(d) for d in self.devices]
