"""Programming jobs end to end, conductor side: the RPC-facing workflow.

The checks and the state machine live in conductor/programming.py and
db/programming_jobs.py; this module adds the messages. A job is created
queued and cast to the agent of its region's host; the agent reports each
step back (``progress``) and beats while it runs (``heartbeat``). A cast
may be lost, and an agent may die: both leave a job that the reaper
(``reap_and_redispatch``, periodic) or the agent's next start
(``agent_started``) fails or requeues, and a requeued job is sent again.
No step trusts memory: any conductor may take any message of any job.
"""
from oslo_log import log as logging

from cyborg_lite.agent import rpcapi as agent_rpcapi
from cyborg_lite.common import context as cl_context
from cyborg_lite.conductor import programming
from cyborg_lite.db import programming_jobs as jobs_db

LOG = logging.getLogger(__name__)


def _view(job_uuid):
    job, bitstream, deployable, _device = jobs_db.load_refs(job_uuid)
    return programming.job_to_dict(job, deployable.uuid, bitstream.uuid)


class ProgrammingFlow:
    """The conductor's part of programming jobs (one per conductor)."""

    def __init__(self, agent_api=None, after_success=None):
        self._agent_api = agent_api
        # Called with the hostname after a job succeeded (the Placement
        # sync, so the region's CUSTOM_FUNCTION_ID_ trait follows). Its
        # failure never fails the job: the sync retries on its own.
        self.after_success = after_success

    @property
    def agent_api(self):
        # NOTE: made on first use, once the process transport is set up.
        if self._agent_api is None:
            self._agent_api = agent_rpcapi.AgentAPI()
        return self._agent_api

    def start_job(self, bitstream_uuid, deployable_uuid, is_admin=False,
                  force=False, user_id=None, project_id=None, arq_id=None):
        """Check, create and send a job; return it as a dict."""
        deployable, device = jobs_db.load_region(deployable_uuid)
        # Before the job exists: a region no agent can name is refused.
        region_name = programming.region_name_of(deployable, device)
        job, bitstream, deployable, device = programming.create_job_for(
            bitstream_uuid, deployable_uuid, is_admin=is_admin, force=force,
            user_id=user_id, project_id=project_id, arq_id=arq_id)
        LOG.info('Programming job %s: bitstream %s into %s on %s', job.uuid,
                 bitstream.uuid, deployable.name, device.hostname)
        self._send(job, bitstream, deployable, device, region_name)
        return programming.job_to_dict(job, deployable.uuid, bitstream.uuid)

    def program(self, ctxt, bitstream_uuid, deployable_uuid, force=False):
        return self.start_job(
            bitstream_uuid, deployable_uuid, is_admin=ctxt.is_admin,
            force=force, user_id=ctxt.user_id, project_id=ctxt.project_id)

    def dispatch(self, job_uuid):
        """Send a queued job (again) to its host; False if not queued."""
        job, bitstream, deployable, device = jobs_db.load_refs(job_uuid)
        if job.state != 'queued':
            return False
        self._send(job, bitstream, deployable, device,
                   programming.region_name_of(deployable, device))
        return True

    def _send(self, job, bitstream, deployable, device, region_name):
        message = programming.agent_job(job, bitstream, deployable, device,
                                        region_name)
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
        programming.cancel_job(job_uuid)
        LOG.info('Programming job %s cancelled', job_uuid)
        return _view(job_uuid)

    def progress(self, job_uuid, state, error=None, function_id=None,
                 function_name=None):
        job = programming.record_progress(job_uuid, state, error=error,
                                          function_id=function_id,
                                          function_name=function_name)
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

    def heartbeat(self, job_uuid, hostname):
        jobs_db.heartbeat(job_uuid, hostname=hostname)
        return {'uuid': job_uuid, 'alive': True}

    def agent_started(self, hostname):
        """The jobs the agent was running died with it: fail or requeue
        them, then send every queued job of the host (again)."""
        abandoned = programming.abandon_host_jobs(hostname)
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
        reaped = programming.reap_stale_jobs(now=now)
        for job in reaped:
            LOG.warning('Programming job %s reaped: %s (%s)', job.uuid,
                        job.state, job.error)
            if job.state == 'queued':
                self.dispatch(job.uuid)
        return reaped
