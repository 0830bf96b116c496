"""A host's inventory as ResourceSlices (resource.k8s.io/v1): a pure builder.

One pool per Node, named after it; one device per deployable, named by a
stable DNS label (device type, device identity, deployable name), so a
region keeps its name when it is reprogrammed. Attributes live in the
driver's domain except the standard ``resource.kubernetes.io`` ones.
Devices are sorted by name, but a MIG GPU's placements, which sit
together where their first name sorts, in the order of its placement
policy (kubernetes/mig_counters.publication_order: the kube-scheduler
takes the first that fits); they are cut into slices of at most
``MAX_DEVICES_PER_SLICE``, a GPU's placements kept in one slice when
they fit one (``cut``); regions that share one PCI function consume
its counter set, published in slices of their own after the devices'
(kubernetes/counters.py). Every object is checked against the API's
rules before it leaves (``check_slice``), since the published schemas do
not check names, lengths or counts.

``spec.pool.generation`` is left at 0: the sync sets it (slice_sync.py).

Standard attributes (k8s.io/dynamic-resource-allocation deviceattribute)
are published where the device is a PCI function:
``resource.kubernetes.io/pciBusID`` (its address), ``.../pcieRoot``
(``pciDDDD:BB``) and ``.../numaNode`` (KEP-6072): a scalar, or with
``numa_node_list`` (the cluster has DRAListTypeAttributes on) the list of
common/topology.numa_node_list. A device with no NUMA affinity publishes
none: absent means unknown, never node 0. No other name under
resource.kubernetes.io is ever published (``STANDARD_ATTRIBUTES``).
"""
import logging

from cyborg_lite.common import states
from cyborg_lite.common import topology
from cyborg_lite.kubernetes import claim_config
from cyborg_lite.kubernetes import counters as k8s_counters
from cyborg_lite.kubernetes import mig_counters
from cyborg_lite.kubernetes import names as k8s_names

LOG = logging.getLogger(__name__)

API_VERSION = 'resource.k8s.io/v1'
KIND = 'ResourceSlice'
STANDARD_DOMAIN = 'resource.kubernetes.io'
PCI_BUS_ID = STANDARD_DOMAIN + '/pciBusID'
PCIE_ROOT = STANDARD_DOMAIN + '/pcieRoot'
NUMA_NODE = STANDARD_DOMAIN + '/numaNode'
STANDARD_ATTRIBUTES = (PCI_BUS_ID, PCIE_ROOT, NUMA_NODE)
# The API allows 128 devices per slice, 64 when any device has taints or
# consumes counters (ResourceSliceMaxDevicesWithTaintsOrConsumesCounters).
# We always cut at 64 so a taint that comes or goes never moves devices
# between slices.
MAX_DEVICES_PER_SLICE = 64
API_MAX_DEVICES = 128
API_MAX_DEVICES_WITH_TAINTS = 64
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_STRING_VALUE = 64
MAX_TAINTS = 16
TAINT_EFFECTS = ('None', 'NoSchedule', 'NoExecute')
ATTRIBUTE_VALUE_KEYS = ('int', 'bool', 'string', 'version', 'ints')
# KEP-5007: a device allocated with binding conditions binds its pod only
# once every one is True in the claim's status.devices[].conditions (the
# conductor sets it when the region runs what the claim asked for,
# kubernetes/binding.py), and fails the binding once a failure one is.
MAX_BINDING_CONDITIONS = 4
_BINARY_SUFFIXES = ('', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei')


class InvalidSlice(ValueError):
    """A ResourceSlice we built breaks a rule of the API."""


def mib_quantity(mib):
    """``mib`` MiB as the apiserver writes the quantity back (canonical
    binary SI: the largest unit that keeps an integer), so a stored slice
    compares equal to a freshly built one."""
    if isinstance(mib, bool) or not isinstance(mib, int) or mib < 0:
        raise InvalidSlice('a memory size must be a non-negative integer '
                           'of MiB, got %r' % (mib,))
    if mib == 0:
        return '0'
    value, exponent = mib << 20, 0
    while value % 1024 == 0 and exponent < len(_BINARY_SUFFIXES) - 1:
        value //= 1024
        exponent += 1
    return '%d%s' % (value, _BINARY_SUFFIXES[exponent])


def device_kind(device, deployable):
    """The ``type`` attribute: fpga-region, gpu, vgpu, or the device type."""
    if device.type == 'FPGA' and deployable.region_type:
        return 'fpga-region'
    if device.type == 'GPU':
        return 'vgpu' if deployable.resource_class == 'VGPU' else 'gpu'
    return device.type.lower()


def device_name(device, deployable, hashed=False):
    return k8s_names.dns_label(device.type.lower(), device.identity,
                               deployable.name, hashed=hashed)


def _put_string(attributes, name, value):
    value = value or ''
    if len(value) > MAX_STRING_VALUE:
        # A cut value could match a selector the real one does not.
        LOG.warning('Attribute %s left out: %d characters, the API takes '
                    'at most %d', name, len(value), MAX_STRING_VALUE)
        return
    attributes[name] = {'string': value}


def _place(device, deployable):
    """(NUMA node, PCIe root, PCI bus id) of the deployable: its own
    function's where it has one, else its device's."""
    if deployable.pci_bus_id:
        return (deployable.numa_node, deployable.pcie_root,
                deployable.pci_bus_id)
    return device.numa_node, device.pcie_root, device.pci_address


def _numa_value(node, numa_nodes, as_list):
    if as_list:
        return {'ints': topology.numa_node_list(node, list(numa_nodes))}
    return {'int': node}


def _attributes(device, deployable, numa_nodes=(), numa_node_list=False):
    attributes = {}
    for name, value in (('type', device_kind(device, deployable)),
                        ('vendor', device.vendor),
                        ('model', device.model),
                        ('regionType', deployable.region_type),
                        ('functionID', deployable.function_id),
                        ('bitstreamID', deployable.bitstream_id),
                        ('deployableUUID', deployable.uuid),
                        ('deviceUUID', device.uuid)):
        _put_string(attributes, name, value)
    attributes['programmable'] = {'bool': bool(device.programmable)}
    node, root, bus_id = _place(device, deployable)
    if node is not None:
        attributes['numaNode'] = {'int': node}
        attributes[NUMA_NODE] = _numa_value(node, numa_nodes,
                                            numa_node_list)
    if bus_id:
        _put_string(attributes, PCI_BUS_ID, bus_id)
    if root:
        _put_string(attributes, PCIE_ROOT, root)
    return attributes


def _capacity(device, deployable):
    capacity = {'localMemory': {
        'value': mib_quantity(deployable.local_memory_mb)}}
    if device.memory_mb is not None:
        capacity['memory'] = {'value': mib_quantity(device.memory_mb)}
    return capacity


def taint_key(driver_name, reason):
    """``<driver>/<reason>``, the reason's underscores as dashes."""
    return '%s/%s' % (driver_name, reason.replace('_', '-'))


def _health_taint(taint, deployable, effect):
    """A health taint names the signal behind it (its value)."""
    if deployable.health_signal and \
            k8s_names.is_label_value(deployable.health_signal):
        taint['value'] = deployable.health_signal
    taint['effect'] = effect
    return taint


def _taints(driver_name, deployable):
    """Why the device must not be allocated now, as NoSchedule taints: one
    per unavailability reason (``unhealthy`` with the effect the operator
    chose), and ``in-use=nova`` while an ARQ holds it; what is worth
    knowing about it, as taints of effect None (KEP-5055, informational):
    ``degraded``."""
    taints = []
    for reason in deployable.unavailable:
        taint = {'key': taint_key(driver_name, reason), 'effect': 'NoSchedule'}
        if reason in states.HEALTH_UNAVAILABLE:
            taint = _health_taint(taint, deployable,
                                  deployable.unhealthy_effect
                                  if reason == 'unhealthy' else 'NoSchedule')
        taints.append(taint)
    if deployable.bound_to_nova:
        taints.append({'key': taint_key(driver_name, 'in-use'),
                       'value': 'nova', 'effect': 'NoSchedule'})
    for advisory in deployable.advisories:
        taints.append(_health_taint({'key': taint_key(driver_name,
                                                      advisory)},
                                    deployable, 'None'))
    return taints


def may_need_programming(device, deployable):
    """Whether allocating this device may mean loading a bitstream first:
    a region of a programmable device."""
    return bool(device.programmable and deployable.region_type)


def _binding_conditions(driver_name):
    return {'bindingConditions': [
                claim_config.programmed_condition(driver_name)],
            'bindingFailureConditions': [
                claim_config.programming_failed_condition(driver_name)]}


def _unique_names(pairs):
    """Device names for (device, deployable) pairs; names that fold to the
    same label get the hashed form, so each is unique in the pool."""
    plain = [device_name(d, dep) for d, dep in pairs]
    seen = {}
    for name in plain:
        seen[name] = seen.get(name, 0) + 1
    return [device_name(d, dep, hashed=True) if seen[name] > 1 else name
            for (d, dep), name in zip(pairs, plain)]


def devices_by_name(inventory):
    """{device name in the pool: (Device, Deployable)}, the names the
    slices publish (how a claim's allocated device is found again)."""
    pairs = [(d, dep) for d in inventory.devices for dep in d.deployables]
    return dict(zip(_unique_names(pairs), pairs))


# Taint effects that keep new pods off a device; "None" only informs.
KEEPS_PODS_OFF = ('NoSchedule', 'NoExecute')


def untainted(device):
    """``device`` (a ``spec.devices`` entry) for a cluster that drops device
    taints: None when a taint that keeps pods off it would be lost (it must
    not be offered at all), else the entry without its taints."""
    taints = device.get('taints') or []
    if any(t['effect'] in KEEPS_PODS_OFF for t in taints):
        return None
    return {k: v for k, v in device.items() if k != 'taints'}


def build_devices(inventory, driver_name, publish_taints=True,
                  numa_node_list=False, binding_conditions=False):
    """The ``spec.devices`` entries of a host in the order they are
    published (mig_counters.publication_order: by name, a MIG GPU's
    placements in its policy's order); with ``publish_taints`` false, as
    ``untainted`` leaves them; with ``binding_conditions``, the regions
    that may need programming carry ours."""
    pairs = [(d, dep) for d in inventory.devices for dep in d.deployables]
    names = _unique_names(pairs)
    devices = []
    for (device, deployable), name in zip(pairs, names):
        entry = {'name': name,
                 'attributes': _attributes(device, deployable,
                                           inventory.numa_nodes,
                                           numa_node_list),
                 'capacity': _capacity(device, deployable)}
        taints = _taints(driver_name, deployable)
        if taints:
            entry['taints'] = taints
        if binding_conditions and may_need_programming(device, deployable):
            entry.update(_binding_conditions(driver_name))
        if not publish_taints:
            entry = untainted(entry)
            if entry is None:
                continue    # no taints in the cluster: not offered at all
        devices.append(entry)
    if len(set(names)) != len(names):
        raise InvalidSlice('duplicate device names in pool %s'
                           % inventory.node_name)
    order = mig_counters.publication_order(dict(zip(names, pairs)))
    return sorted(devices, key=lambda d: order[d['name']])


def _runs(devices, together):
    """``devices`` as runs of neighbours ``together`` gives one key; a
    device it gives none is a run of its own."""
    runs = []
    for entry in devices:
        key = together.get(entry['name'])
        if runs and key is not None and runs[-1][0] == key:
            runs[-1][1].append(entry)
        else:
            runs.append((key, [entry]))
    return [run for _key, run in runs]


def cut(devices, together, size):
    """``devices`` in order, in lists of at most ``size``; a run of
    neighbours that ``together`` ({device name: key}) gives one key (a
    MIG GPU's placements) starts a new list rather than straddle two,
    since the scheduler may walk a pool's slices in any order; only a run
    longer than ``size`` is split."""
    chunks = [[]]
    for run in _runs(devices, together):
        if len(chunks[-1]) + len(run) > size:
            chunks.append([])
        for entry in run:
            if len(chunks[-1]) == size:
                chunks.append([])
            chunks[-1].append(entry)
    return [chunk for chunk in chunks if chunk]


def slice_name(node_name, driver_name, suffix):
    return k8s_names.dns_subdomain_name(node_name, driver_name, str(suffix))


def _slice(inventory, driver_name, suffix, count, **content):
    return {
        'apiVersion': API_VERSION,
        'kind': KIND,
        'metadata': {'name': slice_name(inventory.node_name, driver_name,
                                        suffix)},
        'spec': dict({
            'driver': driver_name,
            'nodeName': inventory.node_name,
            'pool': {'name': inventory.node_name, 'generation': 0,
                     'resourceSliceCount': count},
        }, **content),
    }


def build_slices(inventory, driver_name, publish_taints=True,
                 max_devices=MAX_DEVICES_PER_SLICE, numa_node_list=False,
                 shared_counters=True, binding_conditions=False):
    """The ResourceSlice objects (dicts) that publish ``inventory``; none
    for a host without devices. ``numa_node_list``: numaNode in its list
    form (KEP-6072; the cluster must have DRAListTypeAttributes on).
    ``shared_counters``: regions that share a PCI function consume its
    counter set, published in slices of their own after the devices'
    (kubernetes/counters.py; the cluster must have partitionable devices).
    ``binding_conditions``: regions that may need programming bind their
    pod only once programmed (KEP-5007; the cluster must have
    DRADeviceBindingConditions)."""
    if not k8s_names.is_dns_subdomain(inventory.node_name):
        raise InvalidSlice('node name %r is not a DNS subdomain'
                           % (inventory.node_name,))
    devices = build_devices(inventory, driver_name, publish_taints,
                            numa_node_list, binding_conditions)
    sets = []
    if shared_counters:
        devices, sets = k8s_counters.partitioned(devices,
                                                 devices_by_name(inventory))
    else:
        devices = k8s_counters.unpartitioned(devices,
                                             devices_by_name(inventory))
    chunks = cut(devices, mig_counters.placement_gpus(
        devices_by_name(inventory)), max_devices)
    set_chunks = [sets[i:i + k8s_counters.MAX_SETS_PER_SLICE]
                  for i in range(0, len(sets),
                                 k8s_counters.MAX_SETS_PER_SLICE)]
    count = len(chunks) + len(set_chunks)
    slices = [_slice(inventory, driver_name, str(index), count,
                     devices=chunk)
              for index, chunk in enumerate(chunks)]
    slices += [_slice(inventory, driver_name, 'counters-%d' % index, count,
                      sharedCounters=chunk)
               for index, chunk in enumerate(set_chunks)]
    for obj in slices:
        check_slice(obj)
    errors = k8s_counters.pool_errors(slices)
    _check(not errors, 'pool %s: %s', inventory.node_name, '; '.join(errors))
    return slices


def _check(condition, reason, *args):
    if not condition:
        raise InvalidSlice(reason % args)


def _check_value(where, value):
    _check(isinstance(value, dict) and len(value) == 1 and
           next(iter(value)) in ATTRIBUTE_VALUE_KEYS,
           '%s: exactly one of %s', where, ', '.join(ATTRIBUTE_VALUE_KEYS))
    (key, item), = value.items()
    if key in ('string', 'version'):
        _check(isinstance(item, str) and len(item) <= MAX_STRING_VALUE,
               '%s: a string of at most %d characters', where,
               MAX_STRING_VALUE)
    elif key == 'int':
        _check(isinstance(item, int) and not isinstance(item, bool),
               '%s: an integer', where)
    elif key == 'ints':
        _check(isinstance(item, list) and item and
               all(isinstance(i, int) and not isinstance(i, bool)
                   for i in item), '%s: a non-empty list of integers', where)
    else:
        _check(isinstance(item, bool), '%s: a boolean', where)


def _check_device(device):
    name = device.get('name')
    _check(k8s_names.is_dns_label(name),
           'device name %r is not a DNS label', name)
    attributes = device.get('attributes', {})
    capacity = device.get('capacity', {})
    _check(len(attributes) + len(capacity) <= MAX_ATTRIBUTES_AND_CAPACITIES,
           'device %s: more than %d attributes and capacities', name,
           MAX_ATTRIBUTES_AND_CAPACITIES)
    _check(not set(attributes) & set(capacity),
           'device %s: a name is both attribute and capacity', name)
    for key in list(attributes) + list(capacity):
        _check(k8s_names.is_qualified_name(key),
               'device %s: %r is not a qualified name', name, key)
        _check(not key.startswith(STANDARD_DOMAIN + '/') or
               key in STANDARD_ATTRIBUTES,
               'device %s: %r is not a standard attribute', name, key)
    for key, value in attributes.items():
        _check_value('device %s attribute %s' % (name, key), value)
    for key, value in capacity.items():
        _check(isinstance(value, dict) and isinstance(value.get('value'),
                                                      str),
               'device %s capacity %s: needs a quantity value', name, key)
    taints = device.get('taints', [])
    _check(len(taints) <= MAX_TAINTS, 'device %s: more than %d taints',
           name, MAX_TAINTS)
    for taint in taints:
        _check(k8s_names.is_label_key(taint.get('key')) and
               k8s_names.is_label_value(taint.get('value', '')) and
               taint.get('effect') in TAINT_EFFECTS,
               'device %s: bad taint %r', name, taint)
    for field in ('bindingConditions', 'bindingFailureConditions'):
        types = device.get(field, [])
        _check(len(types) <= MAX_BINDING_CONDITIONS and all(
            k8s_names.is_label_key(t) for t in types),
            'device %s: bad %s %r', name, field, types)
    _check(bool(device.get('bindingConditions')) ==
           bool(device.get('bindingFailureConditions')),
           'device %s: binding conditions without failure conditions or '
           'the reverse', name)
    for reason in k8s_counters.device_errors(device):
        raise InvalidSlice(reason)


def check_slice(obj):
    """The rules of the API the JSON schemas leave out; InvalidSlice if
    one is broken."""
    meta, spec = obj.get('metadata', {}), obj.get('spec', {})
    _check(k8s_names.is_dns_subdomain(meta.get('name')),
           'slice name %r is not a DNS subdomain', meta.get('name'))
    _check(k8s_names.is_dns_subdomain(spec.get('driver'), 63),
           'driver %r is not a DNS subdomain of at most 63 characters',
           spec.get('driver'))
    _check(k8s_names.is_dns_subdomain(spec.get('nodeName')),
           'node name %r is not a DNS subdomain', spec.get('nodeName'))
    pool = spec.get('pool', {})
    pool_name = pool.get('name')
    _check(isinstance(pool_name, str) and len(pool_name) <= 253 and
           all(k8s_names.is_dns_subdomain(p) for p in pool_name.split('/')),
           'pool name %r is not DNS subdomains separated by /', pool_name)
    _check(isinstance(pool.get('resourceSliceCount'), int) and
           pool['resourceSliceCount'] > 0, 'pool %s: bad slice count',
           pool_name)
    devices = spec.get('devices') or []
    limit = (API_MAX_DEVICES_WITH_TAINTS
             if any(d.get('taints') or d.get('consumesCounters')
                    for d in devices)
             else API_MAX_DEVICES)
    _check(len(devices) <= limit, 'slice %s: %d devices, at most %d',
           meta.get('name'), len(devices), limit)
    names = [d.get('name') for d in devices]
    _check(len(set(names)) == len(names), 'slice %s: duplicate device names',
           meta.get('name'))
    for device in devices:
        _check_device(device)
    for reason in k8s_counters.slice_errors(obj):
        raise InvalidSlice(reason)
