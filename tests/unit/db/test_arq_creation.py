"""db/arqs.create_arqs: the profile is read, then the ARQs inserted (on
SQLite each its own transaction, see session.statement_writer); a
profile deleted in between leaves no ARQ and is a 404."""
import pytest
import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.db import arqs
from cyborg_lite.db import device_profiles
from cyborg_lite.db import models
from cyborg_lite.db.sql import session

GROUPS = [{'resources:FPGA': '2'}, {'resources:FPGA': '1'}]


def _arq_count():
    with session.core_reader() as conn:
        return conn.scalar(sa.select(sa.func.count()).select_from(
            models.AcceleratorRequest.__table__))


def test_one_arq_per_accelerator_of_each_group(db):
    device_profiles.create_profile('p', GROUPS)
    made = arqs.create_arqs(device_profiles.ALL, 'p', 'project')
    assert [(v.arq.device_profile_group_id, v.arq.state) for v in made] == \
        [(0, 'Initial'), (0, 'Initial'), (1, 'Initial')]
    assert _arq_count() == 3
    stored = arqs.get_arqs(device_profiles.ALL, [v.arq.uuid for v in made])
    assert {v.arq.uuid for v in stored} == {v.arq.uuid for v in made}
    assert {v.device_profile_name for v in stored} == {'p'}


def test_a_profile_deleted_after_it_was_read_is_not_found(db, monkeypatch):
    device_profiles.create_profile('p', GROUPS)
    read = device_profiles.groups_of

    def read_then_deleted(profile):
        groups = read(profile)
        device_profiles.delete_profiles(device_profiles.ALL, names=['p'])
        return groups

    monkeypatch.setattr(device_profiles, 'groups_of', read_then_deleted)
    with pytest.raises(exception.DeviceProfileNotFound):
        arqs.create_arqs(device_profiles.ALL, 'p', 'project')
    assert _arq_count() == 0
    monkeypatch.setattr(device_profiles, 'groups_of', read)
    with pytest.raises(exception.DeviceProfileNotFound):
        arqs.create_arqs(device_profiles.ALL, 'p', 'project')
