"""A host as Kubernetes sees it: the neutral HostInventory mapped to
kubernetes/inventory's view, from which kubernetes/slices builds the
ResourceSlices. One mapping for the conductor's sink and claims
(kubernetes/sink.py, kubernetes/claims.py) and the API's preview
(/v2/resource_slices). Pure: callers read the HostInventory
(db/devices.load_inventory) and give it to ``of_host``.

Availability is decided once, by host_inventory.unavailable_reasons: every
reason becomes a taint, except those host_inventory.kubernetes_lifted
names (``kubernetes_claimed``, the claim Kubernetes itself allocated; and
Nova's ``bind_unsupported`` of a MIG placement, which Prepare makes), and
a region an ARQ holds gets ``in-use=nova``; a degraded one
(host_inventory.advisories) an informational taint. A MIG placement
consumes its GPU's counters (kubernetes/mig_counters.py); a vGPU type is
as many devices as the card could make of it, each consuming the card's
counters (kubernetes/vgpu_counters.py), and Nova's vGPUs are taken out
of those counters instead of tainting the type.
"""
import dataclasses
import re

from cyborg_lite.common import device_records
from cyborg_lite.common import shared_functions
from cyborg_lite.inventory import views as host_inventory
from cyborg_lite.kubernetes import inventory
from cyborg_lite.kubernetes import mig_counters
from cyborg_lite.kubernetes import names as k8s_names
from cyborg_lite.kubernetes import slices as k8s_slices
from cyborg_lite.kubernetes import vgpu_counters


def node_name(conf, hostname):
    """The Node (and pool) name of ``hostname``."""
    return conf.kubernetes.node_names.get(hostname, hostname)


def _bound_to_nova(deployable):
    return any(h.in_use and h.k8s_claim is None
               for h in deployable.attach_handles)


# A reason starts with its first finding's signal (common/health.py):
# `catfatal_errors 0x4`, `dfl_tree: ...`, `pci 0000:af:00.0 is gone ...`.
_LEADING_SIGNAL_RE = re.compile(r'[A-Za-z0-9][-A-Za-z0-9_.]*')


def _health_signal(device, dep):
    """The signal behind the health reason, as a taint's value: a valid
    label value, or None when the reason does not start with one."""
    _state, reason = host_inventory.health_of(device, dep)
    match = _LEADING_SIGNAL_RE.match(reason or '')
    if match is None:
        return None
    signal = match.group(0).rstrip('-_.')
    return signal if signal and k8s_names.is_label_value(signal) else None


def _deployables(hostname, device, dep, conf):
    """The view's deployables of ``dep``: itself, or a vGPU type's
    copies (``<name>_<i>``, one device each; kubernetes/vgpu_counters)."""
    vgpu = vgpu_counters.consumed(device, dep)
    if not vgpu:
        return (_deployable(hostname, device, dep, conf,
                            unsupported=device_records.MAKES_INSTANCE in
                            dep.attributes),)
    one = _deployable(hostname, device, dep, conf, vgpu)
    return tuple(dataclasses.replace(one, name='%s_%d' % (one.name, i))
                 for i in range(vgpu_counters.copies(device, dep)))


# A deployable made at bind (a vGPU type) that an agent of an earlier
# release reported (no counters' attributes): its Prepare does not make
# vGPUs, so Kubernetes is not given it.
PREPARE_UNSUPPORTED = 'bind_unsupported'


def _deployable(hostname, device, dep, conf, vgpu=(), unsupported=False):
    reasons = kubernetes_reasons(device, dep)
    placement = mig_counters.placement(dep.attributes)
    if unsupported and PREPARE_UNSUPPORTED not in reasons:
        reasons += (PREPARE_UNSUPPORTED,)
    return inventory.Deployable(
        uuid=dep.uuid, name=_name_in_device(hostname, device, dep),
        resource_class=dep.resource_class or '',
        region_type=dep.region_type, function_id=dep.function_id,
        bitstream_id=dep.bitstream_id, local_memory_mb=dep.local_memory_mb,
        unavailable=reasons,
        # A vGPU of a type Nova holds is out of the card's counters.
        bound_to_nova=not vgpu and _bound_to_nova(dep),
        numa_node=dep.numa_node, pcie_root=dep.pcie_root,
        pci_bus_id=dep.pci_bus_id,
        shares_function=_shares_function(hostname, device, dep),
        card_counters=_card_counters(hostname, device, dep),
        gpu_counters=vgpu or mig_counters.consumed(
            dep.attributes, dep.local_memory_mb, k8s_slices.mib_quantity),
        gpu_counter_totals=vgpu_counters.totals(device) if vgpu else
        mig_counters.totals(dep.attributes, k8s_slices.mib_quantity),
        mig_placement=placement,
        mig_held=bool(placement) and any(h.in_use
                                         for h in dep.attach_handles),
        advisories=(host_inventory.advisories(device, dep)
                    if conf.informational_taints else ()),
        health_signal=_health_signal(device, dep),
        unhealthy_effect=conf.unhealthy_taint_effect)


def kubernetes_reasons(device, dep):
    """Why Kubernetes may not be given ``dep`` now: the availability
    decision less host_inventory.kubernetes_lifted's reasons."""
    lifted = host_inventory.kubernetes_lifted(dep)
    return tuple(r for r in host_inventory.unavailable_reasons(device, dep)
                 if r not in lifted)


def _shares_function(hostname, device, dep):
    group = device.shared_groups.get(dep.name, ())
    return frozenset(_name_in_device(hostname, device, d)
                     for d in device.deployables if d.name in group)


def _card_counters(hostname, device, dep):
    """The counters of its card's set ``dep`` consumes (one per region,
    named as the region): a region its own, the whole card all."""
    if not device.offered_by_card:
        return ()
    regions = [d for d in device.deployables
               if not shared_functions.is_whole_card(d.traits)]
    if not shared_functions.is_whole_card(dep.traits):
        regions = [dep]
    return tuple(sorted(k8s_names.dns_label(
        _name_in_device(hostname, device, d)) for d in regions))


def _name_in_device(hostname, device, dep):
    """The deployable's name as its driver reported it (the report stores
    device_records.deployable_db_name), so device names stay short."""
    prefix = device_records.device_prefix(hostname, device.identity)
    if dep.name.startswith(prefix) and len(dep.name) > len(prefix):
        return dep.name[len(prefix):]
    return dep.name


def k8s_inventory(view, node, conf):
    """The kubernetes/inventory.HostInventory of a host_inventory one;
    ``conf``: the [kubernetes] options."""
    devices = tuple(inventory.Device(
        uuid=d.uuid, type=d.type, vendor=d.vendor, model=d.model,
        identity=d.identity, pci_address=d.pci_address,
        pcie_root=d.pcie_root, numa_node=d.numa_node,
        programmable=any(dep.region_type for dep in d.deployables),
        deployables=tuple(copy for dep in d.deployables
                          for copy in _deployables(view.hostname, d, dep,
                                                   conf)))
        for d in view.devices)
    return inventory.HostInventory(view.hostname, node, devices,
                                   view.numa_nodes)


def of_host(conf, view):
    """The Kubernetes view of ``view`` (a host_inventory.HostInventory:
    db/devices.load_inventory reads it) under ``conf``'s [kubernetes]
    options and Node name."""
    return k8s_inventory(view, node_name(conf, view.hostname),
                         conf.kubernetes)
