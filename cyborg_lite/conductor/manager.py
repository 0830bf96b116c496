"""The conductor's RPC endpoint: thin methods that hand over to workflows.

Each method here has a twin in rpc/conductor_client.ConductorAPI and a
line in its version history; the work itself lives in a workflow module
(report.py, bind.py, release.py, programming.py, cleaning.py and
kubernetes/claims.py), so
this class stays a table of contents.
"""
import functools

import oslo_messaging as messaging
from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.common import states
from cyborg_lite.conductor import bind
from cyborg_lite.conductor import bind_wait
from cyborg_lite.conductor import cleaning as cleaning_mod
from cyborg_lite.conductor import liveness
from cyborg_lite.conductor import programming as programming_mod
from cyborg_lite.conductor import publishing
from cyborg_lite.conductor import release as release_mod
from cyborg_lite.conductor import report
from cyborg_lite.conf import CONF
from cyborg_lite.kubernetes import binding as k8s_binding
from cyborg_lite.kubernetes import claims as k8s_claims

LOG = logging.getLogger(__name__)

# A database outage is sent back to the caller without a traceback in
# the conductor's log: db/sql/session.py's outage log has said it, once.
_OUTAGE = (exception.DatabaseUnavailable,)
# What a programming or cleaning call may refuse with; sent back as the
# caller's error without a traceback in the conductor's log.
_PROGRAM_REFUSALS = (exception.Invalid, exception.NotFound,
                     exception.Conflict, exception.Forbidden) + _OUTAGE


class ConductorManager:
    # NOTE: must stay equal to ConductorAPI.RPC_API_VERSION's major and at
    # least its minor, or calls for newer methods are refused.
    target = messaging.Target(version='1.10')

    def __init__(self, host, after_report=None, programming=None,
                 publisher=None, cleaning=None, claims=None,
                 after_reply=None):
        self.host = host
        # Runs work a call's answer need not wait for (the cleaning a
        # release starts): the service's after-reply worker; by default
        # at once, before the answer. Work it loses with the process is
        # redone by the periodic tasks.
        self.after_reply = after_reply or _now
        # Serves db/publish_requests: hosts whose offer changed outside a
        # report (a shared function bound or freed, a device disabled, an
        # agent down or back). No sinks: it only clears them.
        self.publisher = publisher or publishing.Publisher([])
        # Called with the hostname after a report changed stored rows
        # (publishing to the inventory sinks). Its failure never fails the
        # report: the rows are committed and its own retry takes it from
        # there.
        self.after_report = after_report
        # The same hook follows a succeeded programming job.
        self.programming = programming or programming_mod.ProgrammingFlow(
            after_success=after_report)
        # And every cleaning move that changes what a host offers.
        self.cleaning = cleaning or cleaning_mod.CleaningFlow(
            after_change=after_report)
        self.claims = claims or k8s_claims.ClaimFlow(self.programming,
                                                     self.cleaning)
        # A bind whose region must be programmed first starts the job
        # with it; the job's progress resumes the bind (job_progress).
        self.bind_programmer = programming_mod.BindProgrammer(
            self.programming)
        # Binding conditions (kubernetes/binding.py): set by watch_claims
        # where this conductor publishes to Kubernetes; a job's progress
        # moves the condition of the claim it programs for.
        self.binding = None
        self._claim_watch = None

    def watch_claims(self, api_client):
        """Program the regions of claims allocated with our binding
        condition before their pods bind (kubernetes/binding.py)."""
        self.binding, self._claim_watch = k8s_binding.watch_claims(
            self.claims, api_client)

    def stop_watching_claims(self):
        if self._claim_watch is not None:
            self._claim_watch.stop()
            self._claim_watch = None

    def _claim_condition_follows(self, job_uuid):
        # NOTE: the job's report is committed whatever this does; a
        # condition left unwritten is written when the claim is next
        # listed (a conductor's start) or changed.
        if self.binding is None:
            return
        try:
            self.binding.job_changed(job_uuid)
        except Exception:
            LOG.exception('The binding condition of the claim of job %s '
                          'was not written', job_uuid)

    @messaging.expected_exceptions(exception.InvalidReport,
                                   exception.ReportConflict, *_OUTAGE)
    def report(self, ctxt, hostname, driver_reports, numa_nodes=None):
        ack = report.handle_report(hostname, driver_reports, numa_nodes)
        if ack['changed'] and self.after_report is not None:
            try:
                self.after_report(hostname)
            except Exception:
                LOG.exception('After-report hook failed for host %s',
                              hostname)
        if ack.get('returned'):
            # Back in its driver's view: a clean it waited for starts (a
            # conductor killed before this leaves it to the periodic one).
            try:
                self.cleaning.start([hostname])
            except Exception:
                LOG.exception('Starting the cleans of host %s after its '
                              'report failed', hostname)
        return ack

    @messaging.expected_exceptions(*_OUTAGE)
    def bind_arqs(self, ctxt, bindings):
        # NOTE: any conductor may take any bind; the database arbitrates.
        # A bind on a function sibling regions share hides them: served
        # when a bind asked (a plain bind skips the requests' query).
        results = bind.bind_arqs(ctxt, bindings,
                                 programmer=self.bind_programmer,
                                 conductor=self.host,
                                 publish=self._publish_requested,
                                 waiter=bind_wait.wait_if_worth)
        failed = sorted({(bindings.get(arq_uuid) or {}).get('hostname')
                         for arq_uuid, state in results.items()
                         if state == 'BindFailed'} - {None})
        if failed:
            # NOTE: a bind that failed holding a handle (an instance it had
            # its agent make: a vGPU) left its region to be wiped: started
            # now rather than at the next periodic run.
            try:
                self.cleaning.start(failed)
            except Exception:
                LOG.exception('Starting the cleans of hosts %s after '
                              'failed binds failed', failed)
        return results

    @messaging.expected_exceptions(*_OUTAGE)
    def unbind_arqs(self, ctxt, arq_uuids):
        """RPC 1.1, kept for one release only: no cyborg_lite of this
        release sends it (the API unbinds in the database, then asks for
        the release); a previous-release API may still cast it. A shim
        onto the API's path: unbind each ARQ, then release its hosts;
        {arq_uuid: state}."""
        results, publish, clean = release_mod.unbind_each(arq_uuids)
        self.release(ctxt, sorted(publish), sorted(clean))
        return results

    def _publish_requested(self, wait=0.0):
        # NOTE: the binds are committed whatever this does; requests left
        # are served by the periodic task. ``wait``: see
        # Publisher.publish_requested.
        try:
            self.publisher.publish_requested(wait)
        except _OUTAGE:
            pass
        except Exception:
            LOG.exception('Publishing requested hosts failed')

    # --- availability (1.3), see liveness.py and db/publish_requests.py -

    @messaging.expected_exceptions(exception.Invalid,
                                   exception.ServiceTooOld, *_OUTAGE)
    def agent_heartbeat(self, ctxt, hostname, release=None,
                        rpc_versions=None):
        # release, rpc_versions: 1.10 (what the agent runs).
        return liveness.heartbeat(hostname, self.publisher, release,
                                  rpc_versions)

    def publish_requested(self, ctxt):
        """The API changed what a host offers (a device enabled): publish
        now rather than at the next periodic run."""
        self._publish_requested()

    @messaging.expected_exceptions(exception.Invalid, *_OUTAGE)
    def publish_hosts(self, ctxt, hostnames):
        """The API took capacity away on these hosts (an ARQ deleted or
        unbound, a device disabled): publish them and answer once every
        sink has them; {hostname: converged}."""
        _check_hostnames(hostnames)
        return {hostname: publishing.converged(
                    self.publisher.publish_host(hostname))
                for hostname in sorted(set(hostnames))}

    @messaging.expected_exceptions(exception.Invalid, *_OUTAGE)
    def release(self, ctxt, publish_hosts, clean_hosts):
        """(1.9) The API released capacity (an ARQ deleted or unbound):
        publish the union of the hosts once and answer once every sink has
        them; {hostname: converged}. The cleaning of ``clean_hosts``'
        released regions starts after the answer (``after_reply``):
        pending_cleaning -> cleaning changes no view, so the caller need
        not wait for it."""
        for hosts in (publish_hosts, clean_hosts):
            _check_hostnames(hosts)
        converged = self.publish_hosts(
            ctxt, sorted(set(publish_hosts) | set(clean_hosts)))
        self.after_reply(functools.partial(self._start_cleaning,
                                           sorted(set(clean_hosts))))
        return converged

    def _start_cleaning(self, hostnames):
        # NOTE: a failed start leaves the regions pending_cleaning; the
        # cleaning's periodic task starts them.
        try:
            self.cleaning.start(hostnames, published=True)
        except _OUTAGE:
            pass   # db/sql/session.py's outage log said it
        except Exception:
            LOG.exception('Starting the cleans of %s failed', hostnames)
        # NOTE: a region of a driver that does not clean is free now.
        self._resume_waiting_binds(hostnames=hostnames)

    def _resume_waiting_binds(self, **which):
        """Binds waiting for a region freed now (bind_wait.py) are
        resumed; any left are the periodic reap's."""
        try:
            bind_wait.resume_free(self.bind_programmer,
                                  publish=self._publish_requested, **which)
        except Exception:
            LOG.exception('Resuming the binds waiting on %s failed', which)

    # --- programming jobs (1.2), see programming.py ---------------

    @messaging.expected_exceptions(*_PROGRAM_REFUSALS)
    def program(self, ctxt, bitstream_uuid, deployable_uuid, force=False):
        return self.programming.program(ctxt, bitstream_uuid,
                                        deployable_uuid, force=force)

    @messaging.expected_exceptions(*_PROGRAM_REFUSALS)
    def cancel_program(self, ctxt, job_uuid):
        job = self.programming.cancel(job_uuid)
        bind.resume(job_uuid, publish=self._publish_requested)
        self._claim_condition_follows(job_uuid)
        return job

    @messaging.expected_exceptions(*_PROGRAM_REFUSALS)
    def job_progress(self, ctxt, job_uuid, state, error=None,
                     function_id=None, function_name=None, try_number=None):
        job = self.programming.progress(job_uuid, state, error=error,
                                        function_id=function_id,
                                        function_name=function_name,
                                        try_number=try_number)
        if job['state'] in states.JOB_TERMINAL:
            # The bind that started the job (if one waits) ends now. A
            # conductor killed before this leaves it to the bind reaper.
            bind.resume(job_uuid, publish=self._publish_requested)
        self._claim_condition_follows(job_uuid)
        return job

    @messaging.expected_exceptions(*_PROGRAM_REFUSALS)
    def job_heartbeat(self, ctxt, job_uuid, hostname, try_number=None):
        return self.programming.heartbeat(job_uuid, hostname, try_number)

    @messaging.expected_exceptions(*_OUTAGE)
    def agent_started(self, ctxt, hostname):
        result = self.programming.agent_started(hostname)
        result['cleaning'] = self.cleaning.agent_started(hostname)
        return result

    # --- secure cleanup between tenants (1.4), see cleaning.py ----------

    @messaging.expected_exceptions(*_OUTAGE)
    def start_cleaning(self, ctxt, hostnames):
        return self.cleaning.start(hostnames)

    @messaging.expected_exceptions(*_PROGRAM_REFUSALS)
    def cleaning_progress(self, ctxt, deployable_uuid, cleaning_uuid, state,
                          error=None):
        region = self.cleaning.progress(deployable_uuid, cleaning_uuid,
                                        state, error=error)
        if region['device_state'] == 'available':
            self._resume_waiting_binds(region_uuid=deployable_uuid)
        return region

    # --- Kubernetes ResourceClaims (1.6), see kubernetes/claims.py ------

    @messaging.expected_exceptions(exception.ClaimInProgress,
                                   *_PROGRAM_REFUSALS)
    def prepare_k8s_device(self, ctxt, hostname, request, wait):
        try:
            return self.claims.prepare(hostname, request, wait)
        finally:
            # Held or released: Placement follows (kubernetes_claimed),
            # before the kubelet is answered.
            self._publish_requested(CONF.kubernetes.prepare_timeout)

    @messaging.expected_exceptions(*_PROGRAM_REFUSALS)
    def release_k8s_device(self, ctxt, hostname, claim_uid, device=None):
        # Each region is wiped before its next tenant, as after an unbind.
        hosts = self.claims.release(hostname, claim_uid, device)
        self._publish_requested(CONF.kubernetes.prepare_timeout)
        return sorted(hosts)


def _now(func):
    func()


def _check_hostnames(hostnames):
    if not isinstance(hostnames, list) or not all(
            isinstance(h, str) and h for h in hostnames):
        raise exception.Invalid(reason='hostnames must be a list of '
                                       'host names')
