"""The real services around a host that does what a kernel does.

``make_host_env('fpga' | 'gpu')`` -> a started HostEnv: programming_env's
conductor (ConductorService publishing to the real Placement and, through
its Kubernetes sink, to the kube-apiserver stand-in) and agent
(AgentManager) over inproc://, the agent's driver reading a simulated
host the test acts on as the kernel would (``env.host``):

* ``fpga``: the fake driver's DFL card with [fake_driver]sriov, one VF per
  region (drivers/fake_host.FakeHost), or without, every region behind
  its PF;
* ``gpu``: two whole NVIDIA GPUs (tests/fixtures/drivers/gpu_host.GpuHost);
* ``vgpu``: an H200 with vGPU on the vendor-specific VFIO framework
  (tests/fixtures/drivers/vgpu_vfio_host.VgpuVfioHost).

Notifications go to oslo.messaging's test driver. The test drives the
agent's scans (``env.scan()``: the agent's own report_once, what its loop
runs each [agent]report_interval) and plays Nova: a claim in Placement,
then the bind, then libvirt's part (``env.host.bind_vfio`` of the ARQ's
attach handle); on delete libvirt gives the device back before Nova
deletes the ARQ (``env.release``).
"""
import json
import uuid

import pytest
from oslo_messaging.notify import _impl_test

from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.common import context
from cyborg_lite.db import device_history
from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.drivers import fake_host
from cyborg_lite.drivers import nvidia
from cyborg_lite.notifications import events as notifications
from cyborg_lite.placement import client as client_mod
from cyborg_lite.rpc import transport as rpc
from tests import waiting
from tests import releases
from tests.fixtures.drivers import gpu_host
from tests.fixtures.drivers import vgpu_vfio_host
from tests.functional import programming_env as pe
from tests.functional.placement.conftest import configure_placement
from tests.unit.conductor import bind_helpers
from tests.unit.kubernetes import fake_apiserver

CARD = pe.CARD
GPU_A, GPU_B = gpu_host.GPUS
HEALTH_CHANGE = 'accelerator.device.health_change'
RESOURCE = {'fpga': 'FPGA', 'gpu': 'PGPU', 'vgpu': 'VGPU'}
# A vGPU type: a device per vGPU the card can make of it.
SLICE_DEVICES = {'fpga': 2, 'gpu': 2,
                 'vgpu': sum(t[2] for t in vgpu_vfio_host.H200X_TYPES)}
TAINT_PREFIX = 'cyborg-lite.openstack.org/'


class HostEnv(pe.Env):
    """pe.Env over a simulated host, with Nova's and the schedulers'
    views."""

    def __init__(self, conf, kind, apiserver, tmp_path, hostname):
        self.kind = kind
        # NOTE: a name of its own: Placement is the session's.
        self.hostname = hostname
        self.apiserver = apiserver
        if kind == 'gpu':
            self.host = gpu_host.GpuHost(tmp_path / 'gpus')
            self.host.configure(conf)
        elif kind == 'vgpu':
            self.host = vgpu_vfio_host.VgpuVfioHost(tmp_path / 'h200')
            self.host.configure(conf)
        else:
            self.host = fake_host.FakeHost(conf.fake_driver.state_dir)
        super().__init__(conf)
        self.placement = client_mod.PlacementClient(
            client_mod.adapter_from_conf(conf))

    def start_agent(self):
        self.agent = agent_manager.AgentManager(
            self.conf, host=self.hostname, drivers=[self.new_driver()])
        self.agent.start()
        assert waiting.until(lambda: self.agent._announced)
        return self.agent

    def regions(self):
        return [d for device in self.inventory().devices
                for d in device.deployables]

    def start(self):
        if self.kind != 'vgpu':
            return super().start()
        self.conductor.start()
        self.start_agent()
        # One deployable per vGPU type the H200 supports.
        assert waiting.until(lambda: len(self.regions()) == len(
            vgpu_vfio_host.H200X_TYPES))
        return self

    def new_driver(self):
        if self.kind == 'fpga':
            return super().new_driver()
        driver = nvidia.NvidiaDriver(self.conf)
        driver.name = 'nvidia'
        return driver

    # --- the agent -------------------------------------------------------

    def scan(self, times=1):
        """``times`` of the agent's scan-and-report cycles."""
        for _ in range(times):
            self.agent.report_once()

    def restart_agent(self):
        """Stop the agent and start a new one on the same state (its
        health state file, the simulated host)."""
        self.agent.stop()
        self.start_agent()

    # --- the inventory as stored --------------------------------------------

    def inventory(self):
        return devices_db.load_inventory(self.hostname)

    def device(self, identity=None):
        identity = identity or (CARD if self.kind == 'fpga' else GPU_A)
        [device] = [d for d in self.inventory().devices
                    if d.identity == identity]
        return device

    def deployable(self, name='region0', identity=None):
        [found] = [d for d in self.device(identity).deployables
                   if d.name.endswith('_' + name)]
        return found

    def health_moves(self, identity=None):
        """[state] of the device's health changes in its history."""
        return [r.state for r in device_history.list_rows(
            self.device(identity).uuid)
            if r.event == 'device.health_change']

    # --- Nova and Placement ---------------------------------------------

    def root(self):
        return self.placement.get('/resource_providers?name=%s'
                                  % self.hostname)[
            'resource_providers'][0]['uuid']

    def candidates(self):
        """The providers Placement offers one accelerator of this host's
        kind on (allocation candidates, as Nova's scheduler asks)."""
        found = self.placement.get(
            '/allocation_candidates?resources=%s:1&in_tree=%s'
            % (RESOURCE[self.kind], self.root()))
        return {rp for request in found['allocation_requests']
                for rp in request['allocations']}

    def bind(self, name='region0', identity=None, instance=None):
        """Nova's boot: claim the deployable's provider for a new
        instance in Placement, then bind an ARQ to it; the Bound ARQ."""
        instance = instance or str(uuid.uuid4())
        rp = self.deployable(name, identity).rp_uuid
        self.placement.put('/allocations/%s' % instance, {
            'allocations': {rp: {'resources': {RESOURCE[self.kind]: 1}}},
            'project_id': 'p1', 'user_id': 'u1',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        profile = bind_helpers.make_profile(
            [{'resources:%s' % RESOURCE[self.kind]: '1'}])
        arq_uuid = bind_helpers.make_arq(profile_id=profile)
        self.api.bind_arqs(context.get_admin_context(), {arq_uuid: {
            'hostname': self.hostname, 'device_rp_uuid': rp,
            'instance_uuid': instance}})
        arq = waiting.read_until(
            lambda: bind_helpers.get_arq(arq_uuid),
            lambda a: a.state in ('Bound', 'BindFailed'),
            what='ARQ %s resolved' % arq_uuid)
        assert arq.state == 'Bound', arq.error
        return arq

    def handle_address(self, arq):
        """The PCI address of the function the ARQ is attached through."""
        with session.reader() as s:
            handle = s.get(models.AttachHandle, arq.attach_handle_id)
            info = json.loads(handle.attach_info)
        return '%s:%s:%s.%s' % (info['domain'], info['bus'],
                                info['device'], info['function'])

    def attach(self, arq):
        """libvirt's part of Nova's boot: the ARQ's function to
        vfio-pci; its address."""
        address = self.handle_address(arq)
        self.host.bind_vfio(address)
        return address

    def release(self, arq, address):
        """Nova's delete: libvirt gives the function back to its host
        driver, the agent scans, then the ARQ is unbound and the
        instance's allocation removed."""
        self.host.unbind_vfio(address)
        self.scan()
        releases.unbind(self.api, context.get_admin_context(), [arq.uuid])
        self.placement.delete('/allocations/%s' % arq.instance_uuid)

    # --- Kubernetes and notifications ---------------------------------

    def slice_taints(self):
        """{device name: taint keys (prefix left out)} in the host's
        ResourceSlices."""
        return {d['name']: sorted(t['key'].replace(TAINT_PREFIX, '')
                                  for t in d.get('taints', []))
                for s in self.apiserver.slices.values()
                if s['spec']['nodeName'] == self.hostname
                for d in s['spec'].get('devices', [])}

    def notified(self, event_type=None):
        """The event types of the notifications sent so far."""
        assert notifications.flush()
        return [m['event_type'] for _c, m, _p, _r in _impl_test.NOTIFICATIONS
                if event_type in (None, m['event_type'])]


@pytest.fixture
def make_host_env(conf, sqlite_db, tmp_path, placement):
    """make_host_env(kind, sriov=True) -> a started HostEnv (stopped after
    the test), its health hysteresis 2 readings each way; ``sriov``
    False: the fake card's regions all behind its PF."""
    envs, servers = [], []

    def make(kind='fpga', sriov=True):
        hostname = 'host-' + uuid.uuid4().hex[:8]
        apiserver = fake_apiserver.FakeKubeApiServer().start()
        servers.append(apiserver)
        apiserver.add_node(hostname)
        pe.configure(conf, tmp_path)
        conf.set_override('sriov', sriov, group='fake_driver')
        conf.set_override('readings_to_fault', 2, group='health')
        conf.set_override('readings_to_clear', 2, group='health')
        conf.set_override('inventory_sinks', ['placement', 'kubernetes'],
                          group='conductor')
        conf.set_override('hosts', [hostname], group='kubernetes')
        conf.set_override('kubeconfig', apiserver.write_kubeconfig(
            tmp_path / 'kubeconfig'), group='kubernetes')
        conf.set_override('driver', ['test'],
                          group='oslo_messaging_notifications')
        configure_placement(conf, placement.endpoint)
        notifications.reset()
        _impl_test.reset()
        env = HostEnv(conf, kind, apiserver, tmp_path, hostname)
        envs.append(env)
        env.start()
        waiting.read_until(env.slice_taints,
                           lambda found: len(found) == SLICE_DEVICES[kind],
                           what='the host in the ResourceSlices')
        return env
    yield make
    for env in envs:
        env.stop()
    for server in servers:
        server.stop()
    rpc.cleanup()
    notifications.reset()
    _impl_test.reset()
