"""The latest health readings of the agent's devices, as Prometheus series.

Served on the agent's own metrics port (``[metrics]agent_port``), where
the readings live: the agent reads them on every scan and keeps them
out of its reports (agent/health.py), so that a temperature that moves
every scan writes nothing to the database, Placement or Kubernetes. The
API's scrape, read from the database, has each device's health state
(objects/device_metrics.py), never its readings.

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
``ecc_uncorrectable``): a fixed set per driver.
"""
from prometheus_client.core import CounterMetricFamily
from prometheus_client.core import GaugeMetricFamily

from cyborg_lite.common import health

PREFIX = 'cyborg_lite_device_'
LABELS = ['host', 'driver', 'identity']
# A gauge's unit -> its series (base units); a gauge in another unit is
# not shown.
GAUGES = {
    '°C': ('temperature_celsius', 'The temperature the agent last read '
           'from the device (its hottest sensor where it has several).'),
    'W': ('power_watts', 'The power draw the agent last read from the '
          'device.'),
}


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
        gauges = {unit: GaugeMetricFamily(PREFIX + name, text, labels=LABELS)
                  for unit, (name, text) in GAUGES.items()}
        errors = CounterMetricFamily(
            PREFIX + 'errors', 'Errors the device counted (since boot '
            'or its driver loaded: a reset reads as a counter reset), as '
            "the agent last read them, by the driver's name of the count.",
            labels=LABELS + ['signal'])
        for driver, devices in sorted(list(self.monitor.values.items())):
            for identity, readings in sorted(devices.items()):
                key = [self.host, driver, identity]
                for reading in readings:
                    if isinstance(reading, health.Counter):
                        errors.add_metric(key + [reading.signal],
                                          reading.value)
                    elif reading.unit in gauges:
                        gauges[reading.unit].add_metric(key, reading.value)
        return list(gauges.values()) + [errors]
