"""db/inventory.store_rp_uuids: the provider uuids the Placement sink
computed, stored where they differ without moving a row's version (a
report updating the row on the version it read must not fail for it)."""
from cyborg_lite.db import inventory
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.unit.conductor import bind_helpers as h

DEVICE_RP = '0a0a0a0a-0000-4000-8000-000000000001'
REGION_RP = '0a0a0a0a-0000-4000-8000-000000000002'


def _rows(region):
    with session.reader() as s:
        dep = s.get(models.Deployable, region['deployable_id'])
        dev = s.get(models.Device, dep.device_id)
        return dev, dep


def test_storing_rp_uuids_leaves_the_versions(db):
    region = h.make_region(deployable_rp=False)
    dev, dep = _rows(region)

    assert inventory.store_rp_uuids({dev.uuid: DEVICE_RP},
                                    {dep.uuid: REGION_RP}) == 2

    dev_after, dep_after = _rows(region)
    assert (dev_after.rp_uuid, dev_after.version) == (DEVICE_RP, dev.version)
    assert (dep_after.rp_uuid, dep_after.version) == (REGION_RP, dep.version)
    # Stored: nothing differs any more.
    assert inventory.store_rp_uuids({dev.uuid: DEVICE_RP},
                                    {dep.uuid: REGION_RP}) == 0
