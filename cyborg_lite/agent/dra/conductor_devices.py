"""The kubelet plugin's two device callables (device_api.py), served by the
conductor: ``prepare_device`` asks it to hold (and program) the region for
the claim (conductor RPC prepare_k8s_device), ``release_device`` to free
it (release_k8s_device). The container gets the region's device nodes
from the driver that reported it (drivers/base.ContainerDevicesInterface)
and a few environment variables naming it. What Prepare makes (a MIG
placement's GPU and compute instance, a vGPU type written into the VF the
claim's handle names) the driver makes here, once the conductor holds the
handle for the claim, with the Nova bind's code (drivers/base.
InstanceInterface); the release's clean destroys it. A vGPU is handed
over as its VF's PCI address, and the host is reported at once, so that
the slices and Placement narrow to what the card can still make.

Programming may outlast one RPC call: the conductor answers
ClaimInProgress after ``wait`` seconds and this asks again, on the same
job, until ``[programming]bind_wait_timeout`` has passed. The plugin
meanwhile answers the kubelet "still being prepared" and its retries wait
on this same preparation; after a restart of the agent, the retry's call
finds the conductor's job and waits on it. A device allocated with our
binding condition was programmed before the pod was bound
(kubernetes/binding.py): its prepare neither programs nor waits.
"""
import json
import time

from oslo_log import log as logging

from cyborg_lite.agent.dra import device_api
from cyborg_lite.common import context
from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.drivers import base

LOG = logging.getLogger(__name__)

# A prepare the conductor refused: the claim fails with its reason.
_REFUSALS = (exception.Invalid, exception.NotFound, exception.Conflict,
             exception.Forbidden, exception.ProgrammingError)


class ConductorDevices:

    def __init__(self, conductor_api, hostname, drivers, conf,
                 report=None):
        self.conductor = conductor_api
        # The agent's scan and report, after Prepare made a vGPU.
        self.report = report or (lambda: None)
        self.hostname = hostname
        self.drivers = {d.name: d for d in drivers}
        # Each call waits at most half the RPC timeout for programming.
        self.wait = max(1.0, conf.agent.rpc_timeout / 2.0)
        self.total = conf.programming.bind_wait_timeout

    def prepare_device(self, request):
        payload = {
            'claim_uid': request.claim_uid, 'namespace': request.namespace,
            'claim_name': request.claim_name, 'pool': request.pool,
            'device': request.device,
            'admin_access': bool(request.admin_access),
            'config': request.config.to_dict() if request.config else None,
            'pods': list(request.pods),
            'bound_when_programmed': bool(request.bound_when_programmed)}
        deadline = time.monotonic() + self.total
        while True:
            try:
                found = self.conductor.prepare_k8s_device(
                    context.get_admin_context(), self.hostname, payload,
                    self.wait)
                break
            except exception.ClaimInProgress as e:
                if request.bound_when_programmed:
                    # NOTE: the pod was to bind once the region runs its
                    # bitstream; Prepare does not wait for the job.
                    raise device_api.DevicePrepareError(
                        'the region is still being programmed (its binding '
                        'condition is not True yet): %s' % e)
                if time.monotonic() >= deadline:
                    raise device_api.DevicePrepareError(str(e))
                LOG.info('%s; asking again', e)
            except _REFUSALS as e:
                raise device_api.DevicePrepareError(str(e))
        try:
            return self._prepared(found)
        except device_api.DevicePrepareError:
            # NOTE: a failed prepare holds nothing: the conductor frees
            # the hold and cleans what may have been made.
            self.release_device(request.claim_uid, request.pool,
                                request.device)
            raise

    def _make_instance(self, found):
        """What Prepare makes (a MIG placement's GPU instance: its handle
        names it, common/device_records PCI_OPTIONAL_INFO), made by the
        driver that reported it once the claim holds the handle; the
        (name, value) pairs naming it to the container. A refusal fails
        the claim: the hold is released, and the clean destroys whatever
        was made."""
        info = _attach_info(found)
        vgpu = 'vgpu_type' in info
        if 'mig_placement' not in info and not vgpu:
            return []
        driver = self.drivers.get(found['driver'])
        if not isinstance(driver, base.InstanceInterface):
            raise device_api.DevicePrepareError(
                'driver %s of %s makes no instance' % (found['driver'],
                                                       found['identity']))
        try:
            made = driver.make_instance(found['identity'],
                                        found['region_name'], info)
        except exception.DriverError as e:
            if vgpu:
                # NOTE: the card was not as the last report said.
                self.report()
            raise device_api.DevicePrepareError(str(e))
        if vgpu:
            self.report()
            return [('CYBORG_LITE_VGPU_TYPE', info['vgpu_type']),
                    ('CYBORG_LITE_PCI_ADDRESS',
                     device_records.pci_address(made))]
        return [('CYBORG_LITE_MIG_PLACEMENT', info['mig_placement']),
                ('CYBORG_LITE_MIG_GPU_INSTANCE_ID',
                 str(made.get('mig_gpu_instance', '')))]

    def _prepared(self, found):
        env = [('CYBORG_LITE_DEPLOYABLE_UUID', found['deployable_uuid']),
               ('CYBORG_LITE_DEVICE_UUID', found['device_uuid'])]
        env += self._make_instance(found)
        named = {name for name, _value in env}
        for name, key in (('CYBORG_LITE_FUNCTION_ID', 'function_id'),
                          ('CYBORG_LITE_BITSTREAM_ID', 'bitstream_id'),
                          ('CYBORG_LITE_REGION_TYPE', 'region_type'),
                          ('CYBORG_LITE_PCI_ADDRESS', 'pci_address')):
            # A vGPU's PCI address is its VF's, not its GPU's.
            if found.get(key) and name not in named:
                env.append((name, found[key]))
        return device_api.PreparedDevice(
            device_nodes=tuple(self._device_nodes(found)), env=tuple(env))

    def _device_nodes(self, found):
        driver = self.drivers.get(found['driver'])
        if not isinstance(driver, base.ContainerDevicesInterface):
            return []
        try:
            nodes = driver.device_nodes(found['identity'],
                                        found['region_name'],
                                        _attach_info(found))
        except exception.DriverError as e:
            raise device_api.DevicePrepareError(str(e))
        return [device_api.DeviceNode(path=path, host_path=host_path
                                      if host_path != path else None)
                for path, host_path in nodes]

    def release_device(self, claim_uid, pool, device):
        self.conductor.release_k8s_device(context.get_admin_context(),
                                          self.hostname, claim_uid, device)

    def release_claim(self, claim_uid):
        """Everything the claim holds on this host (a claim the plugin
        never recorded: its prepare was cut off)."""
        self.conductor.release_k8s_device(context.get_admin_context(),
                                          self.hostname, claim_uid, None)


def _attach_info(found):
    """The claim's handle's attach_info, as a dict."""
    info = found.get('attach_info') or {}
    if isinstance(info, str):
        info = json.loads(info)        # as the database keeps it
    return info
