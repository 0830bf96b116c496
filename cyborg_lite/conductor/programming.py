"""Programming jobs, conductor side: from a request to a loaded region.

A job is checked (bitstreams/checks.py), created queued
(db/programming_jobs.py, under the region's lock) and cast to the agent
of its region's host; the agent reports each step back (``progress``)
and beats while it runs (``heartbeat``). A cast may be lost, and an agent
may die: both leave a job that the reaper (``reap_and_redispatch``,
periodic) or the agent's next start (``agent_started``) fails or requeues,
and a requeued job is sent again. No step trusts memory: any conductor may
take any message of any job. The job's states are common/states.py's JOB.

``BindProgrammer`` is the bind workflow's programmer: a bind whose
profile asks for a bitstream or function the region lacks starts a job
linked to the ARQ; the job's end resumes the bind (bind.resume).
"""
from oslo_log import log as logging

from cyborg_lite.bitstreams import checks
from cyborg_lite.bitstreams.formats import normalise_id
from cyborg_lite.bitstreams import trust as bitstream_trust
from cyborg_lite.common import context as cl_context
from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import states
from cyborg_lite.conductor import rpc_clients
from cyborg_lite.conf import CONF
from cyborg_lite.db import arqs as arqs_db
from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import deployables as deployables_db
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.metrics import counted as metrics

LOG = logging.getLogger(__name__)


def create_job_for(bitstream_uuid, deployable_uuid, is_admin=False,
                   force=False, user_id=None, project_id=None, arq_id=None,
                   max_attempts=None, holder=None, namespace=None):
    """Check, then insert a queued job; return (job, bitstream, region,
    device, trust), ``trust`` what the signature was checked with
    (bitstreams/trust.Trust). RegionBusy if the region already
    has an active one.
    ``holder``: the Kubernetes claim (``k8s:<uid>``) the job loads the
    region for, which may program the region it holds; ``namespace``
    that claim's (accounting)."""
    bitstream = bitstreams_db.get(bitstream_uuid)
    deployable, device = deployables_db.load_region(deployable_uuid)
    trust = bitstream_trust.load(bitstream, project_id)
    checks.preflight(bitstream, deployable,
                     deployables_db.region_bound_arq(deployable.id, holder),
                     is_admin=is_admin, force=force, project_id=project_id,
                     trust=trust)
    job = jobs_db.create_job(
        deployable.id, bitstream.id, hostname=device.hostname,
        max_attempts=max_attempts, force=force and is_admin,
        requester_user_id=user_id, project_id=project_id, arq_id=arq_id,
        except_holder=holder, namespace=namespace)
    return job, bitstream, deployable, device, trust


def agent_job(job, bitstream, deployable, device, region_name,
              signature=None):
    """The plain dict an agent's ``run_job`` takes (crosses RPC).

    ``region_name`` is the region's name within its device, as the
    driver reported it (see common/device_records.region_name_of);
    ``signature`` what the agent checks the image's signature with
    (bitstreams/trust.agent_check; None: no check).
    """
    return {
        'uuid': job.uuid,
        # The try the agent's reports are of: the next one.
        'try': job.attempts + 1,
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
        'signature': signature,
    }


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


def _view(job_uuid):
    job, bitstream, deployable, _device = jobs_db.load_refs(job_uuid)
    return job_to_dict(job, deployable.uuid, bitstream.uuid)


def cancel_job(job_uuid):
    """Cancel a queued or downloading job; Conflict with the reason else."""
    for _try in range(3):
        try:
            return observe_end(jobs_db.cancel(job_uuid))
        except exception.JobStateConflict:
            state = jobs_db.get(job_uuid).state
        # NOTE: a reaper may have requeued it between the two reads.
        if state not in states.JOB_CANCELLABLE:
            break
    if state in ('programming', 'verifying'):
        raise exception.Conflict(
            reason='programming job %s is %s: the image may be partly '
                   'written to the region, and a write cannot be torn off '
                   'half way; wait for the job to end' % (job_uuid, state))
    raise exception.Conflict(reason='programming job %s already ended (%s)'
                             % (job_uuid, state))


def observe_end(job):
    """A job this call ended counts in the jobs' histogram (from its
    creation to its end, by outcome) and its seconds in its project's
    and namespace's sum; returns the job."""
    seconds = jobs_db.seconds_of(job)
    if seconds is not None:
        metrics.observe(metrics.JOB_DURATION, seconds, job.state)
        metrics.add(metrics.PROGRAMMING_SECONDS, seconds,
                    job.project_id or '', job.namespace or '')
    return job


def record_progress(job_uuid, state, error=None, function_id=None,
                    function_name=None, try_number=None):
    """Apply an agent's report of try ``try_number`` (None: an agent that
    does not say); the same report twice is harmless, a report of an
    earlier try is refused (JobStateConflict: that agent stops)."""
    if state not in states.JOB_PROGRESS_FROM:
        raise exception.Invalid(reason='an agent cannot report state %r'
                                % (state,))
    if state == 'programming':
        _trusted_before_writing(job_uuid, try_number)
    try:
        if state == 'succeeded':
            return observe_end(jobs_db.succeed(job_uuid, normalise_id(
                function_id, 'function_id'), function_name,
                try_number=try_number))
        fields = {'error': error} if error else {}
        if state == 'failed':
            fields['error'] = error or 'the agent reported a failure'
        return observe_end(jobs_db.transition(
            job_uuid, states.JOB_PROGRESS_FROM[state], state,
            try_number=try_number, **fields))
    except exception.JobStateConflict:
        # An RPC retry resends a report already applied.
        job = jobs_db.get(job_uuid)
        if job.state == state and try_number in (None, job.attempts):
            return job
        raise


def _trusted_before_writing(job_uuid, try_number):
    """The last word before an agent writes the image: its signature is
    checked again as of now, so a key revoked (or a policy made
    stricter) since the job was sent, while the agent fetched the image,
    fails the job here with the check's reason; SignatureRefused (a
    Conflict) stops the agent before the write."""
    job, bitstream, _region, _device = jobs_db.load_refs(job_uuid)
    if job.state != 'downloading':
        return      # a report sent again, or a job moved on: the move decides
    try:
        checks.check_signature(bitstream, bitstream_trust.load(
            bitstream, job.project_id))
    except exception.SignatureRefused as exc:
        try:
            observe_end(jobs_db.transition(
                job_uuid, ('downloading',), 'failed',
                try_number=try_number, error=exception.error_text(exc)))
        except exception.Conflict:
            pass    # cancelled or reaped meanwhile: stopped all the same
        LOG.warning('Programming job %s failed before the write: %s',
                    job_uuid, exc)
        raise


def _reap_all(rows, reason, job_timeout=None, now=None):
    reaped = []
    for row in rows:
        try:
            reaped.append(observe_end(jobs_db.reap(
                row.uuid, reason, expected_version=row.version,
                job_timeout=job_timeout, now=now)))
        except exception.Conflict:
            # A heartbeat, a report or another conductor got there first.
            continue
    return reaped


def reap_stale_jobs(now=None, heartbeat_timeout=None, job_timeout=None):
    """Fail or requeue active jobs whose agent went silent; return them.

    ``now`` defaults to the database's clock. Queued jobs (requeued, or
    never taken by their agent) must be dispatched again by the caller.
    """
    heartbeat_timeout = heartbeat_timeout or \
        CONF.programming.heartbeat_timeout
    job_timeout = job_timeout or CONF.programming.job_timeout
    rows = jobs_db.find_stale(now, heartbeat_timeout, job_timeout)
    return _reap_all(rows, 'no progress from the agent within %d s (or the '
                     'try ran over %d s)' % (heartbeat_timeout, job_timeout),
                     job_timeout, now)


def abandon_host_jobs(hostname):
    """An agent (re)started: the jobs it was running died with it.

    Queued jobs are left alone: no try began, so none was abandoned; the
    caller sends them to the new agent.
    """
    rows = jobs_db.list_jobs(hostname=hostname, states=states.JOB_STARTED)
    return _reap_all(rows, 'the agent on %s restarted during the job'
                     % hostname)


class ProgrammingFlow:
    """The conductor's RPC-facing part of programming jobs (one per
    conductor)."""

    def __init__(self, agent_api=None, after_success=None):
        self._agent_api = agent_api
        # Called with the hostname after a job succeeded (publishing the
        # host's inventory, so the region's function follows). Its failure
        # never fails the job: the sinks retry on their own.
        self.after_success = after_success

    @property
    def agent_api(self):
        # NOTE: made on first use, once the process transport is set up.
        if self._agent_api is None:
            self._agent_api = rpc_clients.agent_api()
        return self._agent_api

    def start_job(self, bitstream_uuid, deployable_uuid, is_admin=False,
                  force=False, user_id=None, project_id=None, arq_id=None,
                  holder=None, namespace=None):
        """Check, create and send a job; return it as a dict."""
        deployable, device = deployables_db.load_region(deployable_uuid)
        # Before the job exists: a region no agent can name is refused.
        region_name = device_records.region_name_of(deployable, device)
        job, bitstream, deployable, device, trust = create_job_for(
            bitstream_uuid, deployable_uuid, is_admin=is_admin, force=force,
            user_id=user_id, project_id=project_id, arq_id=arq_id,
            holder=holder, namespace=namespace)
        LOG.info('Programming job %s: bitstream %s into %s on %s', job.uuid,
                 bitstream.uuid, deployable.name, device.hostname)
        self._send(job, bitstream, deployable, device, region_name, trust)
        return job_to_dict(job, deployable.uuid, bitstream.uuid)

    def program(self, ctxt, bitstream_uuid, deployable_uuid, force=False):
        return self.start_job(
            bitstream_uuid, deployable_uuid, is_admin=ctxt.is_admin,
            force=force, user_id=ctxt.user_id, project_id=ctxt.project_id)

    def dispatch(self, job_uuid):
        """Send a queued job (again) to its host; False if not queued.

        The signature is checked again first: a key revoked, or a
        policy made stricter, since the job was queued fails it here.
        """
        job, bitstream, deployable, device = jobs_db.load_refs(job_uuid)
        if job.state != 'queued':
            return False
        trust = bitstream_trust.load(bitstream, job.project_id)
        try:
            checks.check_signature(bitstream, trust)
        except exception.SignatureRefused as exc:
            _fail_queued(job.uuid, exc)
            return False
        self._send(job, bitstream, deployable, device,
                   device_records.region_name_of(deployable, device), trust)
        return True

    def _send(self, job, bitstream, deployable, device, region_name,
              trust):
        message = agent_job(job, bitstream, deployable, device, region_name,
                            bitstream_trust.agent_check(bitstream, trust))
        # The agent runs it with the driver that reported the device.
        message['driver'] = device.driver_name
        try:
            self.agent_api.program_region(cl_context.get_admin_context(),
                                          job.hostname, message)
        except Exception:
            # NOTE: the job stays queued; the reaper sends it again once
            # [programming]heartbeat_timeout passes without news.
            LOG.exception('Could not send programming job %s to %s',
                          job.uuid, job.hostname)

    def cancel(self, job_uuid):
        cancel_job(job_uuid)
        LOG.info('Programming job %s cancelled', job_uuid)
        return _view(job_uuid)

    def progress(self, job_uuid, state, error=None, function_id=None,
                 function_name=None, try_number=None):
        job = record_progress(job_uuid, state, error=error,
                              function_id=function_id,
                              function_name=function_name,
                              try_number=try_number)
        if state == 'succeeded' and self.after_success is not None:
            try:
                self.after_success(job.hostname)
            except Exception:
                LOG.exception('After-success hook of job %s failed',
                              job_uuid)
        if state in ('succeeded', 'failed'):
            LOG.info('Programming job %s %s%s', job_uuid, state,
                     ': %s' % job.error if state == 'failed' else '')
        return _view(job_uuid)

    def heartbeat(self, job_uuid, hostname, try_number=None):
        jobs_db.heartbeat(job_uuid, hostname=hostname, try_number=try_number)
        return {'uuid': job_uuid, 'alive': True}

    def agent_started(self, hostname):
        """The jobs the agent was running died with it: fail or requeue
        them, then send every queued job of the host (again)."""
        abandoned = abandon_host_jobs(hostname)
        for job in abandoned:
            LOG.warning('Programming job %s abandoned by the restart of '
                        'the agent on %s: now %s', job.uuid, hostname,
                        job.state)
        queued = jobs_db.list_jobs(hostname=hostname, states=('queued',))
        dispatched = [job.uuid for job in queued if self.dispatch(job.uuid)]
        return {'abandoned': [job.uuid for job in abandoned],
                'dispatched': dispatched}

    def reap_and_redispatch(self, now=None):
        """The periodic task: reap silent jobs, send requeued ones again."""
        reaped = reap_stale_jobs(now=now)
        for job in reaped:
            LOG.warning('Programming job %s reaped: %s after try %d (%s)',
                        job.uuid, job.state, job.attempts, job.error)
            if job.state == 'queued':
                self.dispatch(job.uuid)
        return reaped


def _fail_queued(job_uuid, exc):
    """A queued job the signature check now refuses ends failed, with
    the check's reason."""
    try:
        jobs_db.transition(job_uuid, ('queued',), 'failed',
                           error=exception.error_text(exc))
    except exception.Conflict:
        return      # taken, cancelled or reaped meanwhile: theirs to end
    LOG.warning('Programming job %s failed before it was sent: %s',
                job_uuid, exc)


class BindProgrammer:
    """The bind workflow's ``programmer`` (conductor/bind.py): starts the
    job that loads what a bind needs into its region, linked to the ARQ,
    and returns its uuid at once. The job's end, reported by its agent to
    any conductor, resumes the bind (bind.resume), so no RPC worker waits
    while the card is programmed.
    """

    def __init__(self, flow):
        self.flow = flow

    def __call__(self, ctxt, arq_uuid, deployable_uuid, bitstream_id=None,
                 function_id=None):
        arq = arqs_db.get(arq_uuid)
        # NOTE: the ARQ's project alone decides which private bitstreams
        # it may load: not the role of whoever sent the bind, nor the
        # admin context the bind reaper sends a bind again with.
        project_id = arq.project_id
        if function_id is not None:
            deployable, _device = deployables_db.load_region(deployable_uuid)
            bitstream_id = checks.resolve_function(function_id, deployable,
                                                   project_id)
        job = self.flow.start_job(
            bitstream_id, deployable_uuid,
            user_id=getattr(ctxt, 'user_id', None), project_id=project_id,
            arq_id=arq.id)
        LOG.info('Bind of ARQ %s resumes when programming job %s ends',
                 arq_uuid, job['uuid'])
        return job['uuid']
