"""Host inventories for the ResourceSlice tests: FPGA cards with PR regions,
like the fake driver's PAC Arria 10 cards, and a GPU."""
import dataclasses
import types
import uuid

from cyborg_lite.inventory import views as host_inventory
from cyborg_lite.kubernetes import inventory
from cyborg_lite.kubernetes import view as k8s_view

DRIVER = 'cyborg-lite.openstack.org'
REGION_TYPE = '9346116d5a7d4b3a9b1b8e5b5d7a1c2e'
FUNCTION_ID = 'd8424dc4a4a3c413f89e433683f9040b'


def _uuid(*parts):
    return str(uuid.uuid5(uuid.NAMESPACE_URL, '/'.join(map(str, parts))))


def fpga_card(host, card, regions=2, shared=False, **changes):
    """A card; ``shared``: its regions all behind its PF (no SR-IOV)."""
    address = '0000:%02x:00.0' % (0x5e + card)
    names = ['region%d' % r for r in range(regions)]
    deployables = tuple(
        inventory.Deployable(uuid=_uuid(host, card, r), name=names[r],
                             resource_class='FPGA', region_type=REGION_TYPE,
                             function_id=FUNCTION_ID, local_memory_mb=4096,
                             shares_function=frozenset(names) if shared
                             else frozenset())
        for r in range(regions))
    values = dict(uuid=_uuid(host, card), type='FPGA', vendor='0x8086',
                  model='pac-a10', identity=address, pci_address=address,
                  pcie_root='pci0000:%02x' % (0x5d + card), numa_node=0,
                  programmable=True, deployables=deployables)
    values.update(changes)
    return inventory.Device(**values)


def gpu(host, index=0):
    address = '0000:%02x:00.0' % (0x80 + index)
    return inventory.Device(
        uuid=_uuid(host, 'gpu', index), type='GPU', vendor='0x10de',
        model='A100-SXM4-80GB', identity=address, pci_address=address,
        numa_node=1, memory_mb=81920,
        deployables=(inventory.Deployable(uuid=_uuid(host, 'gpu', index, 0),
                                          name='pgpu',
                                          resource_class='PGPU'),))


def host(name='node-1', cards=2, regions=2, with_gpu=False, shared=False):
    devices = tuple(fpga_card(name, c, regions, shared)
                    for c in range(cards))
    if with_gpu:
        devices += (gpu(name),)
    return inventory.HostInventory(hostname=name, node_name=name,
                                   devices=devices)


def change_region(inv, card, region, **changes):
    """The same host with one deployable changed."""
    devices = list(inv.devices)
    device = devices[card]
    deployables = list(device.deployables)
    deployables[region] = dataclasses.replace(deployables[region], **changes)
    devices[card] = dataclasses.replace(device, deployables=tuple(deployables))
    return dataclasses.replace(inv, devices=tuple(devices))


def change_device(inv, card, **changes):
    devices = list(inv.devices)
    devices[card] = dataclasses.replace(devices[card], **changes)
    return dataclasses.replace(inv, devices=tuple(devices))


def change_all_regions(inv, card, **changes):
    """The same host with every deployable of one device changed."""
    for region in range(len(inv.devices[card].deployables)):
        inv = change_region(inv, card, region, **changes)
    return inv


def stored_attributes(attributes):
    """A driver record's attributes as the database gives them back:
    sorted (key, text) pairs."""
    return tuple(sorted((k, str(v)) for k, v in attributes.items()))


def of_one_gpu(identity, model, deployables):
    """The Kubernetes inventory kubernetes/view.py makes of node-1 with
    one NVIDIA GPU ``identity`` of these host_inventory DeployableViews."""
    device = host_inventory.DeviceView(
        uuid='d', type='GPU', vendor='0x10de', identity=identity,
        pci_address=identity, model=model, deployables=deployables)
    conf = types.SimpleNamespace(node_names={}, informational_taints=True,
                                 unhealthy_taint_effect='NoSchedule')
    return k8s_view.k8s_inventory(host_inventory.HostInventory(
        'node-1', (device,)), 'node-1', conf)
