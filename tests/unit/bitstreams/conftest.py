"""Rows the bitstream and programming-job tests start from."""
import uuid

import pytest

from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.unit.bitstreams import builders

REGION_TYPE = builders.hex32(builders.INTERFACE_UUID)
FUNCTION_ID = builders.hex32(builders.AFU_UUID)


def add_region(name='host1_0000:5e:00.0_region0', region_type=REGION_TYPE,
               hostname='host1'):
    """A device with one FPGA region; returns the Deployable row."""
    with session.writer() as s:
        device = models.Device(
            uuid=str(uuid.uuid4()), type='FPGA', vendor='8086',
            model='pac', hostname=hostname, driver_name='dfl',
            identity=name + '-dev')
        s.add(device)
        s.flush()
        dep = models.Deployable(
            uuid=str(uuid.uuid4()), device_id=device.id, name=name,
            driver_name='dfl', region_type=region_type)
        s.add(dep)
    return dep


def add_bound_arq(deployable_id):
    with session.writer() as s:
        profile = models.DeviceProfile(uuid=str(uuid.uuid4()),
                                       name='dp-%s' % uuid.uuid4().hex[:8],
                                       profile_json='[]')
        s.add(profile)
        s.flush()
        arq = models.AcceleratorRequest(
            uuid=str(uuid.uuid4()), state='Bound',
            device_profile_id=profile.id, device_profile_group_id=0,
            deployable_id=deployable_id)
        s.add(arq)
    return arq


def add_bitstream(uploaded=True, **values):
    fields = dict(name='nlb', format='gbs', region_type=REGION_TYPE,
                  function_id=FUNCTION_ID, project_id='p1')
    fields.update(values)
    row = bitstreams_db.create(fields)
    if uploaded:
        row = bitstreams_db.set_uploaded(row.uuid, 'a' * 64, 1234)
    return row


@pytest.fixture
def region(db):
    return add_region()


@pytest.fixture
def bitstream(db):
    return add_bitstream()
