"""db/bitstreams on SQLite and PostgreSQL."""
import pytest

from cyborg_lite.common import exception
from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import programming_jobs as jobs_db
from tests.unit.bitstreams.conftest import add_bitstream
from tests.unit.bitstreams.conftest import FUNCTION_ID
from tests.unit.bitstreams.conftest import REGION_TYPE


def test_create_get_and_upload(db):
    row = add_bitstream(uploaded=False, version='1.0', vendor='intel',
                        local_memory_mb=512, visibility='public')
    assert row.status == 'queued' and row.sha256 is None
    assert row.created_at is not None
    done = bitstreams_db.set_uploaded(row.uuid, 'b' * 64, 99,
                                      function_name='nlb_400')
    assert (done.status, done.sha256, done.size, done.function_name) == \
        ('active', 'b' * 64, 99, 'nlb_400')
    got = bitstreams_db.get(row.uuid)
    assert (got.version, got.vendor, got.local_memory_mb, got.status) == \
        ('1.0', 'intel', 512, 'active')


def test_upload_twice_refused_and_row_untouched(db):
    row = add_bitstream()
    with pytest.raises(exception.Conflict, match='is active; this needs'):
        bitstreams_db.set_uploaded(row.uuid, 'c' * 64, 1)
    assert bitstreams_db.get(row.uuid).sha256 == 'a' * 64


def test_upload_cannot_set_other_fields(db):
    row = add_bitstream(uploaded=False)
    with pytest.raises(exception.Invalid, match='project_id'):
        bitstreams_db.set_uploaded(row.uuid, 'c' * 64, 1, project_id='x')
    assert bitstreams_db.get(row.uuid).status == 'queued'


def test_set_status(db):
    row = add_bitstream(uploaded=False)
    assert bitstreams_db.set_status(row.uuid, ('queued',),
                                    'saving').status == 'saving'
    with pytest.raises(exception.Conflict):
        bitstreams_db.set_status(row.uuid, ('queued',), 'killed')
    with pytest.raises(exception.Invalid, match='status must be one of'):
        bitstreams_db.set_status(row.uuid, ('saving',), 'gone')


@pytest.mark.parametrize('values,match', [
    ({'name': ''}, 'name must be'),
    ({'format': 'zip'}, 'format must be one of'),
    ({'visibility': 'shared'}, 'visibility must be one of'),
    ({'local_memory_mb': -1}, 'local_memory_mb must be'),
    ({'status': 'active'}, 'unknown bitstream fields: status'),
])
def test_create_refuses_bad_values_and_stores_nothing(db, values, match):
    with pytest.raises(exception.Invalid, match=match):
        add_bitstream(uploaded=False, **values)
    assert bitstreams_db.list_bitstreams() == []


def test_get_missing(db):
    with pytest.raises(exception.BitstreamNotFound, match='nope'):
        bitstreams_db.get('nope')


def test_list_filters(db):
    mine = add_bitstream(vendor='intel')
    public = add_bitstream(project_id='p2', visibility='public',
                           function_id='f' * 32)
    other = add_bitstream(project_id='p2', region_type='r2')

    def uuids(**kw):
        return [r.uuid for r in bitstreams_db.list_bitstreams(**kw)]

    assert uuids() == [mine.uuid, public.uuid, other.uuid]
    assert uuids(region_type=REGION_TYPE) == [mine.uuid, public.uuid]
    assert uuids(function_id=FUNCTION_ID) == [mine.uuid, other.uuid]
    assert uuids(vendor='intel') == [mine.uuid]
    assert uuids(visibility='public') == [public.uuid]
    assert uuids(project_id='p2') == [public.uuid, other.uuid]
    assert uuids(visible_to_project='p1') == [mine.uuid, public.uuid]
    assert uuids(status='queued') == []
    assert uuids(sha256='a' * 64) == [mine.uuid, public.uuid, other.uuid]


def test_delete_and_shared_bytes(db):
    first, second = add_bitstream(), add_bitstream()
    assert bitstreams_db.sha256_in_use('a' * 64, except_uuid=first.uuid)
    assert bitstreams_db.delete(first.uuid).uuid == first.uuid
    assert not bitstreams_db.sha256_in_use('a' * 64, except_uuid=second.uuid)
    with pytest.raises(exception.BitstreamNotFound):
        bitstreams_db.get(first.uuid)


def test_delete_refused_while_a_job_uses_it(db, region, bitstream):
    job = jobs_db.create_job(region.id, bitstream.id)
    with pytest.raises(exception.BitstreamInUse, match=job.uuid):
        bitstreams_db.delete(bitstream.uuid)
    jobs_db.cancel(job.uuid)
    with pytest.raises(exception.BitstreamInUse,
                       match='1 finished programming jobs refer to it'):
        bitstreams_db.delete(bitstream.uuid)
    assert bitstreams_db.get(bitstream.uuid).status == 'active'
