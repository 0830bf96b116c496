"""Provider names and uuids: the uuid is Cyborg's uuid3 of the name."""
import uuid

import pytest

from cyborg_lite.placement import naming


@pytest.mark.parametrize('name', [
    'compute1_0000:3b:00.0',
    'compute1_0000:3b:00.0_compute1_0000:3b:00.0_region1',
    'fleet-00999_0000:af:00.7_fleet-00999_0000:af:00.7_region0',
    '', 'x', 'hôte_ünïcode_名前', 'a' * 300,
])
def test_rp_uuid_is_uuid3_of_the_name(name):
    assert naming.rp_uuid(name) == str(uuid.uuid3(uuid.NAMESPACE_DNS, name))


def test_rp_uuid_of_many_names():
    for i in range(2000):
        name = 'host%d_0000:%02x:00.%d_region%d' % (i, i % 256, i % 8, i % 3)
        assert naming.rp_uuid(name) == str(uuid.uuid3(uuid.NAMESPACE_DNS,
                                                      name))
