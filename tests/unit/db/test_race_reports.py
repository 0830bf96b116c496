"""An agent report's value UPDATE of a region racing a programming job's
write of the region's function, on PostgreSQL: the job's transaction is
held open after its UPDATE, the report's UPDATE waits on the row (seen in
pg_stat_activity), then the job commits. The report's UPDATE, on the
version it read, matches no row; the report starts over from the row the
job left, and both land: the job succeeded, the rows are what the report
says (bitstream_id, which no report sets, stays the job's).
"""
import pytest
import sqlalchemy as sa

from cyborg_lite.common import device_records
from cyborg_lite.conductor import report
from cyborg_lite.db import deployables
from cyborg_lite.db import inventory
from cyborg_lite.db import models
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.db.sql import session
from tests.unit.bitstreams.conftest import add_bitstream
from tests.unit.conductor import report_helpers as h
from tests.unit.conductor import test_report_unchanged as unchanged
from tests.unit.db.held import Held
from tests.unit.db.held import blocked_behind

pytestmark = pytest.mark.postgresql
HOST = unchanged.HOST
LOADED = 'f' * 32


def _region0():
    name = device_records.deployable_db_name(HOST, unchanged.CARD0, 'region0')
    with session.reader() as s:
        return s.scalars(sa.select(models.Deployable).where(
            models.Deployable.name == name)).one()


def _verifying_job(region_id, bitstream):
    job = jobs_db.create_job(region_id, bitstream.id)
    for state in ('downloading', 'programming', 'verifying'):
        job = jobs_db.transition(job.uuid, job.state, state)
    return job


@pytest.mark.parametrize('scanned', ['before the job', 'after the job'])
def test_a_report_value_update_races_a_jobs_function(pg_db, monkeypatch,
                                                     scanned):
    unchanged._stored()
    region = _region0()
    bitstream = add_bitstream()
    job = _verifying_job(region.id, bitstream)
    card = h.fpga(unchanged.CARD0)
    card['deployables'][0]['local_memory_mb'] = 8192
    if scanned == 'after the job':
        card['deployables'][0].update(function_id=LOADED,
                                      function_name='nlb')
    reported = [h.ok('fpga', card, h.fpga(unchanged.CARD1)), h.ok('gpu')]
    held, record = Held(), deployables.record_loaded

    def record_and_hold(s, *args):
        record(s, *args)
        s.flush()              # the region's UPDATE sent; its lock held
        held.hold()
    monkeypatch.setattr(deployables, 'record_loaded', record_and_hold)
    monkeypatch.setattr(inventory.time, 'sleep', lambda seconds: None)

    results = blocked_behind(
        held, lambda: jobs_db.succeed(job.uuid, LOADED, 'nlb'),
        lambda: report.handle_report(HOST, reported))

    assert getattr(results['first'], 'state', None) == 'succeeded', results
    assert results['second']['changed'] is True, results
    after = _region0()
    assert after.version == region.version + 2     # each wrote once
    assert (after.bitstream_id, after.local_memory_mb) == (
        bitstream.uuid, 8192)
    assert after.function_id == (LOADED if scanned == 'after the job'
                                 else None)
    # Committed last, the report's rows stand: the same report again
    # finds nothing to write.
    with h.count_writes() as writes:
        assert report.handle_report(HOST, reported)['changed'] is False
    assert writes == []
