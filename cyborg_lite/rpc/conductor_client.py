"""Client side of the conductor RPC API (agents and the API call it).

API version history:

* 1.0 - report(hostname, driver_reports): an agent's discovery result,
        applied as a diff; returns the acknowledgement dict described in
        cyborg_lite/conductor/report.py.
* 1.1 - bind_arqs(bindings), unbind_arqs(arq_uuids): casts; the bind
        workflow of cyborg_lite/conductor/bind.py. unbind_arqs is no
        longer sent (the API unbinds in the database and releases);
        the conductor keeps its endpoint for one release.
* 1.2 - program(bitstream_uuid, deployable_uuid, force),
        cancel_program(job_uuid), job_progress(job_uuid, state, error,
        function_id, function_name), job_heartbeat(job_uuid, hostname),
        agent_started(hostname): calls; the programming jobs of
        cyborg_lite/conductor/programming.py.
* 1.3 - agent_heartbeat(hostname): a call, an agent is alive
        (cyborg_lite/conductor/liveness.py); publish_requested(): a cast,
        publish the hosts db/publish_requests holds now.
* 1.4 - start_cleaning(hostnames): cast; cleaning_progress(
        deployable_uuid, cleaning_uuid, state, error): call; the secure
        cleanup between tenants of cyborg_lite/conductor/cleaning.py.
        agent_started(hostname) also resumes the host's cleaning.
* 1.5 - job_progress and job_heartbeat take try_number: the try of the
        job the agent runs (the job dict's 'try'); a report or beat of an
        earlier try is refused.
* 1.6 - prepare_k8s_device(hostname, request, wait),
        release_k8s_device(hostname, claim_uid, device): calls; the
        kubelet plugin's devices of Kubernetes ResourceClaims
        (cyborg_lite/kubernetes/claims.py).
* 1.7 - publish_hosts(hostnames): a call, publish these hosts to every
        inventory sink and answer once done; the API's release of
        capacity (ARQ delete, unbind, device disable) waits for it.
* 1.8 - report takes numa_nodes: the host's NUMA nodes and SLIT
        (common/topology.py), sent when they changed.
* 1.9 - release(publish_hosts, clean_hosts): a call; the API's one
        release of capacity (an ARQ deleted or unbound): the conductor
        publishes the union of the hosts once, then starts the cleaning
        (which publishes nothing more). A conductor without 1.9 refuses
        it before doing anything; the API then makes 1.7's publish_hosts
        and 1.4's start_cleaning.
* 1.10 - agent_heartbeat takes release and rpc_versions: what the agent
        runs (db/services.py). A conductor without 1.10 refuses it; the
        agent then sends 1.3's heartbeat (its release unrecorded).

Add a method: bump RPC_API_VERSION (minor for a compatible addition), add
a line above, ``prepare(version=...)`` with the version that introduced it,
and the endpoint method with the same name on ConductorManager. A client
pinned by [upgrade_levels]conductor (rpc/pins.py) below that version
raises RPCVersionCapError: ask ``can_send_version`` first and fall back
(as ``release`` and ``agent_heartbeat`` do); tests/functional/
test_rpc_pins.py sends every method to the previous release's endpoint.
"""
import time

import oslo_messaging as messaging
from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.rpc import transport as rpc

LOG = logging.getLogger(__name__)

# A cast is published "mandatory": one that no conductor queue would
# receive (for a moment after a RabbitMQ restart, before the conductors
# declared their queues again) comes back to us as MessageUndeliverable
# instead of being dropped by the broker without a word. RabbitMQ's
# publisher confirms are always on in oslo.messaging's rabbit driver, so a
# cast that returns was taken by the broker.
_MANDATORY = messaging.TransportOptions(at_least_once=True)
# Seconds to wait before each new try of an undeliverable cast.
CAST_RETRY_DELAYS = (0.2, 0.5, 1.0, 2.0)

# NOTE: exceptions that may cross RPC as themselves: every domain
# exception. oslo.messaging hands the caller a RemoteError unless the
# transport lists our module in allowed_remote_exmods; _translate turns
# those back (with the message; keyword arguments do not travel).
_REMOTE_EXCEPTIONS = {
    name: cls for name, cls in vars(exception).items()
    if isinstance(cls, type) and
    issubclass(cls, exception.CyborgLiteException)}


class ConductorAPI:
    RPC_API_VERSION = '1.10'

    def __init__(self, timeout=None, version_cap=None):
        # version_cap: [upgrade_levels]conductor (rpc/pins.py); a method
        # asks can_send_version and falls back below it.
        self.client = rpc.get_client(rpc.CONDUCTOR_TOPIC,
                                     self.RPC_API_VERSION, timeout=timeout,
                                     version_cap=version_cap)

    def report(self, ctxt, hostname, driver_reports, numa_nodes=None):
        """Apply an agent report; returns the acknowledgement dict.

        ``numa_nodes``: the host's NUMA nodes, when they changed (1.8).
        Raises InvalidReport (nothing stored changed) or ReportConflict
        (concurrent writers; send again later), or oslo.messaging's
        MessagingTimeout when no conductor answered.
        """
        kwargs = {'hostname': hostname, 'driver_reports': driver_reports}
        version = '1.0'
        if numa_nodes is not None:
            kwargs['numa_nodes'] = numa_nodes
            version = '1.8'
        cctxt = self.client.prepare(version=version)
        with _translate():
            return cctxt.call(ctxt, 'report', **kwargs)

    def bind_arqs(self, ctxt, bindings):
        """Start binding ARQs; returns at once (the API answers 202).

        bindings: {arq_uuid: {'hostname', 'device_rp_uuid',
        'instance_uuid', 'project_id' (optional)}}. The outcome is the
        ARQs' state (Bound or BindFailed) and the bind notifier's event.
        Returns whether the broker took the cast for a conductor (see
        ``_cast``); one it did not is sent again by the bind reaper.
        """
        return self._cast(ctxt, '1.1', 'bind_arqs', bindings=bindings)

    def _cast(self, ctxt, version, method, **kwargs):
        """Cast ``method``; True once the broker queued it for a conductor,
        False (logged) when it could not, after the retries above."""
        cctxt = self.client.prepare(version=version,
                                    retry=rpc.CAST_CONNECT_RETRIES,
                                    transport_options=_MANDATORY)
        for delay in CAST_RETRY_DELAYS + (None,):
            try:
                cctxt.cast(ctxt, method, **kwargs)
                return True
            except messaging.MessageUndeliverable:
                if delay is None:
                    break
                time.sleep(delay)
            except rpc.CAST_FAILURES as exc:
                LOG.warning('Cast %s not sent, the broker is unreachable: '
                            '%s', method, exc)
                return False
        LOG.warning('Cast %s not delivered: no conductor queue is bound '
                    '(conductors down or reconnecting)', method)
        return False


    # --- programming jobs (1.2) ----------------------------------------

    def program(self, ctxt, bitstream_uuid, deployable_uuid, force=False):
        """Check and queue a programming job, send it to the region's host;
        returns the job as a dict (uuid, state, deployable_uuid,
        bitstream_uuid, hostname, attempts, max_attempts, error, force,
        created_at, updated_at, started_at, finished_at).

        Refusals come back as themselves: BitstreamNotFound and NotFound,
        Invalid (region type mismatch, not programmable), Conflict
        (bitstream not active, region held by a Bound ARQ), RegionBusy
        (another job is active on the region), Forbidden (force without
        admin). ``force`` (admins only) reprograms a region in use.
        """
        return self._call(ctxt, 'program', bitstream_uuid=bitstream_uuid,
                          deployable_uuid=deployable_uuid, force=force)

    def cancel_program(self, ctxt, job_uuid):
        """Cancel a queued or downloading job; returns it as a dict.

        Conflict with the reason when it is programming or verifying (a
        write cannot be torn off) or already ended.
        """
        return self._call(ctxt, 'cancel_program', job_uuid=job_uuid)

    def job_progress(self, ctxt, job_uuid, state, error=None,
                     function_id=None, function_name=None, try_number=None):
        """An agent's step of try ``try_number`` of a job; Conflict when the
        job was cancelled or reaped meanwhile, or runs another try (the
        agent then stops)."""
        return self._call(ctxt, 'job_progress', job_uuid=job_uuid,
                          state=state, error=error, function_id=function_id,
                          function_name=function_name,
                          **_try_kwargs(try_number))

    def job_heartbeat(self, ctxt, job_uuid, hostname, try_number=None):
        """The agent still runs the job; Conflict if it is no longer
        active on that host (in that try)."""
        return self._call(ctxt, 'job_heartbeat', job_uuid=job_uuid,
                          hostname=hostname, **_try_kwargs(try_number))

    def agent_started(self, ctxt, hostname):
        """An agent (re)started: its unfinished jobs are failed or
        requeued and its queued jobs sent to it again; its cleaning tries
        are started again."""
        return self._call(ctxt, 'agent_started', hostname=hostname)

    # --- availability (1.3) -------------------------------------------

    def agent_heartbeat(self, ctxt, hostname, timeout=None, release=None,
                        rpc_versions=None):
        """The agent of ``hostname`` is alive; returns {'hostname',
        'came_back'}. ``timeout``: seconds to wait for a conductor (a
        heartbeat older than the next one is worth nothing).
        ``release`` and ``rpc_versions`` ({topic: version}), what the
        agent runs, go at 1.10, or not at all when no conductor allowed
        to receive it has 1.10 (it says so; the heartbeat goes at 1.3)."""
        extra = {} if timeout is None else {'timeout': timeout}
        if release is not None and self.client.can_send_version('1.10'):
            try:
                with _translate():
                    return self.client.prepare(version='1.10', **extra).call(
                        ctxt, 'agent_heartbeat', hostname=hostname,
                        release=release, rpc_versions=rpc_versions)
            except messaging.UnsupportedVersion:
                pass
            except messaging.RemoteError as exc:
                # Over RabbitMQ an older conductor's refusal (see release).
                if exc.exc_type != 'UnsupportedVersion':
                    raise
        cctxt = self.client.prepare(version='1.3', **extra)
        with _translate():
            return cctxt.call(ctxt, 'agent_heartbeat', hostname=hostname)

    def publish_requested(self, ctxt):
        """Ask a conductor to publish the requested hosts now (a cast; the
        conductors' periodic task does it anyway)."""
        return self._cast(ctxt, '1.3', 'publish_requested')

    def publish_hosts(self, ctxt, hostnames, timeout=None):
        """Publish these hosts to every sink now; {hostname: whether every
        sink converged}. A call: the caller took capacity away and answers
        its own client once the schedulers have it."""
        extra = {} if timeout is None else {'timeout': timeout}
        cctxt = self.client.prepare(version='1.7', **extra)
        with _translate():
            return cctxt.call(ctxt, 'publish_hosts',
                              hostnames=sorted(hostnames))

    def release(self, ctxt, publish_hosts, clean_hosts, timeout=None):
        """Capacity was released on these hosts (an ARQ deleted or
        unbound): a conductor publishes every host of both lists once to
        every sink and answers {hostname: whether every sink converged};
        the clean of the released regions of ``clean_hosts`` starts after
        that answer. A call: the caller answers its own client once the
        schedulers have it.

        oslo.messaging's UnsupportedVersion when the conductor is of a
        release without 1.9 (it did nothing), or the client is pinned
        below 1.9 (nothing sent): the caller makes
        ``publish_hosts`` and ``start_cleaning`` instead.
        """
        if not self.client.can_send_version('1.9'):
            # Pinned below 1.9 ([upgrade_levels]conductor): refused here,
            # as the older conductor would.
            raise messaging.UnsupportedVersion('1.9', method='release')
        extra = {} if timeout is None else {'timeout': timeout}
        cctxt = self.client.prepare(version='1.9', **extra)
        try:
            with _translate():
                return cctxt.call(ctxt, 'release',
                                  publish_hosts=sorted(set(publish_hosts)),
                                  clean_hosts=sorted(set(clean_hosts)))
        except messaging.RemoteError as exc:
            # NOTE: over RabbitMQ the server's refusal comes back as a
            # RemoteError naming it (the in-process transport raises it).
            if exc.exc_type == 'UnsupportedVersion':
                raise messaging.UnsupportedVersion('1.9',
                                                   method='release') from exc
            raise

    # --- secure cleanup between tenants (1.4) -----------------------------

    def start_cleaning(self, ctxt, hostnames):
        """Regions of these hosts were released (an ARQ deleted) or an
        operator asked for a clean: send what waits to the agents and
        publish the hosts; a cast."""
        return self._cast(ctxt, '1.4', 'start_cleaning',
                          hostnames=sorted(hostnames))

    def cleaning_progress(self, ctxt, deployable_uuid, cleaning_uuid, state,
                          error=None):
        """An agent's report of a cleaning try: 'cleaning' (a heartbeat),
        'available' or 'error'. CleaningConflict when the try is no longer
        current (the agent then stops)."""
        return self._call(ctxt, 'cleaning_progress', version='1.4',
                          deployable_uuid=deployable_uuid,
                          cleaning_uuid=cleaning_uuid, state=state,
                          error=error)

    # --- Kubernetes ResourceClaims (1.6) ------------------------------

    def prepare_k8s_device(self, ctxt, hostname, request, wait,
                           timeout=None):
        """Hold (and program, as the claim's config asks) one device of a
        ResourceClaim allocated on ``hostname``; returns what the
        container gets of it (deployable_uuid, device_uuid, identity,
        region_name, driver, pci_address, region_type, function_id,
        bitstream_id, attach_type, attach_info).

        request: {'claim_uid', 'namespace', 'claim_name', 'pool',
        'device', 'admin_access', 'config': None or {'bitstream_id' |
        'function_id', 'force'}}. The conductor waits at most ``wait``
        seconds for programming, then raises ClaimInProgress (call again:
        the same job is picked up). ClaimRefused (held by another, not
        available, not in the pool), BitstreamNotFound, Invalid (region
        type), ProgrammingError (the job failed): the device is not held.
        """
        extra = {} if timeout is None else {'timeout': timeout}
        cctxt = self.client.prepare(version='1.6', **extra)
        with _translate():
            return cctxt.call(ctxt, 'prepare_k8s_device', hostname=hostname,
                              request=request, wait=wait)

    def release_k8s_device(self, ctxt, hostname, claim_uid, device=None):
        """Free what the claim holds on ``hostname`` (one device, or all);
        returns the hostnames released. Releasing twice is harmless."""
        return self._call(ctxt, 'release_k8s_device', version='1.6',
                          hostname=hostname, claim_uid=claim_uid,
                          device=device)

    def _call(self, ctxt, method, version='1.2', **kwargs):
        # NOTE: 1.5 only when its argument is sent, so an agent's job
        # without a try number still reaches an older conductor.
        if 'try_number' in kwargs:
            version = '1.5'
        cctxt = self.client.prepare(version=version)
        with _translate():
            return cctxt.call(ctxt, method, **kwargs)


def _try_kwargs(try_number):
    return {} if try_number is None else {'try_number': try_number}


class _translate:
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, _tb):
        if isinstance(exc, messaging.RemoteError) and \
                exc.exc_type in _REMOTE_EXCEPTIONS:
            cls = _REMOTE_EXCEPTIONS[exc.exc_type]
            raise cls(message=exc.value) from exc
        return False


# The agent's client turns its calls' domain errors back the same way.
translate_remote_errors = _translate
