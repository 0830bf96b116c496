"""The latest health readings of the agent's devices, as Prometheus series.

Served on the agent's own metrics port (``[metrics]agent_port``), where
the readings live: the agent reads them on every scan and keeps them
out of its reports (agent/health.py), so that a temperature that moves
every scan writes nothing to the database, Placement or Kubernetes. The
API's scrape, read from the database, has each device's health state
(api/device_metrics.py), never its readings.

A collector: each scrape reads the monitor's last scan of every driver,
so a device the scan no longer finds (or that vanished from the bus) has
no series at the next scrape, and a driver whose health read failed
shows none until it reads again (its devices keep their health state).

Labels: ``host``, ``driver`` and ``identity`` (the device's PCI address,
or its driver's identity for a device without one): the agent does not
know the uuid the conductor gave the device; ``cyborg_lite_device_info``
of the API's scrape carries ``host`` and ``identity`` to join on. The
error counters add ``signal``, the driver's name for the count (PCIe AER
``aer_dev_fatal``, ``aer_dev_nonfatal``, ``aer_dev_correctable``, GPU
``ecc_uncorrectable``): a fixed set per driver. A region with signals of
its own (an FPGA port behind its own virtual function: that function's
AER counts) has the same series named ``cyborg_lite_region_...``, with
``name``, its driver's name for it (as ``cyborg_lite_region_info``).
"""
from prometheus_client.core import CounterMetricFamily
from prometheus_client.core import GaugeMetricFamily

from cyborg_lite.common import health

LABELS = ['host', 'driver', 'identity']
# A gauge's unit -> its series' name after the object (base units); a
# gauge in another unit is not shown.
GAUGES = {
    '°C': ('temperature_celsius', 'The temperature the agent last read '
           'from the %s (its hottest sensor where it has several).'),
    'W': ('power_watts', 'The power draw the agent last read from the '
          '%s.'),
}
ERRORS = ('errors', 'Errors the %s counted (since boot or its driver '
          'loaded: a reset reads as a counter reset), as the agent last '
          "read them, by the driver's name of the count.")


class _Families:
    """The series of one kind of object: ``cyborg_lite_<what>_...``."""

    def __init__(self, what, labels):
        prefix = 'cyborg_lite_%s_' % what
        self.gauges = {unit: GaugeMetricFamily(prefix + name, text % what,
                                               labels=labels)
                       for unit, (name, text) in GAUGES.items()}
        self.errors = CounterMetricFamily(prefix + ERRORS[0],
                                          ERRORS[1] % what,
                                          labels=labels + ['signal'])

    def add(self, key, readings):
        for reading in readings:
            if isinstance(reading, health.Counter):
                self.errors.add_metric(key + [reading.signal], reading.value)
            elif reading.unit in self.gauges:
                self.gauges[reading.unit].add_metric(key, reading.value)

    def all(self):
        return list(self.gauges.values()) + [self.errors]


class HealthCollector:
    """prometheus_client collector of one agent's HealthMonitor."""

    def __init__(self, monitor, host):
        self.monitor = monitor
        self.host = host

    def describe(self):
        # NOTE: the families are made at each scrape; nothing to read to
        # register it.
        return []

    def collect(self):
        devices = _Families('device', LABELS)
        regions = _Families('region', LABELS + ['name'])
        for driver, found in sorted(list(self.monitor.values.items())):
            for identity, readings in sorted(found.items()):
                key = [self.host, driver, identity]
                devices.add(key, readings.device)
                for name, own in sorted(readings.regions.items()):
                    regions.add(key + [name], own)
        return devices.all() + regions.all()
