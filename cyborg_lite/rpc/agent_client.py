"""Client side of the agent RPC API (the conductor calls one host).

Messages go to topic ``rpc.AGENT_TOPIC`` on server ``hostname`` (the
agent's ``[DEFAULT]host``), as ironic's ``get_topic_for`` does.

API version history:

* 1.0 - request_report(hostname): cast; the agent scans and sends a full
        report at once (after the conductor lost or doubts its rows).
* 1.1 - program_region(job): cast; run one programming job (the dict of
        conductor/programming.agent_job) in the background, reporting
        back with ConductorAPI.job_progress / job_heartbeat.
* 1.2 - clean_region(request): cast; wipe one deployable between tenants
        (the dict of conductor/cleaning.agent_request) in the background,
        reporting back with ConductorAPI.cleaning_progress.
* 1.3 - program_region's job carries ``signature`` (the policy and what
        the agent verifies the image's signature with); a job under the
        ``enforce`` policy is sent at 1.3, so an older agent, which would
        not check it, refuses it instead of writing it unchecked.
* 1.4 - make_instance(request) and remove_instance(request): calls; make
        the instance a bind hands over (a vGPU type written into a VF of
        the vendor-specific VFIO framework) and report the host, or
        remove one this host made. An agent of 2026.1.0 has neither: a
        bind that needs one is refused on its host (InstanceNotMade,
        nothing sent, or the agent's UnsupportedVersion translated).

Add a method: bump RPC_API_VERSION, add a line above, and the endpoint
method with the same name on agent.manager.AgentManager; below the
[upgrade_levels]agent pin (rpc/pins.py) it needs a fallback, as the
conductor's client says.
"""
import oslo_messaging as messaging

from cyborg_lite.common import exception
from cyborg_lite.rpc import conductor_client
from cyborg_lite.rpc import transport as rpc

# The version that makes and removes instances at bind and release.
INSTANCES_VERSION = '1.4'


class AgentAPI:
    RPC_API_VERSION = '1.4'
    # The version of a program_region whose signature the agent must
    # check (see the history above).
    SIGNATURE_CHECK_VERSION = '1.3'

    def __init__(self, timeout=None, version_cap=None):
        # version_cap: [upgrade_levels]agent (rpc/pins.py).
        self.client = rpc.get_client(rpc.AGENT_TOPIC, self.RPC_API_VERSION,
                                     timeout=timeout,
                                     version_cap=version_cap)

    def request_report(self, ctxt, hostname):
        cctxt = self.client.prepare(server=hostname, version='1.0',
                                    retry=rpc.CAST_CONNECT_RETRIES)
        cctxt.cast(ctxt, 'request_report')

    def program_region(self, ctxt, hostname, job):
        enforced = (job.get('signature') or {}).get('policy') == 'enforce'
        cctxt = self.client.prepare(
            server=hostname,
            version=self.SIGNATURE_CHECK_VERSION if enforced else '1.1',
            retry=rpc.CAST_CONNECT_RETRIES)
        cctxt.cast(ctxt, 'program_region', job=job)

    def clean_region(self, ctxt, hostname, request):
        cctxt = self.client.prepare(server=hostname, version='1.2',
                                    retry=rpc.CAST_CONNECT_RETRIES)
        cctxt.cast(ctxt, 'clean_region', request=request)

    def make_instance(self, ctxt, hostname, request):
        """Have ``hostname``'s agent make the instance a bind hands over:
        ``request`` {'driver', 'identity', 'deployable_name',
        'attach_info'}; {'attach_info', 'reported'}. InstanceNotMade
        (nothing made) with why, also when that agent is too old to make
        one."""
        return self._instance_call(ctxt, hostname, 'make_instance', request)

    def remove_instance(self, ctxt, hostname, request):
        """Have the agent remove the instance it made on the handle's
        function (``request`` as make_instance's); whether one was there.
        InstanceNotMade when it is still there, or the agent cannot."""
        return self._instance_call(ctxt, hostname, 'remove_instance',
                                   request)

    def _instance_call(self, ctxt, hostname, method, request):
        too_old = exception.InstancesUnsupported(
            host=hostname, reason='its agent runs a release without RPC '
            '%s (%s): upgrade it to bind %s there' % (
                INSTANCES_VERSION, method, request.get('deployable_name')))
        if not self.client.can_send_version(INSTANCES_VERSION):
            # Pinned below 1.4 ([upgrade_levels]agent): nothing is sent.
            raise too_old
        cctxt = self.client.prepare(server=hostname,
                                    version=INSTANCES_VERSION)
        try:
            with conductor_client.translate_remote_errors():
                return cctxt.call(ctxt, method, request=request)
        except messaging.UnsupportedVersion as exc:
            raise too_old from exc
        except messaging.RemoteError as exc:
            # NOTE: over RabbitMQ an older agent's refusal is a RemoteError.
            if exc.exc_type == 'UnsupportedVersion':
                raise too_old from exc
            raise
