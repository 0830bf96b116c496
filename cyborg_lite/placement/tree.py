"""Placement's translation of a host inventory: the provider tree a host
should have in Placement. Pure: no I/O.

It belongs to the Placement sink (placement/sink.py), and lives among the
shared objects so that the API can show the same desired tree
(/v2/resource_provider_trees) without reaching into the sink.

``build_tree(hostname, root_uuid, devices, numa_layer=True)`` turns the
devices of a ``HostInventory`` (inventory/views.py) into
``Provider`` objects, parents first, following the Placement model of
docs/architecture.md::

    compute node RP (root_uuid, owned by Nova or created by us)
     └─ NUMA node RP <host>_numa<n>           HW_NUMA_ROOT, no inventory
         └─ device RP <host>_<pci address>    PGPU here for a GPU
             └─ child RP <device RP>_<deployable> FPGA region, vGPU/MIG

A device whose NUMA node is unknown, or every device when ``numa_layer``
is false (someone else's NUMA providers are in the tree, see
placement/reporter.py), hangs from the compute node directly. Providers
of a known node carry CUSTOM_NUMA_NODE_<n> either way.

Names and uuids come from cyborg_lite.placement.naming (Cyborg's
uuid3(NAMESPACE_DNS, name)), shared with the conductor's report and bind
code, so the same host yields the same uuids everywhere and always.
Every provider we make carries OWNER_CYBORG: that is how the reporter
tells ours from Nova's providers in the same tree.
"""
import dataclasses
import re

import os_resource_classes as orc
import os_traits

from cyborg_lite.common import device_records
from cyborg_lite.common import resources
from cyborg_lite.common import shared_functions
from cyborg_lite.inventory import views as host_inventory
from cyborg_lite.placement import naming

OWNER_TRAIT = os_traits.OWNER_CYBORG
NUMA_ROOT_TRAIT = os_traits.HW_NUMA_ROOT
PROGRAMMABLE_TRAIT = 'CUSTOM_PROGRAMMABLE'
LOCAL_MEMORY_RC = 'CUSTOM_FPGA_LOCAL_MEMORY_MB'
# Resource classes that live on the device RP itself rather than on a
# child: a whole GPU passed through is the card, not a part of it.
DEVICE_LEVEL_RCS = frozenset(resources.WHOLE_DEVICE_RESOURCE_CLASSES)
DEFAULT_RC = {'FPGA': orc.FPGA, 'GPU': orc.PGPU, 'MDEV': orc.VGPU}
_INVALID = re.compile('[^A-Z0-9_]+')
_MAX_NAME = 255
_STANDARD_TRAITS = frozenset(os_traits.get_traits())
_STANDARD_RCS = frozenset(orc.STANDARDS)


@dataclasses.dataclass
class Provider:
    name: str
    uuid: str
    parent_uuid: str
    inventories: dict = dataclasses.field(default_factory=dict)
    traits: frozenset = frozenset()


@dataclasses.dataclass
class Tree:
    """Desired providers (parents first) and the rp_uuid of each DB row."""
    providers: list
    device_rps: dict  # device uuid -> rp uuid
    deployable_rps: dict  # deployable uuid -> rp uuid
    # rp uuid a deployable had alone -> the provider offering it with the
    # siblings behind its function (an upgrade moves allocations there).
    moved: dict = dataclasses.field(default_factory=dict)
    # Whether devices of a known NUMA node hang from our NUMA providers.
    numa_layer: bool = True

    def by_uuid(self):
        return {p.uuid: p for p in self.providers}


def _custom(name):
    # Placement allows only [A-Z0-9_] and CUSTOM_ for non-standard names;
    # strip a CUSTOM_ the caller already wrote so it is not doubled.
    norm = _INVALID.sub('_', name.upper()).strip('_')
    if norm.startswith('CUSTOM_'):
        norm = norm[len('CUSTOM_'):]
    return ('CUSTOM_' + norm)[:_MAX_NAME]


def trait_name(name):
    """A legal trait name: standard ones kept, others CUSTOM_[A-Z0-9_]."""
    return name if name in _STANDARD_TRAITS else _custom(name)


def resource_class_name(name):
    """A legal resource class name: standard kept, others CUSTOM_..."""
    upper = name.upper()
    return upper if upper in _STANDARD_RCS else _custom(name)


def rp_uuid(name):
    """Cyborg's deterministic provider uuid for a provider name."""
    return naming.rp_uuid(name)


def device_rp_name(hostname, device):
    # identity is the PCI address for PCI cards (see models.Device).
    return naming.device_rp_name(hostname, device.identity)


def child_rp_name(device_name, deployable):
    # The conductor stores the global name (common/device_records.
    # deployable_db_name), device RP name in front; prefixing again would
    # change the uuid.
    if deployable.name.startswith(device_name + '_'):
        return deployable.name
    return '%s_%s' % (device_name, deployable.name)


def _inventory(total, reserved):
    return {'total': total, 'reserved': total if reserved else 0,
            'min_unit': 1, 'max_unit': total, 'step_size': 1,
            'allocation_ratio': 1.0}


def deployable_rc(device, deployable):
    if deployable.resource_class:
        return resource_class_name(deployable.resource_class)
    return DEFAULT_RC.get(device.type) or _custom(device.type)


def _offer_inventories(device, deps):
    """What one provider offers of the deployables ``deps`` (one, or the
    siblings behind one function: common/shared_functions.py).

    Siblings are one accelerator: as many as the functions they reach
    (one for a card's PF), each with one region's local memory. Hidden,
    not removed, when none of them may be bound now: reserved = total
    keeps the provider and any allocation on it, and makes Placement
    offer none of it."""
    if device.offered_by_card:
        return _card_inventories(device, deps)
    hidden = all(host_inventory.unavailable_reasons(device, dep)
                 for dep in deps)
    inv = {}
    for dep in deps:
        rc = deployable_rc(device, dep)
        if dep.num_accelerators > 0:
            inv[rc] = inv.get(rc, 0) + dep.num_accelerators
    if len(deps) > 1:
        functions = len({shared_functions.handle_key(h.attach_info)
                         for dep in deps for h in dep.attach_handles})
        inv = {rc: min(total, functions) for rc, total in inv.items()}
    memory = max(dep.local_memory_mb for dep in deps)
    if memory > 0:
        inv[LOCAL_MEMORY_RC] = memory
    inv = {rc: _inventory(total, hidden) for rc, total in inv.items()}
    for dep in deps if not hidden else ():
        taken = _held_outside_placement(dep)
        if taken:
            rc = inv[deployable_rc(device, dep)]
            rc['reserved'] = min(rc['total'], rc['reserved'] + taken)
    return inv


def _held_outside_placement(dep):
    """Of a deployable whose bind makes the instance (a vGPU type: each
    handle a VF of its own), the VFs held that no Placement allocation
    counts: a Kubernetes claim's, and those whose instance awaits removal
    after its holder left (db/instance_removals.py). 0 for any other."""
    if device_records.MAKES_INSTANCE not in dep.attributes:
        return 0
    return sum(1 for h in dep.attach_handles
               if h.in_use and (h.k8s_claim is not None or h.awaits_removal))


def _unavailable_in_card(device, dep):
    """Why ``dep`` may not be bound, but for its card or a region of it
    being held: the allocation of the card provider's slots says that."""
    return any(reason != host_inventory.WHOLE_CARD_IN_USE for reason in
               host_inventory.unavailable_reasons(device, dep))


def _card_inventories(device, deps):
    """A whole card and its regions: one slot of the regions' class per
    region (a region asks for one, the whole card for all) and every
    region's local memory, a region taking at most its own; reserved for
    each region that may not be bound now, all of it when the card itself
    may not be. So the whole card is offered only while every region is
    free, and no region while the card is held (its allocation takes
    every slot)."""
    card_out = any(_unavailable_in_card(device, d) for d in deps
                   if shared_functions.is_whole_card(d.traits))
    total, reserved = {}, {}
    for region in deps:
        if shared_functions.is_whole_card(region.traits):
            continue
        out = card_out or _unavailable_in_card(device, region)
        for rc, amount in ((deployable_rc(device, region),
                            region.num_accelerators),
                           (LOCAL_MEMORY_RC, region.local_memory_mb)):
            if amount > 0:
                total[rc] = total.get(rc, 0) + amount
                reserved[rc] = reserved.get(rc, 0) + (amount if out else 0)
    inv = {rc: dict(_inventory(amount, False), reserved=reserved[rc])
           for rc, amount in total.items()}
    if LOCAL_MEMORY_RC in inv:
        # A region takes its own memory, never a sibling's too.
        inv[LOCAL_MEMORY_RC]['max_unit'] = max(
            d.local_memory_mb for d in deps)
    return inv


def _carrier_name(device_name, device, dep):
    """The provider that offers ``dep``: the device's for a whole-device
    class (a PGPU) and for siblings that are the whole device behind one
    function, else a child (common/shared_functions.carrier_rp_name)."""
    if deployable_rc(device, dep) in DEVICE_LEVEL_RCS or \
            device.offered_by_card:
        return device_name
    group = device.shared_groups.get(dep.name)
    if group is None:
        return child_rp_name(device_name, dep)
    return shared_functions.carrier_rp_name(
        device_name, _short_name(device_name, dep.name), frozenset(
            _short_name(device_name, n) for n in group),
        [_short_name(device_name, d.name) for d in device.deployables])


def _short_name(device_name, name):
    # NOTE: the conductor stores <device RP>_<driver's name>; the carrier
    # is named from the driver's names, as the report does.
    prefix = device_name + '_'
    return name[len(prefix):] if name.startswith(prefix) else name


def numa_trait(node):
    """The trait a profile names to ask for NUMA node ``node``."""
    return 'CUSTOM_NUMA_NODE_%d' % node


def numa_rp_name(hostname, node):
    return naming.numa_rp_name(hostname, node)


def _deployable_traits(device, dep):
    traits = {trait_name(t) for t in dep.traits}
    node = dep.numa_node if dep.numa_node is not None else device.numa_node
    if node is not None:
        traits.add(numa_trait(node))
    if dep.region_type:
        traits.add(_custom('FPGA_REGION_' + dep.region_type))
        traits.add(PROGRAMMABLE_TRAIT)
    if dep.function_id:
        traits.add(_custom('FUNCTION_ID_' + dep.function_id))
    return traits


# PCI vendor ids to the names Cyborg's traits use (CUSTOM_FPGA_INTEL,
# CUSTOM_FPGA_XILINX, ...); an unknown vendor keeps its id.
VENDOR_NAMES = {
    '0x8086': 'INTEL',
    '0x10ee': 'XILINX',
    '0x10de': 'NVIDIA',
    '0x1002': 'AMD',
    '0x19e5': 'HUAWEI',
    '0x1bd4': 'INSPUR',
}


def vendor_trait(device):
    vendor = VENDOR_NAMES.get(device.vendor.lower(), device.vendor)
    return _custom('%s_%s' % (device.type, vendor))


def _device_providers(hostname, parent_uuid, device, tree):
    name = device_rp_name(hostname, device)
    dev_rp = Provider(name=name, uuid=rp_uuid(name), parent_uuid=parent_uuid)
    # NOTE: vendor and programmable go on the children too: a granular
    # request group must find its traits on the provider that gives the
    # resources, so a profile asking FPGA=1 + CUSTOM_FPGA_INTEL needs
    # both on the region.
    common = {OWNER_TRAIT, vendor_trait(device)}
    dev_traits = set(common)
    if device.numa_node is not None:
        dev_traits.add(numa_trait(device.numa_node))
    offers = {}   # provider name -> [deployables it offers]
    for dep in device.deployables:
        offers.setdefault(_carrier_name(name, device, dep), []).append(dep)
    children = []
    for carrier, deps in offers.items():
        traits = set().union(*(_deployable_traits(device, d) for d in deps))
        if PROGRAMMABLE_TRAIT in traits:
            dev_traits.add(PROGRAMMABLE_TRAIT)
        inv = _offer_inventories(device, deps)
        if carrier == name:
            dev_rp.inventories.update(inv)
            dev_traits |= traits
            provider = dev_rp
        else:
            provider = Provider(name=carrier, uuid=rp_uuid(carrier),
                                parent_uuid=dev_rp.uuid, inventories=inv,
                                traits=frozenset(common | traits))
            children.append(provider)
        for dep in deps:
            tree.deployable_rps[dep.uuid] = provider.uuid
            if len(deps) > 1:
                # The provider it had alone: an upgrade moves what that
                # one holds (placement/reporter.py).
                tree.moved[rp_uuid(child_rp_name(name, dep))] = \
                    provider.uuid
    if device.type == 'GPU' and not device.deployables:
        # A GPU the driver did not split is one passthrough PGPU.
        dev_rp.inventories[orc.PGPU] = _inventory(1, not device.schedulable)
    dev_rp.traits = frozenset(dev_traits)
    tree.device_rps[device.uuid] = dev_rp.uuid
    return [dev_rp] + children


def _numa_provider(hostname, root_uuid, node):
    name = numa_rp_name(hostname, node)
    return Provider(name=name, uuid=rp_uuid(name), parent_uuid=root_uuid,
                    traits=frozenset({OWNER_TRAIT, NUMA_ROOT_TRAIT,
                                      numa_trait(node)}))


def build_tree(hostname, root_uuid, devices, numa_layer=True):
    """The desired ``Tree`` under the compute node RP ``root_uuid``; with
    ``numa_layer``, a NUMA node provider above the devices of each known
    node."""
    tree = Tree(providers=[], device_rps={}, deployable_rps={}, moved={},
                numa_layer=numa_layer)
    nodes = {}
    if numa_layer:
        for node in sorted({d.numa_node for d in devices
                            if d.numa_node is not None}):
            nodes[node] = _numa_provider(hostname, root_uuid, node)
        tree.providers.extend(nodes.values())
    for device in sorted(devices, key=lambda d: d.uuid):
        parent = nodes.get(device.numa_node)
        tree.providers.extend(_device_providers(
            hostname, parent.uuid if parent else root_uuid, device, tree))
    return tree


# --- what a sibling offers alone (which one a bind takes: inventory/views)

def _alone(device, dep):
    """(traits, {resource class: total}) ``dep`` would offer on a
    provider of its own."""
    inv = {deployable_rc(device, dep): dep.num_accelerators,
           LOCAL_MEMORY_RC: dep.local_memory_mb}
    if shared_functions.is_whole_card(dep.traits):
        # The whole card takes every region's slot.
        inv[deployable_rc(device, dep)] = sum(
            d.num_accelerators for d in device.deployables
            if not shared_functions.is_whole_card(d.traits))
    return ({OWNER_TRAIT, vendor_trait(device)} |
            _deployable_traits(device, dep), inv)


def mismatch(device, dep, group, region_type=None):
    """Why ``dep`` alone could not serve request group ``group`` (a device
    profile group: resources:RC, trait:NAME required|forbidden), or None.
    ``region_type``: the one of the bitstream the group loads."""
    traits, inv = _alone(device, dep)
    asks_card = any(key.partition(':')[0] == 'trait' and
                    key.partition(':')[2].strip() ==
                    shared_functions.WHOLE_CARD_TRAIT and value == 'required'
                    for key, value in group.items())
    if asks_card != shared_functions.is_whole_card(traits):
        return 'the group asks for %s' % ('the whole card' if asks_card
                                          else 'a region, not the card')
    for key, value in sorted(group.items()):
        kind, _, name = key.partition(':')
        name = name.strip()
        if kind == 'trait' and (value == 'required') != (name in traits):
            return 'trait %s is %s' % (name, value)
        if kind == 'resources' and inv.get(
                resource_class_name(name), 0) < int(str(value).strip()):
            return 'it has less than %s %s' % (value, name)
    if region_type and dep.region_type != region_type:
        return 'the bitstream is for region type %s' % region_type
    return None
