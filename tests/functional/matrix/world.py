"""Hosts on the real services, in this process, where features meet.

The all-in-one's parts, each the real one: the API served over HTTP
(cheroot), the ConductorService publishing to the real Placement (the
session's, tests/functional/conftest.py) and to the kube-apiserver
stand-in (strict schemas), and per host an AgentManager with the fake
driver that serves the kubelet's DRA plugin on real unix sockets, which
a test client plays the kubelet on. Notifications go out through
oslo.messaging's Notifier (messagingv2) on ``inproc://`` to a
notification listener, as one on RabbitMQ hears them.

``Services`` (the API, the conductor, the database, the apiserver
stand-in, the listener) live for all the matrix tests; each test gets a
``Host`` of its own (its own name, agent, fake cards, providers and
slices), so tests never see each other's devices.

The test drives it as its users do: Nova (tests/functional/nova_order.py,
its scheduler kept to this host's tree: the session's Placement is
shared), libvirt (the fake host's vfio-pci action on the bound
function, drivers/fake_host.py), a kubelet, an operator over the API,
the hardware through the fake driver's files; the driver's cleans and
loads can be held half way (held.py). The agent scans when the test says
(``scan``), and once after each job or clean it ran (its report of what
the work left): ``settle()`` waits for those, so that a fault written
after it is read only by the scans the test asks for.

What it shows are the views every scenario checks:
``offers()`` (Placement: allocation candidates and reserved
inventories), ``slices()`` (the ResourceSlices' devices and their
taints), ``history(device)`` (GET /v2/devices/{uuid}/history) and
``heard_since(mark)`` (the notifications, each checked against its
schema: heard.py).
"""
import collections
import os
import uuid

import oslo_messaging as messaging
import requests
from oslo_config import cfg

from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.api import deploy
from cyborg_lite.api import microversion
from cyborg_lite.api import policy
from cyborg_lite.api import server as api_server
from cyborg_lite.conductor import service as conductor_service
from cyborg_lite.db import migration
from cyborg_lite.db.sql import session
from cyborg_lite.drivers import fake
from cyborg_lite.drivers import fake_host
from cyborg_lite.drivers import nvidia
from cyborg_lite.notifications import events as notifications
from cyborg_lite.rpc import transport as rpc
from tests import signing_keys
from tests import waiting
from tests.fixtures.drivers import every_mode_host
from tests.fixtures.drivers import gpu_host
from tests.fixtures.drivers import mig_host
from tests.fixtures.drivers import vgpu_vfio_host
from tests.functional import nova_order
from tests.functional.kubernetes import kubelet as kubelet_mod
from tests.functional.matrix import heard as heard_mod
from tests.functional.matrix import held
from tests.functional.placement import conftest as placement_fx
from tests.unit.bitstreams import builders
from tests.unit.kubernetes import resource_claims as rc

LATEST = {'OpenStack-API-Version': 'accelerator ' +
          microversion.VERSIONS[-1]}
# The cloud's operator (an admin of no project: what it creates is
# public).
OPERATOR = {'X-Roles': 'admin', 'X-User-Id': 'operator'}
MEMORY_MB = 4096
# The fake driver's regions: builders' images are made for this type.
REGION_TYPE = builders.hex32(builders.INTERFACE_UUID)
REGION_TRAIT = 'CUSTOM_FPGA_REGION_' + REGION_TYPE.upper()
FIRST_FUNCTION = builders.hex32(builders.AFU_UUID)
WIPE = {'pending-cleaning': 'cleaning'}


class NovaOnThisHost(nova_order.Nova):
    """Nova, asked to boot on this host: of Placement's candidates, those
    in its tree (the session's Placement serves other tests' hosts)."""

    def __init__(self, host):
        super().__init__(host.services.api + '/v2',
                         host.services.placement.endpoint,
                         lambda rp: host.host, caller=host.member)
        self.host = host
        self.claimed = []

    def candidates(self, groups):
        root = self.host.root()
        return [c for c in super().candidates(groups)
                if all(self.host.root_of(rp) == root
                       for rp in c['allocations'])]

    def claim(self, instance, candidate):
        self.claimed.append(instance)
        super().claim(instance, candidate)

    def free_all(self):
        """What Nova held in the session's Placement, given back."""
        for instance in self.claimed:
            self._free(instance)


class Services:
    """The API, a conductor, the database, the apiserver stand-in and a
    notification listener, for every host of the matrix tests;
    ``start()``, ``stop()``. ``host_names``: the hosts the Kubernetes
    sink publishes ([kubernetes]hosts is read once, at start), given to
    ``Host`` one each."""

    def __init__(self, conf, placement, apiserver, state_dir, hosts=64):
        self.conf = conf
        self.placement = placement
        self.apiserver = apiserver
        self.state_dir = state_dir
        tag = uuid.uuid4().hex[:6]
        self.host_names = ['mx%s-%d' % (tag, i) for i in range(hosts)]
        # Each host's Kubernetes namespace acts for a project of its own.
        self.namespaces = {'ns-' + h: 'project-' + h
                           for h in self.host_names}
        self.heard = heard_mod.Heard()
        self._stack = []
        self._configure()

    def _configure(self):
        conf = self.conf
        placement_fx.configure_placement(conf, self.placement.endpoint)
        for group, values in {
                None: {'transport_url': 'inproc://',
                       'state_path': self.state_dir},
                'database': {'connection': 'sqlite:///%s' % os.path.join(
                    self.state_dir, 'cyborg_lite.sqlite')},
                'api': {'auth_strategy': 'noauth'},
                'agent': {'report_interval': 3600, 'heartbeat_interval': 1},
                'health': {'readings_to_fault': 1, 'readings_to_clear': 1},
                'conductor': {'inventory_sinks': ['placement',
                                                  'kubernetes']},
                'bitstreams': {'store_dir': os.path.join(self.state_dir,
                                                         'store')},
                'kubernetes': {
                    'enabled': True, 'hosts': self.host_names,
                    'namespace_projects': self.namespaces,
                    'kubeconfig': self.apiserver.write_kubeconfig(
                        os.path.join(self.state_dir, 'kubeconfig')),
                    'prepare_timeout': 30.0},
                'oslo_messaging_notifications': {'driver': ['messagingv2']},
        }.items():
            for name, value in values.items():
                conf.set_override(name, value, group=group)
        for host in self.host_names:
            self.apiserver.add_node(host)

    def start(self):
        migration.upgrade()
        notifications.reset()
        policy.reset()
        self._start_listener()
        conductor = conductor_service.ConductorService(self.conf,
                                                       host='cond-mx')
        conductor.start()
        self._stack.append(conductor.stop)
        api = api_server.Server(deploy.loadapp_serving(self.conf),
                                '127.0.0.1', 0).start()
        self._stack.append(api.stop)
        self.api = 'http://127.0.0.1:%d' % api.port
        return self

    def _start_listener(self):
        # NOTE: options of its own: one thread hands the messages over,
        # in the order they come (the services' pools are CONF's).
        conf = cfg.ConfigOpts()
        conf([], project='matrix-listener')
        transport = messaging.get_notification_transport(conf,
                                                         url='inproc://')
        listener = messaging.get_notification_listener(
            transport, [messaging.Target(topic='notifications')],
            [self.heard], executor='threading')
        conf.set_override('executor_thread_pool_size', 1)
        listener.start()

        def stop():
            listener.stop()
            listener.wait()
            transport.cleanup()
        self._stack.append(stop)

    def stop(self):
        try:
            while self._stack:
                self._stack.pop()()
        finally:
            notifications.reset()
            policy.reset()
            rpc.cleanup()
            session.dispose_all()

    def call(self, method, path, status=None, headers=OPERATOR, **kwargs):
        """The API at its latest version, as ``headers``' caller."""
        resp = requests.request(method, self.api + '/v2' + path,
                                headers=dict(LATEST, **headers),
                                timeout=60, **kwargs)
        if status is not None:
            assert resp.status_code == status, (
                method, path, resp.status_code, resp.text)
        return resp

    def placement_call(self, method, path, status=(200, 204), **kwargs):
        resp = requests.request(method, self.placement.endpoint + path,
                                headers=nova_order.PLACEMENT, timeout=30,
                                **kwargs)
        assert resp.status_code in status, resp.text
        return resp


class Host:
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

    def new_driver(self):
        driver = fake.FakeDriver(self.conf)
        driver.name = 'fake'
        return driver

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

    # --- what the schedulers see ---------------------------------------

    def root(self):
        if 'root' not in self._roots:
            [found] = self.services.placement_call(
                'GET', '/resource_providers', params={'name': self.host}
            ).json()['resource_providers']
            self._roots['root'] = found['uuid']
        return self._roots['root']

    def root_of(self, rp_uuid):
        if rp_uuid not in self._roots:
            self._roots[rp_uuid] = self.services.placement_call(
                'GET', '/resource_providers/' + rp_uuid).json()[
                'root_provider_uuid']
        return self._roots[rp_uuid]

    def providers(self, deployables=None):
        """{rp uuid: [short names of the deployables it offers]}."""
        by_rp = {}
        for dep in deployables or self.deployables():
            by_rp.setdefault(dep['rp_uuid'], []).append(self.key_of(dep))
        return {rp: sorted(names) for rp, names in by_rp.items()}

    def offers(self, resource_class='FPGA', required=(), deployables=None):
        """{deployable short name: 'offered' | 'reserved' | 'allocated' |
        'refused'} as Placement has it: a deployable whose provider is
        an allocation candidate for one ``resource_class`` (with the
        ``required`` traits) is offered; else one whose inventory is all
        reserved is reserved; else one whose provider Nova holds is
        allocated; else it is refused (the required traits)."""
        place = self.services.placement_call
        params = {'resources': '%s:1' % resource_class,
                  'in_tree': self.root(), 'limit': 1000}
        if required:
            params['required'] = ','.join(required)
        candidates = place('GET', '/allocation_candidates',
                           params=params).json()['allocation_requests']
        offered = {rp for c in candidates for rp in c['allocations']}
        view = {}
        for rp, names in self.providers(deployables).items():
            inventory = place('GET', '/resource_providers/%s/inventories'
                              % rp).json()['inventories'].get(resource_class)
            if inventory is None:
                continue
            used = place('GET', '/resource_providers/%s/usages' % rp
                         ).json()['usages'].get(resource_class, 0)
            state = ('offered' if rp in offered else
                     'reserved' if inventory['reserved'] >=
                     inventory['total'] else
                     'allocated' if used else 'refused')
            view.update((name, state) for name in names)
        return view

    def traits(self, name='region0', card=0):
        """Placement's traits on the provider of a deployable."""
        rp = self.region(name, card)['rp_uuid']
        return set(self.services.placement_call(
            'GET', '/resource_providers/%s/traits' % rp).json()['traits'])

    def slice_devices(self):
        """{deployable uuid: device entry} of this host's slices."""
        found = {}
        for slice_ in list(self.services.apiserver.slices.values()):
            if slice_['spec'].get('nodeName') != self.host:
                continue
            for device in slice_['spec'].get('devices', []):
                dep = device['attributes'].get('deployableUUID')
                found[dep['string'] if dep else device['name']] = device
        return found

    def slices(self, deployables=None):
        """{deployable short name: sorted taints, each its reason (and
        '=nova' for the in-use one)} of this host's ResourceSlices; the
        wipe's two states are one taint, ``cleaning`` (a scheduler reads
        the same NoSchedule in both; the region moves on to ``cleaning``
        without a publish, its capacity unchanged)."""
        names = {d['uuid']: self.key_of(d)
                 for d in deployables or self.deployables()}
        view = {}
        for dep_uuid, device in self.slice_devices().items():
            taints = []
            for taint in device.get('taints', []):
                reason = WIPE.get(taint['key'].split('/', 1)[1],
                                  taint['key'].split('/', 1)[1])
                taints.append(reason + ('=' + taint['value']
                                        if reason == 'in-use' else ''))
            view[names.get(dep_uuid, dep_uuid)] = sorted(taints)
        return view

    def slice_device(self, name='region0', card=0):
        return self.slice_devices()[self.region(name, card)['uuid']]

    def wait_views(self, offers=None, slices=None, timeout=20, **query):
        """Wait until Placement (``offers``, for ``query``: see offers())
        and the slices show what is expected (a change that gives
        capacity back may be published after its call returns);
        AssertionError with the last views otherwise."""
        if offers is not None:
            waiting.read_until(lambda: self.offers(**query),
                               lambda found: found == offers, timeout,
                               what='Placement %s' % offers)
        if slices is not None:
            waiting.read_until(self.slices,
                               lambda found: found == slices, timeout,
                               what='slices %s' % slices)

    def views(self, **query):
        """(Placement, slices) now."""
        deployables = self.deployables()
        return (self.offers(deployables=deployables, **query),
                self.slices(deployables))

    # --- history and notifications -------------------------------------

    def mark(self, *device_uuids):
        """Where the notifications and these devices' histories stand."""
        assert notifications.flush()
        with self.heard.lock:
            heard = len(self.heard.messages)
        return heard_mod.Mark(heard, {u: len(self.history(u))
                                      for u in device_uuids})

    def heard_since(self, mark, *uuids):
        """[(event, data)] of notifications since ``mark`` naming one of
        ``uuids`` (of this host's when none), each checked against its
        schema."""
        assert notifications.flush()
        with self.heard.lock:
            messages = list(self.heard.messages[mark.heard:])
        events = [heard_mod.checked(m) for m in messages]
        if not uuids:
            return [(e, d) for e, d in events
                    if d.get('hostname') in (None, self.host)]
        wanted = set(uuids)
        return [(e, d) for e, d in events if wanted & heard_mod.uuids_in(d)]

    def wait_heard(self, mark, expected, *uuids, timeout=15):
        """The events heard since ``mark`` about ``uuids`` (of the kinds
        ``expected`` names: ``arq.``, ``device.``...), in the order heard,
        once they are ``expected`` in any order: each object's own come
        in its order, but two threads' (the API's and a conductor's)
        may interleave either way between a commit and its notification;
        the history has the order of the commits."""
        kinds = tuple({e.split('.')[0] + '.' for e in expected})
        wanted = collections.Counter(expected)
        return waiting.read_until(
            lambda: [(e, d) for e, d in self.heard_since(mark, *uuids)
                     if e.startswith(kinds)],
            lambda got: collections.Counter(e for e, _d in got) == wanted,
            timeout, what='notifications %s' % expected)

    def history_since(self, mark, device_uuid):
        """[(event, state)] of the device's history rows since ``mark``."""
        rows = self.history(device_uuid)[mark.history[device_uuid]:]
        return [(r['event'], r['state']) for r in rows]

    # --- the hardware and the agent ------------------------------------

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

    def fme_error(self, text, card=0, name='catfatal_errors'):
        """Write one of the card's FME error registers, as docs/drivers.md
        says to inject a fault."""
        base_index = card * (self.regions_per_card + 1)
        path = os.path.join(self.fake_options['state_dir'], 'sys', 'class',
                            'fpga_region', 'region%d' % base_index,
                            'dfl-fme.%d' % card, 'errors', name)
        with open(path, 'w') as f:
            f.write(text)

    def loaded(self, name='region0', card=0):
        """The function the simulated region holds now."""
        return self.new_driver().loaded_function(
            fake._address(card, 0), name)

    def memory_path(self, name='region0', card=0):
        return self.new_driver().local_memory_path(fake._address(card, 0),
                                                   name)

    def give_tenant_data(self, name='region0', card=0, text='tenant data'):
        with open(self.memory_path(name, card), 'w') as f:
            f.write(text)

    def memory(self, name='region0', card=0):
        with open(self.memory_path(name, card)) as f:
            return f.read()

    def bound_region(self, arq, device_uuid=None):
        """The short name of the deployable a Bound ARQ holds (its
        bind's history row names it)."""
        device_uuid = device_uuid or self.device()['uuid']
        [dep_uuid] = [r['deployable_uuid'] for r in self.history(device_uuid)
                      if r['event'] == 'arq.bind.end' and
                      r['object_uuid'] == arq['uuid']]
        [name] = [self.key_of(d) for d in self.deployables()
                  if d['uuid'] == dep_uuid]
        return name

    def hand_to_guest(self, arq):
        """What libvirt does once Nova's ARQ is Bound: its attach handle's
        function to vfio-pci (the kernel's part, fake_host)."""
        address = handle_address(arq)
        self._kernel_of(address).bind_vfio(address)
        return address

    def give_back(self, arq):
        """What libvirt does before Nova deletes the ARQs: the function
        back to its host driver."""
        address = handle_address(arq)
        self._kernel_of(address).unbind_vfio(address)

    def _kernel_of(self, address):
        if self.gpu_host is not None and address in self.gpu_host.health:
            return self.gpu_host
        return self.kernel

    # --- Nova, jobs, cleaning ------------------------------------------

    def profile(self, extra=None, traits=(), more_groups=()):
        """A device profile (an admin's, public) for one region of the
        fake driver's type with ``extra`` keys and ``traits``, then
        ``more_groups``; its name."""
        group = {'resources:FPGA': '1',
                 'resources:CUSTOM_FPGA_LOCAL_MEMORY_MB': str(MEMORY_MB),
                 'trait:' + REGION_TRAIT: 'required'}
        group.update(('trait:' + t, 'required') for t in traits)
        group.update(extra or {})
        name = 'dp-%s' % uuid.uuid4().hex[:8]
        self.call('POST', '/device_profiles', 201, headers=OPERATOR,
                  json=[{'name': name,
                         'groups': [group] + list(more_groups)}])
        return name

    def boot(self, profile):
        """Nova's boot on this host: (instance, [Bound ARQ])."""
        return self.nova.boot(profile)

    def nova_claim(self, profile, name='region0', card=0):
        """Nova's scheduler claims in Placement the candidate on the
        provider of deployable ``name``; the instance."""
        rp = self.region(name, card)['rp_uuid']
        [candidate] = [c for c in self.nova.candidates(
            self.nova.request_groups(profile)) if rp in c['allocations']]
        instance = str(uuid.uuid4())
        self.nova.claim(instance, candidate)
        return instance

    def bind_claimed(self, profile, instance, name='region0', card=0):
        """Nova's bind, after its claim (nova_claim), of an ARQ of
        ``profile`` for ``instance`` on deployable ``name``'s provider;
        the ARQ once resolved."""
        [arq] = self.nova._create_arqs(profile)
        self.nova._bind({arq['uuid']: {
            'hostname': self.host, 'instance_uuid': instance,
            'device_rp_uuid': self.region(name, card)['rp_uuid']}})
        return self.wait_arq(arq['uuid'])

    def arq(self, arq_uuid):
        return self.call('GET', '/accelerator_requests/' + arq_uuid,
                         200).json()

    def wait_arq(self, arq_uuid, states=('Bound', 'BindFailed'),
                 timeout=30):
        return waiting.read_until(
            lambda: self.arq(arq_uuid), lambda a: a['state'] in states,
            timeout, what='ARQ %s in %s' % (arq_uuid, states))

    def wait_state(self, name, state, card=0, timeout=20):
        """The deployable once its device_state is ``state``."""
        return waiting.read_until(
            lambda: self.region(name, card),
            lambda d: d['device_state'] == state, timeout,
            what='%s %s' % (name, state))

    def bitstream(self, image=None, headers=OPERATOR, visibility='public',
                  signature=None):
        """A bitstream of ``image`` (a GBS of a new function by default)
        uploaded by ``headers``' caller (the operator: public);
        ``signature`` (base64, as the API takes it) attached. Its body."""
        image = image if image is not None else new_image()
        body = {'name': 'bs-%s' % uuid.uuid4().hex[:6], 'format': 'gbs',
                'vendor': 'intel', 'version': '1.0',
                'visibility': visibility}
        created = self.call('POST', '/bitstreams', 201, headers=headers,
                            json=body).json()
        self.call('PUT', '/bitstreams/%s/file' % created['uuid'], 204,
                  headers=dict(headers, **{
                      'Content-Type': 'application/octet-stream'}),
                  data=image)
        if signature is not None:
            self.call('PUT', '/bitstreams/%s/signature' % created['uuid'],
                      200, headers=headers, json={'signature': signature})
        return self.call('GET', '/bitstreams/' + created['uuid'], 200,
                         headers=headers).json()

    def trust(self, key, project_id=None):
        """An admin trusts ``key`` (for every project by default); the
        trusted key's uuid."""
        body = {'name': 'key-%s' % uuid.uuid4().hex[:6],
                'public_key': signing_keys.public_pem(key)}
        if project_id:
            body['project_id'] = project_id
        return self.call('POST', '/trusted_keys', 201, headers=OPERATOR,
                         json=body).json()['uuid']

    def revoke(self, key_uuid):
        self.call('POST', '/trusted_keys/%s/revoke' % key_uuid, 200,
                  headers=OPERATOR, json={'reason': 'leaked'})

    def enforce(self, policy='enforce'):
        """This host's project's signature policy."""
        self.call('PUT', '/signature_policies/' + self.project, 200,
                  headers=OPERATOR, json={'policy': policy})

    def program(self, bitstream_uuid, name='region0', card=0,
                headers=None, status=202, **extra):
        """POST /v2/programs for the region; the response."""
        body = dict(deployable_uuid=self.region(name, card)['uuid'],
                    bitstream_uuid=bitstream_uuid, **extra)
        return self.call('POST', '/programs', status,
                         headers=headers or self.member, json=body)

    def job(self, job_uuid, headers=None):
        return self.call('GET', '/programs/' + job_uuid, 200,
                         headers=headers or OPERATOR).json()

    def wait_job(self, job_uuid, timeout=30):
        return waiting.read_until(
            lambda: self.job(job_uuid),
            lambda j: j['state'] in ('succeeded', 'failed', 'cancelled'),
            timeout, what='job %s ended' % job_uuid)

    # --- Kubernetes ---------------------------------------------------

    def claim(self, name, regions=('region0',), card=0, config=()):
        """An allocated ResourceClaim of this host's namespace for the
        slices' devices of ``regions``, put in the apiserver."""
        devices = [('fpga', self.slice_device(r, card)['name'])
                   for r in regions]
        claim = rc.allocated_claim(name, devices, namespace=self.namespace,
                                   pool=self.host, config=list(config))
        self.services.apiserver.put_claim(claim)
        return claim

    def prepare(self, claim, timeout=30):
        """The kubelet's NodePrepareResources, retried while the plugin
        answers that it is still preparing; the claim's error ('' when
        prepared)."""
        uid = claim['metadata']['uid']
        answers = []

        def done():
            response = self.kubelet.prepare('v1', [rc.ref(claim)])
            answers.append(response.claims[uid].error)
            return 'still being prepared' not in answers[-1]
        waiting.until(done, timeout=timeout, interval=0.1)
        return answers[-1]

    def unprepare(self, claim):
        uid = claim['metadata']['uid']
        response = self.kubelet.unprepare('v1', [rc.ref(claim)])
        return response.claims[uid].error


def handle_address(arq):
    """The PCI address of a Bound ARQ's attach handle."""
    info = arq['attach_handle_info']
    return '%s:%s:%s.%s' % (info['domain'], info['bus'], info['device'],
                            info['function'])


def new_image(afu_uuid=None):
    """A GBS image for the fake driver's regions loading a new function
    (``afu_uuid``, a fresh one by default)."""
    return builders.build_gbs(builders.gbs_metadata(
        interface_uuid=builders.INTERFACE_UUID,
        afu_uuid=afu_uuid or str(uuid.uuid4())))
