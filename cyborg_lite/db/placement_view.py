"""What the Placement sync reads from and writes to the database.

``host_devices(hostname)`` returns the host's devices as
``placement.tree.DeviceView`` objects (plain, detached from any session).
A deployable's resource class and traits come from its attributes, as in
Cyborg: key ``rc`` is the resource class, keys ``trait0``..``traitN`` are
trait names.

``store_rp_uuids(device_rps, deployable_rps)`` records the provider uuids
the sync computed, touching only rows whose value differs.
"""
import sqlalchemy as sa

from cyborg_lite.db import models
from cyborg_lite.db import session
from cyborg_lite.placement import tree


def _attributes_by_deployable(s, deployable_ids):
    result = {i: {} for i in deployable_ids}
    if not deployable_ids:
        return result
    rows = s.execute(sa.select(models.Attribute.deployable_id,
                               models.Attribute.key,
                               models.Attribute.value)
                     .where(models.Attribute.deployable_id.in_(
                         deployable_ids)))
    for dep_id, key, value in rows:
        result[dep_id][key] = value
    return result


def _deployable_view(dep, attrs):
    # Sorted by key so trait order (and so the tree) is deterministic.
    traits = tuple(v for k, v in sorted(attrs.items())
                   if k.startswith('trait') and v)
    return tree.DeployableView(
        uuid=dep.uuid, name=dep.name,
        num_accelerators=dep.num_accelerators or 0,
        resource_class=attrs.get('rc') or None,
        region_type=dep.region_type, function_id=dep.function_id,
        local_memory_mb=dep.local_memory_mb or 0, traits=traits,
        rp_uuid=dep.rp_uuid)


def _device_view(dev, deployables):
    return tree.DeviceView(
        uuid=dev.uuid, type=dev.type, vendor=dev.vendor,
        identity=dev.identity, pci_address=dev.pci_address,
        health=dev.health, status=dev.status, rp_uuid=dev.rp_uuid,
        deployables=tuple(deployables))


def host_devices(hostname, url=None):
    """[DeviceView] for every device of ``hostname``, with deployables."""
    with session.reader(url) as s:
        devices = s.scalars(sa.select(models.Device)
                            .where(models.Device.hostname == hostname)
                            .order_by(models.Device.id)).all()
        deps = s.scalars(sa.select(models.Deployable)
                         .where(models.Deployable.device_id.in_(
                             [d.id for d in devices]))
                         .order_by(models.Deployable.id)).all()
        attrs = _attributes_by_deployable(s, [d.id for d in deps])
        by_device = {d.id: [] for d in devices}
        for dep in deps:
            by_device[dep.device_id].append(
                _deployable_view(dep, attrs[dep.id]))
        return [_device_view(d, by_device[d.id]) for d in devices]


def _store(s, model, rp_uuids):
    # NOTE: a plain UPDATE that leaves ``version`` alone: rp_uuid is
    # derived data only the sync writes, and bumping the version would
    # make a concurrent report's optimistic update fail for nothing.
    changed = 0
    for row_uuid, rp in rp_uuids.items():
        result = s.execute(
            sa.update(model.__table__)
            .where(model.__table__.c.uuid == row_uuid)
            .where(sa.or_(model.__table__.c.rp_uuid.is_(None),
                          model.__table__.c.rp_uuid != rp))
            .values(rp_uuid=rp))
        changed += result.rowcount
    return changed


def store_rp_uuids(device_rps, deployable_rps, url=None):
    """Set rp_uuid where it differs; the number of rows changed."""
    with session.writer(url) as s:
        return (_store(s, models.Device, device_rps) +
                _store(s, models.Deployable, deployable_rps))
