"""The device, region, agent and holder series, read from the database at
each scrape (a prometheus_client collector), so every API worker answers
the same and a bind or unbind shows in the next scrape.

Every device and region has its series; ``cyborg_lite_device_holder_info``
(value 1) names who holds a region, so any series of that device or
region joins to its holder::

    cyborg_lite_region_in_use * on (region) group_left (project, instance)
        cyborg_lite_device_holder_info

Labels: ``device`` and ``region`` are uuids (long-lived: one series per
piece of hardware), ``host`` the hostname; a holder is ``project`` and
``instance`` (Nova) or ``namespace``, ``pod`` and ``claim`` (Kubernetes:
a series per pod the claim was reserved for when it was prepared, read
from its status.reservedFor, for its first HOLDER_PODS_SHOWN pods, and
``cyborg_lite_device_holder_pods`` counting them all; ``pod`` empty when
not known). A state is a label of one series with value 1 (the current
one).

A device's readings (temperature, power, error counters) are not here:
they never reach the database (an unchanged report writes nothing), so
the agent that reads them serves them (agent/health_metrics.py), labelled
by ``host`` and ``identity``, which ``cyborg_lite_device_info`` carries
to join them to a device.
"""
from prometheus_client.core import GaugeMetricFamily

from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import k8s_claims
from cyborg_lite.inventory import views as host_inventory

PREFIX = 'cyborg_lite_'
# A claim may be reserved for up to 256 pods (k8s_names.RESERVED_FOR_MAX):
# a series for each would make the size of a scrape follow a workload's.
# The first this many, in the claim's order, have a holder series each;
# cyborg_lite_device_holder_pods counts them all.
HOLDER_PODS_SHOWN = 8


class DeviceCollector:
    """prometheus_client collector of the database's devices."""

    def __init__(self, read=devices_db.metric_rows):
        self._read = read

    def describe(self):
        # NOTE: nothing is read to register it; the families are made
        # at each scrape.
        return []

    def collect(self):
        rows = self._read()
        yield from _device_families(rows.devices)
        yield from _region_families(rows.regions)
        yield from _holders(rows.holders)
        agents = GaugeMetricFamily(
            PREFIX + 'agent_up', "1 while the host's agent heartbeats, 0 "
            'once the conductors marked it down.', labels=['host'])
        for hostname, state in rows.agents:
            agents.add_metric([hostname], 1 if state == 'up' else 0)
        yield agents


def _device_families(devices):
    labels = ['device', 'host']
    info = GaugeMetricFamily(
        PREFIX + 'device_info', 'A device as its driver reported it '
        "(value 1); identity is its PCI address (the agent's readings "
        'join on host and identity).',
        labels=labels + ['type', 'vendor', 'driver', 'identity'])
    health = GaugeMetricFamily(
        PREFIX + 'device_health', "The device's health as reported "
        '(value 1 for the current one: healthy, degraded, unhealthy).',
        labels=labels + ['health'])
    maintenance = GaugeMetricFamily(
        PREFIX + 'device_maintenance', '1 while an operator has the '
        'device in maintenance (disabled).', labels=labels)
    available = GaugeMetricFamily(
        PREFIX + 'device_available', '1 when nothing keeps the device '
        'from being offered (maintenance, health, its agent); its regions '
        'have their own reasons.', labels=labels)
    for dev in devices:
        key = [dev.uuid, dev.hostname]
        info.add_metric(key + [dev.type, dev.vendor, dev.driver_name,
                               dev.identity], 1)
        health.add_metric(key + [dev.health], 1)
        maintenance.add_metric(key, 1 if dev.status == 'maintaining' else 0)
        available.add_metric(key, 0 if _reasons(
            dev.status, dev.health, dev.agent_state) else 1)
    return [info, health, maintenance, available]


_reason_cache = {}


def _reasons(status, health, agent_state):
    key = (status, health, agent_state)
    if key not in _reason_cache:
        # NOTE: the one availability predicate, for a device as a whole.
        _reason_cache[key] = host_inventory.unavailable_reasons(
            host_inventory.DeviceView(
                uuid='', type='', vendor='', identity='', status=status,
                health=health, agent_down=agent_state == 'down'))
    return _reason_cache[key]


def _region_families(regions):
    labels = ['device', 'region', 'host']
    info = GaugeMetricFamily(
        PREFIX + 'region_info', 'A region (deployable) of a device, with '
        "its driver's name for it (value 1).", labels=labels + ['name'])
    state = GaugeMetricFamily(
        PREFIX + 'region_state', "The region's allocation and cleaning "
        'state (value 1 for the current one: available, allocated, '
        'pending_cleaning, cleaning, error).', labels=labels + ['state'])
    health = GaugeMetricFamily(
        PREFIX + 'region_health', "The region's own health as reported "
        "(its port's or function's signals; value 1 for the current one: "
        'healthy, degraded, unhealthy); its device has its own.',
        labels=labels + ['health'])
    in_use = GaugeMetricFamily(
        PREFIX + 'region_in_use', '1 while an ARQ or a Kubernetes claim '
        'holds an attach handle of the region.', labels=labels)
    for region in regions:
        key = [region.device_uuid, region.uuid, region.hostname]
        info.add_metric(key + [region.name], 1)
        state.add_metric(key + [region.device_state], 1)
        health.add_metric(key + [region.health], 1)
        in_use.add_metric(key, 1 if region.handles_in_use else 0)
    return [info, state, health, in_use]


def _holders(holders):
    family = GaugeMetricFamily(
        PREFIX + 'device_holder_info', 'Who holds a region (value 1): a '
        'project and instance (Nova), or a namespace, pod and claim '
        '(Kubernetes; a series per pod, for the first %d pods of a '
        'claim). Join any series on device or region to it.'
        % HOLDER_PODS_SHOWN,
        labels=['device', 'region', 'host', 'project', 'instance',
                'namespace', 'pod', 'claim'])
    counts = GaugeMetricFamily(
        PREFIX + 'device_holder_pods', 'How many pods the Kubernetes '
        'claim holding a region was reserved for when it was prepared.',
        labels=['device', 'region', 'host', 'namespace', 'claim'])
    for row in holders:
        kind, device, region, host, project = row[:5]
        key = [device, region, host, project or '']
        if kind == 'nova':
            family.add_metric(key + [row[5] or '', '', '', ''], 1)
            continue
        namespace, claim, pods = row[5:8]
        pods = k8s_claims.pod_list(pods)
        for pod in pods[:HOLDER_PODS_SHOWN] or ['']:
            family.add_metric(key + ['', namespace, pod, claim], 1)
        counts.add_metric([device, region, host, namespace, claim],
                          len(pods))
    return [family, counts]
