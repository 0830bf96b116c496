"""One matrix host: its name, project and namespace, its agent (the
fake driver, and NVIDIA GPUs when asked for) serving the kubelet plugin,
its kubelet, and what it reads of the API. What it does as Nova, as the
Kubernetes users and the operator, and what it shows, are the parts it
is made of (nova.py, kube.py, programs.py, views.py, cards.py)."""
from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.drivers import fake
from cyborg_lite.drivers import fake_host
from cyborg_lite.drivers import nvidia
from tests import waiting
from tests.fixtures.drivers import every_mode_host
from tests.fixtures.drivers import gpu_host
from tests.fixtures.drivers import mig_host
from tests.fixtures.drivers import vgpu_vfio_host
from tests.functional.kubernetes import kubelet as kubelet_mod
from tests.functional.matrix import held
from tests.functional.matrix.cards import Cards
from tests.functional.matrix.cards import FIRST_FUNCTION
from tests.functional.matrix.cards import MEMORY_MB
from tests.functional.matrix.cards import REGION_TYPE
from tests.functional.matrix.kube import KubernetesPart
from tests.functional.matrix.nova import NovaOnThisHost
from tests.functional.matrix.nova import NovaPart
from tests.functional.matrix.programs import Programs
from tests.functional.matrix.views import Views


class Host(Views, NovaPart, Programs, KubernetesPart, Cards):
    """One host of ``services``: the fake driver's cards (``cards`` of
    ``regions``; ``sriov``: a VF per region; ``numa_nodes``), an agent
    serving the kubelet plugin, and a kubelet. ``gpus``: whole NVIDIA
    GPUs too (tests/fixtures/drivers/gpu_host.py, the nvidia driver);
    ``'mig'``: GPUs in MIG mode offered as their placements
    (tests/fixtures/drivers/mig_host.py); ``'vgpu'``: an H200 whose VFs
    make vGPUs (tests/fixtures/drivers/vgpu_vfio_host.py), its kernel
    acting on the driver's writes; ``'every'``: one GPU of each of the
    three (tests/fixtures/drivers/every_mode_host.py).
    ``start()``, ``stop()``."""

    def __init__(self, services, tmp_path, short_dir, cards=1, regions=2,
                 sriov=False, numa_nodes=1, gpus=False, **fake_driver):
        self.services = services
        self.conf = services.conf
        self.host = services.host_names.pop(0)
        self.namespace = 'ns-' + self.host
        self.project = services.namespaces[self.namespace]
        # The project's member, as Nova and the Kubernetes users act.
        self.member = {'X-Roles': 'member,reader',
                       'X-Project-Id': self.project, 'X-User-Id': 'alice'}
        self.tmp_path = tmp_path
        self.short_dir = short_dir
        self.cards = cards
        self.regions_per_card = regions
        kind = {'mig': mig_host.MigHost,
                'vgpu': vgpu_vfio_host.VgpuVfioHost,
                'every': every_mode_host.EveryModeHost}.get(
                    gpus, gpu_host.GpuHost)
        self.gpu_host = kind(tmp_path / 'gpus') if gpus else None
        self.fake_options = dict(
            num_cards=cards, regions_per_card=regions, sriov=sriov,
            numa_nodes=numa_nodes, local_memory_mb=MEMORY_MB,
            program_delay=0.05, clean_delay=0.05,
            region_types=[REGION_TYPE], initial_function_id=FIRST_FUNCTION,
            state_dir=str(tmp_path / 'fake_fpga'), **fake_driver)
        # What the kernel does to the fake cards (libvirt's vfio-pci).
        self.kernel = fake_host.FakeHost(self.fake_options['state_dir'])
        self._roots = {}
        self._stack = []
        self.nova = NovaOnThisHost(self)
        self.agent = None

    @property
    def heard(self):
        return self.services.heard

    def call(self, *args, **kwargs):
        return self.services.call(*args, **kwargs)

    # --- set-up ---------------------------------------------------------

    def _configure(self):
        """This host's options (the other hosts' agents are stopped)."""
        short = self.short_dir
        for name, value in self.fake_options.items():
            self.conf.set_override(name, value, group='fake_driver')
        for name, value in (('kubelet_registry_dir', short + '/reg'),
                            ('kubelet_plugins_dir', short + '/plugins'),
                            ('cdi_dir', short + '/cdi'),
                            ('plugin_state_dir', short + '/state')):
            self.conf.set_override(name, value, group='kubernetes')
        self.conf.set_override('state_dir', str(self.tmp_path / 'health'),
                               group='health')
        # The VFs and MIG instances this host made: its own (the
        # addresses repeat per host; the world's options outlive a test).
        self.conf.set_override('vgpu_state_file',
                               str(self.tmp_path / 'vgpus_made.json'),
                               group='nvidia_driver')
        self.conf.set_override('mig_state_file',
                               str(self.tmp_path / 'mig_made.json'),
                               group='nvidia_driver')
        self.conf.set_override('mig_vgpu_state_file',
                               str(self.tmp_path / 'mig_vgpus_made.json'),
                               group='nvidia_driver')
        if self.gpu_host is not None:
            self.gpu_host.configure(self.conf)

    def start(self, expected=None):
        """Start the agent and the kubelet; wait until the ``expected``
        deployables (every region by default) are in the database, in
        Placement and in the slices."""
        self._configure()
        self.start_agent()
        self.kubelet = kubelet_mod.TestKubelet(self.short_dir + '/reg')
        self.kubelet.register()
        self._stack.append(self.kubelet.close)
        self.wait_published(expected)
        return self

    def _drivers(self):
        self.fake = held.HeldFake(self.conf)
        if self.gpu_host is None:
            return [self.fake]
        gpus = nvidia.NvidiaDriver(self.conf)
        gpus.name = 'nvidia'
        if hasattr(self.gpu_host, 'write'):
            # Its VFs: the kernel's side of the driver's writes.
            gpus.write_attribute = self.gpu_host.write
        return [self.fake, gpus]

    def start_agent(self):
        client = self.services.apiserver.api_client()
        agent = self.agent = agent_manager.AgentManager(
            self.conf, host=self.host, drivers=self._drivers(),
            k8s_api_client=client)
        agent.start()
        assert waiting.until(lambda: agent._announced)

        def stop():
            if self.agent is agent:
                agent.stop()
                self.agent = None
            client.close()
        self._stack.append(stop)
        return agent

    def wait_published(self, expected=None):
        """Every region in the database, in Placement and in the slices."""
        expected = expected or self.cards * self.regions_per_card + (
            len(self.gpu_host.health) if self.gpu_host else 0)
        waiting.read_until(self.deployables,
                           lambda deps: len(deps) >= expected, 30,
                           what='the regions in the database')
        waiting.read_until(self.slices, lambda s: len(s) >= expected, 30,
                           what='the regions in the slices')

    def stop(self):
        if self.agent is not None:
            self.fake.cleans.release()
            self.fake.programs.release()
        while self._stack:
            self._stack.pop()()
        self.nova.free_all()

    # --- the API --------------------------------------------------------

    def devices(self):
        return self.call('GET', '/devices', 200, params={
            'hostname': self.host}).json()['devices']

    def device(self, card=0):
        """Card ``card``'s device (card 0 is the first PCI address)."""
        [device] = [d for d in self.devices()
                    if d['pci_bus_id'] == fake._address(card, 0)]
        return device

    def deployables(self):
        prefix = self.host + '_'
        return [d for d in self.call('GET', '/deployables', 200).json()[
            'deployables'] if d['name'].startswith(prefix)]

    def region(self, name='region0', card=0):
        """The deployable of region ``name`` of card ``card``."""
        [dep] = [d for d in self.deployables()
                 if self.key_of(d) == self.short(card, name)]
        return dep

    def short(self, card, name):
        return name if self.cards == 1 else 'c%d/%s' % (card, name)

    def key_of(self, dep):
        """A deployable's short name: ``region0``, or ``c1/region0`` on a
        host of several cards (its name is <host>_<card's address>_<region
        name>)."""
        _host, address, name = dep['name'].split('_', 2)
        if dep['driver_name'] != 'fake':
            return '%s/%s' % (address, name)
        return self.short(int(address.split(':')[1], 16) - fake.FIRST_BUS,
                          name)

    def history(self, device_uuid):
        return self.call('GET', '/devices/%s/history' % device_uuid,
                         200).json()['history']

    def wait_state(self, name, state, card=0, timeout=20):
        """The deployable once its device_state is ``state``."""
        return waiting.read_until(
            lambda: self.region(name, card),
            lambda d: d['device_state'] == state, timeout,
            what='%s %s' % (name, state))

    # --- the agent ------------------------------------------------------

    def scan(self, times=1):
        """``times`` agent scans, each reported; the last answer."""
        ack = None
        for _ in range(times):
            ack = self.agent.report_once()
        return ack

    def settle(self):
        """Wait until the agent ran no job or clean any more: the scan
        each ends with (agent/manager.py ``_after_job``) is reported."""
        agent = self.agent
        assert waiting.until(
            lambda: agent.jobs.idle() and agent.cleaner.idle()), \
            'the agent still runs a job or a clean'
