"""What one host offers, as plain frozen views: the input of every sink.

``load(hostname)`` reads the host's devices with their deployables and
attach handles in one transaction and returns a ``HostInventory``,
detached from any session. A deployable's resource class and traits come
from its attributes, as in Cyborg: key ``rc`` is the resource class, keys
``trait0``..``traitN`` are trait names. Nothing here is specific to one
consumer: the Placement sink builds a provider tree from it
(objects/provider_tree.py), a Kubernetes sink ResourceSlices.
"""
import dataclasses
import json

from cyborg_lite.common import states
from cyborg_lite.db import devices as devices_db


@dataclasses.dataclass(frozen=True)
class AttachHandleView:
    uuid: str
    attach_type: str
    attach_info: dict
    in_use: bool = False


@dataclasses.dataclass(frozen=True)
class DeployableView:
    uuid: str
    name: str
    num_accelerators: int = 1
    resource_class: str | None = None
    region_type: str | None = None
    function_id: str | None = None
    local_memory_mb: int = 0
    traits: tuple = ()
    rp_uuid: str | None = None
    function_name: str | None = None
    bitstream_id: str | None = None
    attributes: tuple = ()  # (key, value) pairs other than rc and traits
    attach_handles: tuple = ()
    device_state: str = 'available'   # common/states.DEVICE

    @property
    def cleaning_reason(self):
        """'pending_cleaning', 'cleaning' or 'error' while the wipe after
        its last tenant keeps it from schedulers (the reason's text is
        states.DEVICE_UNSCHEDULABLE_WHY); None when cleaning does not."""
        if self.device_state in states.DEVICE_SCHEDULABLE:
            return None
        return self.device_state


@dataclasses.dataclass(frozen=True)
class DeviceView:
    uuid: str
    type: str
    vendor: str
    identity: str
    pci_address: str | None = None
    health: str = 'healthy'
    status: str = 'enabled'
    rp_uuid: str | None = None
    deployables: tuple = ()
    model: str = ''
    driver_name: str | None = None

    @property
    def schedulable(self):
        # 'degraded' still works; only a broken or disabled card is hidden.
        return self.health != 'unhealthy' and self.status != 'maintaining'


def unschedulable_reasons(device, deployable):
    """Why ``deployable`` of ``device`` may not be offered to a scheduler
    now, as reason names; empty when it may.

    Cleaning's reasons are the deployable's device_state; the device's own
    (unhealthy, maintaining) hide every deployable of it.
    """
    reasons = []
    if not device.schedulable:
        reasons.append('unhealthy' if device.health == 'unhealthy'
                       else 'maintaining')
    if deployable.cleaning_reason is not None:
        reasons.append(deployable.cleaning_reason)
    return tuple(reasons)


@dataclasses.dataclass(frozen=True)
class HostInventory:
    hostname: str
    devices: tuple = ()


def _is_trait_key(key):
    return key.startswith('trait')


def _handle_view(handle):
    return AttachHandleView(uuid=handle.uuid, attach_type=handle.attach_type,
                            attach_info=json.loads(handle.attach_info),
                            in_use=bool(handle.in_use))


def _deployable_view(dep, attrs, handles):
    # Sorted by key so trait order (and so the tree) is deterministic.
    traits = tuple(v for k, v in sorted(attrs.items())
                   if _is_trait_key(k) and v)
    return DeployableView(
        uuid=dep.uuid, name=dep.name,
        num_accelerators=dep.num_accelerators or 0,
        resource_class=attrs.get('rc') or None,
        region_type=dep.region_type, function_id=dep.function_id,
        local_memory_mb=dep.local_memory_mb or 0, traits=traits,
        rp_uuid=dep.rp_uuid, function_name=dep.function_name,
        bitstream_id=dep.bitstream_id,
        attributes=tuple((k, v) for k, v in sorted(attrs.items())
                         if k != 'rc' and not _is_trait_key(k)),
        attach_handles=tuple(_handle_view(h) for h in handles),
        device_state=dep.device_state)


def _device_view(dev, deployables):
    return DeviceView(
        uuid=dev.uuid, type=dev.type, vendor=dev.vendor,
        identity=dev.identity, pci_address=dev.pci_address,
        health=dev.health, status=dev.status, rp_uuid=dev.rp_uuid,
        deployables=tuple(deployables), model=dev.model or '',
        driver_name=dev.driver_name)


def load(hostname, url=None):
    """The HostInventory of ``hostname`` as the database has it now."""
    rows = devices_db.host_rows(hostname, url)
    by_device = {d.id: [] for d in rows.devices}
    for dep in rows.deployables:
        by_device[dep.device_id].append(_deployable_view(
            dep, rows.attributes.get(dep.id, {}),
            rows.handles.get(dep.id, [])))
    return HostInventory(hostname, tuple(
        _device_view(d, by_device[d.id]) for d in rows.devices))
