"""conductor/programming: pre-flight refusals and job orchestration."""
import datetime
import types

import pytest

from cyborg_lite.bitstreams import checks as programming_checks
from cyborg_lite.bitstreams import trust as bitstream_trust
from cyborg_lite.common import exception
from cyborg_lite.conductor import programming
from cyborg_lite.db import deployables as deployables_db
from cyborg_lite.db import models
from cyborg_lite.db import programming_jobs as jobs_db
from tests.unit.bitstreams import builders
from tests.unit.bitstreams.conftest import add_bitstream
from tests.unit.bitstreams.conftest import add_bound_arq
from tests.unit.bitstreams.conftest import add_region
from tests.unit.bitstreams.conftest import FUNCTION_ID
from tests.unit.bitstreams.conftest import REGION_TYPE

DASHED = '9346116d-5a7d-4b3a-9b1b-8e5b5d7a1c2e'
# Signatures not looked at: what the checks before them see.
OPEN = bitstream_trust.Trust('disabled', 'test', None, None)
ARQ1 = deployables_db.RegionHolder('arq1', None)
ARQ1_ON_SIBLING = deployables_db.RegionHolder('arq1', 'region1')


def _bitstream(**kw):
    values = dict(uuid='bs1', status='active', sha256='a' * 64,
                  region_type=DASHED.upper(), visibility='private',
                  project_id='p1')
    values.update(kw)
    return types.SimpleNamespace(**values)


def _region(**kw):
    values = dict(name='region0', region_type=REGION_TYPE)
    values.update(kw)
    return types.SimpleNamespace(**values)


def test_preflight_passes_and_ids_compare_normalised():
    programming_checks.preflight(_bitstream(), _region(), project_id='p1',
                                 trust=OPEN)


@pytest.mark.parametrize('bitstream,region,kwargs,error,match', [
    (_bitstream(status='queued'), _region(), {}, exception.Conflict,
     'bs1 is queued, not active'),
    (_bitstream(sha256=None), _region(), {}, exception.Invalid,
     'has no sha256'),
    (_bitstream(region_type='ff' * 16), _region(), {}, exception.Invalid,
     'region type mismatch: bitstream bs1 fits f+, region region0 is 9346'),
    (_bitstream(region_type=None), _region(), {}, exception.Invalid,
     'declares no region type'),
    (_bitstream(), _region(region_type=None), {}, exception.Invalid,
     'region0 has no region type'),
    (_bitstream(project_id='p2'), _region(), {}, exception.BitstreamNotFound,
     'bs1'),
    (_bitstream(), _region(), {'holder': ARQ1}, exception.Conflict,
     'in use by accelerator request arq1;'),
    (_bitstream(), _region(), {'holder': ARQ1_ON_SIBLING},
     exception.Conflict, 'region region0 is in use by accelerator request '
     'arq1, which holds region region1 behind the same PCI function'),
    (_bitstream(), _region(), {'holder': ARQ1, 'force': True},
     exception.Forbidden, 'Only an admin may force'),
])
def test_preflight_refusals(bitstream, region, kwargs, error, match):
    kwargs.setdefault('project_id', 'p1')
    with pytest.raises(error, match=match):
        programming_checks.preflight(bitstream, region, trust=OPEN,
                                     **kwargs)


def test_preflight_admin_force_and_public():
    programming_checks.preflight(_bitstream(project_id='p2'), _region(),
                                 holder=ARQ1, is_admin=True,
                                 force=True, trust=OPEN)
    programming_checks.preflight(
        _bitstream(project_id='p2', visibility='public'), _region(),
        project_id='p1', trust=OPEN)


def test_create_job_for_and_agent_job(db):
    region, bitstream = add_region(), add_bitstream()
    job, bs, dep, device, trust = programming.create_job_for(
        bitstream.uuid, region.uuid, user_id='u1', project_id='p1')
    assert (trust.policy, trust.verdict.status) == ('warn', 'unsigned')
    assert (job.state, job.hostname, job.requester_user_id) == \
        ('queued', 'host1', 'u1')
    payload = programming.agent_job(job, bs, dep, device, 'region0')
    assert payload == {
        'uuid': job.uuid, 'try': 1, 'identity': device.identity,
        'region_name': 'region0', 'region_type': REGION_TYPE,
        'bitstream': {'uuid': bitstream.uuid, 'sha256': 'a' * 64,
                      'size': 1234, 'format': 'gbs',
                      'region_type': REGION_TYPE,
                      'function_id': FUNCTION_ID},
        'signature': None}


def test_create_job_for_refuses_bound_region_without_job(db):
    region, bitstream = add_region(), add_bitstream()
    arq = add_bound_arq(region.id)
    with pytest.raises(exception.Conflict, match=arq.uuid):
        programming.create_job_for(bitstream.uuid, region.uuid,
                                   project_id='p1')
    with pytest.raises(exception.Forbidden):
        programming.create_job_for(bitstream.uuid, region.uuid,
                                   project_id='p1', force=True)
    assert jobs_db.list_jobs() == []
    job = programming.create_job_for(bitstream.uuid, region.uuid,
                                     is_admin=True, force=True)[0]
    assert job.force is True


def test_create_job_for_wrong_region_type(db):
    region = add_region(region_type='0' * 32)
    with pytest.raises(exception.Invalid, match='region type mismatch'):
        programming.create_job_for(add_bitstream().uuid, region.uuid,
                                   project_id='p1')
    assert jobs_db.list_jobs() == []


def test_record_progress_walk_and_idempotence(db):
    region, bitstream = add_region(), add_bitstream()
    job = programming.create_job_for(bitstream.uuid, region.uuid,
                                     project_id='p1')[0]
    for state in ('downloading', 'downloading', 'programming', 'verifying'):
        assert programming.record_progress(job.uuid, state).state == state
    done = programming.record_progress(job.uuid, 'succeeded',
                                       function_id=builders.AFU_UUID.upper())
    assert done.state == 'succeeded'
    dep, _dev = deployables_db.load_region(region.uuid)
    assert dep.function_id == FUNCTION_ID
    with pytest.raises(exception.JobStateConflict):
        programming.record_progress(job.uuid, 'failed', error='late')
    assert jobs_db.get(job.uuid).state == 'succeeded'


def test_record_progress_refusals(db):
    region, bitstream = add_region(), add_bitstream()
    job = programming.create_job_for(bitstream.uuid, region.uuid,
                                     project_id='p1')[0]
    with pytest.raises(exception.Invalid, match="cannot report state"):
        programming.record_progress(job.uuid, 'cancelled')
    with pytest.raises(exception.JobStateConflict):
        programming.record_progress(job.uuid, 'succeeded')
    failed = programming.record_progress(job.uuid, 'failed')
    assert failed.error == 'the agent reported a failure'


def test_reap_stale_jobs(db, conf):
    conf.set_override('max_attempts', 1, group='programming')
    region, bitstream = add_region(), add_bitstream()
    job = programming.create_job_for(bitstream.uuid, region.uuid,
                                     project_id='p1')[0]
    programming.record_progress(job.uuid, 'downloading')
    assert programming.reap_stale_jobs() == []
    later = models.utcnow() + datetime.timedelta(hours=2)
    reaped = programming.reap_stale_jobs(now=later)
    assert [(j.uuid, j.state) for j in reaped] == [(job.uuid, 'failed')]
    assert 'no progress from the agent within 120 s' in reaped[0].error


def test_abandon_host_jobs_on_agent_restart(db):
    mine, theirs = add_region(), add_region(name='h2_r0', hostname='host2')
    bitstream = add_bitstream()
    job = programming.create_job_for(bitstream.uuid, mine.uuid,
                                     project_id='p1')[0]
    other = programming.create_job_for(bitstream.uuid, theirs.uuid,
                                       project_id='p1')[0]
    programming.record_progress(job.uuid, 'downloading')
    programming.record_progress(job.uuid, 'programming')
    reaped = programming.abandon_host_jobs('host1')
    assert [(j.uuid, j.state, j.attempts) for j in reaped] == \
        [(job.uuid, 'queued', 1)]
    assert 'agent on host1 restarted' in reaped[0].error
    assert jobs_db.get(other.uuid).state == 'queued'
    assert jobs_db.get(other.uuid).attempts == 0


def _skew_service_clock(monkeypatch, seconds):
    """This host's clock (what models.utcnow reads) off by ``seconds``."""
    real = models.utcnow
    monkeypatch.setattr(models, 'utcnow', lambda: real() +
                        datetime.timedelta(seconds=seconds))


def test_job_times_are_the_databases_not_a_conductors(db, conf,
                                                      monkeypatch):
    """Issue 13.11 for jobs: the conductor that takes a heartbeat and the
    one that reaps may be different hosts with different clocks."""
    region, bitstream = add_region(), add_bitstream()
    job = programming.create_job_for(bitstream.uuid, region.uuid,
                                     project_id='p1')[0]
    # A conductor whose clock is an hour behind records the progress.
    _skew_service_clock(monkeypatch, -3600)
    programming.record_progress(job.uuid, 'downloading')
    jobs_db.heartbeat(job.uuid)
    monkeypatch.undo()
    assert programming.reap_stale_jobs() == []
    # A conductor whose clock is an hour ahead runs the reaper.
    _skew_service_clock(monkeypatch, 3600)
    assert programming.reap_stale_jobs() == []
    assert jobs_db.get(job.uuid).state == 'downloading'
