"""Programming jobs, conductor side: pre-flight checks and orchestration.

The checks take plain rows and flags and raise before any byte reaches
hardware (the hardware may not stop a bad image, so software must):
the bitstream is active with a known sha256, it may be used by the
requesting project, its region type is the region's, and the region is not
held by a Bound ARQ unless an admin forces it. RPC stays out of here: the
conductor manager calls these helpers and sends ``agent_job`` to the host.
"""
from cyborg_lite.common import exception
from cyborg_lite.common import naming
from cyborg_lite.common import states
from cyborg_lite.common.bitstream_formats import normalise_id
from cyborg_lite.conf import CONF
from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import models
from cyborg_lite.db import programming_jobs as jobs_db

# What an agent may report, and from which states each report may come.
PROGRESS_FROM = {
    'downloading': ('queued',),
    'programming': ('downloading',),
    'verifying': ('programming',),
    'succeeded': ('verifying',),
    'failed': states.JOB_ACTIVE,
}


def check_bitstream_usable(bitstream, project_id=None, is_admin=False):
    if (bitstream.visibility != 'public' and not is_admin and
            bitstream.project_id != project_id):
        # Not "forbidden": a private bitstream of another project is not
        # shown to this one at all.
        raise exception.BitstreamNotFound(uuid=bitstream.uuid)
    if bitstream.status != 'active':
        raise exception.Conflict(reason='bitstream %s is %s, not active: '
                                 'its image is not uploaded'
                                 % (bitstream.uuid, bitstream.status))
    if not bitstream.sha256:
        raise exception.Invalid(reason='bitstream %s has no sha256 to '
                                'verify its image against' % bitstream.uuid)


def check_region_type(bitstream, deployable):
    region = normalise_id(deployable.region_type, 'region_type')
    if region is None:
        raise exception.Invalid(reason='deployable %s has no region type: it '
                                'is not programmable' % deployable.name)
    wanted = normalise_id(bitstream.region_type, 'region_type')
    if wanted is None:
        raise exception.Invalid(reason='bitstream %s declares no region type'
                                % bitstream.uuid)
    if wanted != region:
        raise exception.Invalid(
            reason='region type mismatch: bitstream %s fits %s, region %s is '
                   '%s' % (bitstream.uuid, wanted, deployable.name, region))


def check_region_free(deployable, bound_arq_uuid, is_admin=False,
                      force=False):
    """Refuse to reprogram a region a Bound ARQ holds, unless forced."""
    if bound_arq_uuid is None:
        return
    if not force:
        raise exception.Conflict(
            reason='region %s is in use by Bound accelerator request %s; '
                   'an admin may force reprogramming'
                   % (deployable.name, bound_arq_uuid))
    if not is_admin:
        raise exception.Forbidden(
            message='Only an admin may force reprogramming region %s, in '
                    'use by accelerator request %s.'
                    % (deployable.name, bound_arq_uuid))


def preflight(bitstream, deployable, bound_arq_uuid=None, is_admin=False,
              force=False, project_id=None):
    """Every check, cheapest first; raises with the reason."""
    check_bitstream_usable(bitstream, project_id, is_admin)
    check_region_type(bitstream, deployable)
    check_region_free(deployable, bound_arq_uuid, is_admin, force)


def create_job_for(bitstream_uuid, deployable_uuid, is_admin=False,
                   force=False, user_id=None, project_id=None, arq_id=None,
                   max_attempts=None):
    """Check, then insert a queued job; return (job, bitstream, region,
    device). RegionBusy if the region already has an active job."""
    bitstream = bitstreams_db.get(bitstream_uuid)
    deployable, device = jobs_db.load_region(deployable_uuid)
    preflight(bitstream, deployable, jobs_db.bound_arq_uuid(deployable.id),
              is_admin=is_admin, force=force, project_id=project_id)
    job = jobs_db.create_job(
        deployable.id, bitstream.id, hostname=device.hostname,
        max_attempts=max_attempts, force=force and is_admin,
        requester_user_id=user_id, project_id=project_id, arq_id=arq_id)
    return job, bitstream, deployable, device


def agent_job(job, bitstream, deployable, device, region_name):
    """The plain dict an agent's ``run_job`` takes (crosses RPC).

    ``region_name`` is the region's name within its device, as the
    driver reported it (the conductor manager owns that mapping).
    """
    return {
        'uuid': job.uuid,
        'identity': device.identity,
        'region_name': region_name,
        'region_type': normalise_id(deployable.region_type, 'region_type'),
        'bitstream': {
            'uuid': bitstream.uuid, 'sha256': bitstream.sha256,
            'size': bitstream.size, 'format': bitstream.format,
            'region_type': normalise_id(bitstream.region_type,
                                        'region_type'),
            'function_id': normalise_id(bitstream.function_id,
                                        'function_id'),
        },
    }


def region_name_of(deployable, device):
    """The region's name as its driver reported it.

    The report stores deployables as naming.deployable_db_name(host,
    identity, name), so the driver's name is what follows that prefix.
    """
    prefix = naming.device_rp_name(device.hostname, device.identity) + '_'
    if not deployable.name.startswith(prefix) or \
            len(deployable.name) == len(prefix):
        raise exception.Invalid(
            reason='deployable %s is not named <host>_<identity>_<region> '
                   'as an agent report names it; it cannot be programmed'
                   % deployable.name)
    return deployable.name[len(prefix):]


def _iso(value):
    return value.isoformat() if value is not None else None


def job_to_dict(job, deployable_uuid, bitstream_uuid):
    """What the API and the RPC callers see of a job (plain JSON)."""
    view = {key: getattr(job, key) for key in (
        'uuid', 'state', 'hostname', 'attempts', 'max_attempts', 'error',
        'force')}
    view.update(deployable_uuid=deployable_uuid,
                bitstream_uuid=bitstream_uuid)
    for key in ('created_at', 'updated_at', 'started_at', 'finished_at'):
        view[key] = _iso(getattr(job, key))
    return view


def cancel_job(job_uuid):
    """Cancel a queued or downloading job; Conflict with the reason else."""
    for _try in range(3):
        try:
            return jobs_db.cancel(job_uuid)
        except exception.JobStateConflict:
            state = jobs_db.get(job_uuid).state
        # NOTE: a reaper may have requeued it between the two reads.
        if state not in jobs_db.CANCELLABLE:
            break
    if state in ('programming', 'verifying'):
        raise exception.Conflict(
            reason='programming job %s is %s: the image may be partly '
                   'written to the region, and a write cannot be torn off '
                   'half way; wait for the job to end' % (job_uuid, state))
    raise exception.Conflict(reason='programming job %s already ended (%s)'
                             % (job_uuid, state))


def record_progress(job_uuid, state, error=None, function_id=None,
                    function_name=None):
    """Apply an agent's report; the same report twice is harmless."""
    if state not in PROGRESS_FROM:
        raise exception.Invalid(reason='an agent cannot report state %r'
                                % (state,))
    try:
        if state == 'succeeded':
            return jobs_db.succeed(job_uuid, normalise_id(
                function_id, 'function_id'), function_name)
        fields = {'error': error} if error else {}
        if state == 'failed':
            fields['error'] = error or 'the agent reported a failure'
        return jobs_db.transition(job_uuid, PROGRESS_FROM[state], state,
                                  **fields)
    except exception.JobStateConflict:
        # An RPC retry resends a report already applied.
        job = jobs_db.get(job_uuid)
        if job.state == state:
            return job
        raise


def _reap_all(rows, reason):
    reaped = []
    for row in rows:
        try:
            reaped.append(jobs_db.reap(row.uuid, reason,
                                       expected_version=row.version))
        except exception.Conflict:
            # A heartbeat, a report or another conductor got there first.
            continue
    return reaped


def reap_stale_jobs(now=None, heartbeat_timeout=None, job_timeout=None):
    """Fail or requeue active jobs whose agent went silent; return them.

    Requeued jobs (state 'queued') must be dispatched again by the caller.
    """
    heartbeat_timeout = heartbeat_timeout or \
        CONF.programming.heartbeat_timeout
    job_timeout = job_timeout or CONF.programming.job_timeout
    rows = jobs_db.find_stale(now or models.utcnow(), heartbeat_timeout,
                              job_timeout)
    return _reap_all(rows, 'no progress from the agent within %d s (or the '
                     'try ran over %d s)' % (heartbeat_timeout, job_timeout))


# States in which an agent has taken the job; a queued job never started.
STARTED_STATES = ('downloading', 'programming', 'verifying')


def abandon_host_jobs(hostname):
    """An agent (re)started: the jobs it was running died with it.

    Queued jobs are left alone: no try began, so none was abandoned; the
    caller sends them to the new agent.
    """
    rows = jobs_db.list_jobs(hostname=hostname, states=STARTED_STATES)
    return _reap_all(rows, 'the agent on %s restarted during the job'
                     % hostname)
