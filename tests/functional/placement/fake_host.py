"""One simulated host for availability tests against the real Placement:
the fake driver's card, its report applied by the real conductor
endpoint and published by the real Placement sink, and a Nova-like
scheduler's view of Placement."""
from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.common import context
from cyborg_lite.conductor import manager as conductor_manager
from cyborg_lite.conductor import publishing
from cyborg_lite.db import cleaning as cleaning_db
from cyborg_lite.db import deployables as deployables_db
from cyborg_lite.db import devices as devices_db
from cyborg_lite.drivers import fake
from cyborg_lite.placement import client as client_mod
from cyborg_lite.placement import sink as sink_mod
from tests import releases
from tests.unit.conductor import bind_helpers as h

MEMORY_MB = 4096


class Host:
    """The card, the conductor endpoint publishing to Placement, and a
    Nova-like scheduler's view of Placement."""

    def __init__(self, conf, placement, hostname, client=None,
                 cache=False):
        self.hostname = hostname
        self.ctxt = context.get_admin_context()
        client = client or client_mod.PlacementClient(
            client_mod.adapter_from_conf(conf))
        self.placement = client
        self.publisher = publisher = publishing.Publisher(
            [sink_mod.PlacementSink(client, conf, cache_providers=cache)])
        self.conductor = conductor_manager.ConductorManager(
            'cond1', after_report=publisher.publish_host, publisher=publisher)
        self.driver = fake.FakeDriver(conf)

    def report(self):
        return self.conductor.report(self.ctxt, self.hostname,
                                     [self.entry()])

    @property
    def root(self):
        return self.placement.get('/resource_providers?name=%s'
                                  % self.hostname)['resource_providers'][0][
            'uuid']

    def regions(self):
        """{rp uuid: what it offers}: a region's name, or the names of the
        regions behind one function joined by '+' (one provider offers
        them: common/shared_functions.py)."""
        offers = {}
        for dep in devices_db.host_rows(self.hostname).deployables:
            offers.setdefault(dep.rp_uuid, []).append(
                dep.name.rsplit('_', 1)[-1])
        return {rp: '+'.join(sorted(names)) for rp, names in offers.items()}

    def reserved(self):
        """{region name: {rc: reserved}} as Placement has it."""
        return {name: {rc: inv['reserved'] for rc, inv in self.placement.get(
            '/resource_providers/%s/inventories' % rp)['inventories'].items()}
            for rp, name in self.regions().items()}

    def traits(self):
        """{region name: set of traits} as Placement has them."""
        return {name: set(self.placement.get(
            '/resource_providers/%s/traits' % rp)['traits'])
            for rp, name in self.regions().items()}

    def entry(self):
        """The fake driver's report entry as an agent sends it."""
        return agent_manager.driver_entry(
            'fake', [r.to_dict() for r in self.driver.discover()])

    def candidates(self, groups=1):
        """[{group: region name}] Placement offers in this host's tree."""
        params = []
        for g in range(1, groups + 1):
            params.append('resources%d=FPGA:1,CUSTOM_FPGA_LOCAL_MEMORY_MB:%d'
                          % (g, MEMORY_MB))
            params.append('in_tree%d=%s' % (g, self.root))
        if groups > 1:
            params.append('group_policy=isolate')
        found = self.placement.get('/allocation_candidates?' +
                                   '&'.join(params))
        names = self.regions()
        return [{int(g[-1]): names[rps[0]] for g, rps in
                 c['mappings'].items()}
                for c in found['allocation_requests']]

    def allocate(self, instance, by_group):
        """Claim {group: region name} for ``instance``, as Nova does."""
        rp_of = {name: rp for rp, name in self.regions().items()}
        allocations = {}
        for name in by_group.values():
            allocations.setdefault(rp_of[name], {'resources': {}})[
                'resources'].update({'FPGA': 1,
                                     'CUSTOM_FPGA_LOCAL_MEMORY_MB':
                                     MEMORY_MB})
        self.placement.put('/allocations/%s' % instance, {
            'allocations': allocations, 'project_id': 'p1',
            'user_id': 'u1', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'})

    def bind(self, instance, by_group, groups=1):
        """ARQs of a profile with ``groups`` groups bound as asked;
        {group: ARQ row} after the bind."""
        profile = h.make_profile([{'resources:FPGA': '1'}] * groups)
        return self.bind_profile(instance, by_group, profile)

    def bind_profile(self, instance, by_group, profile):
        """bind, for the groups of profile id ``profile``."""
        rp_of = {name: rp for rp, name in self.regions().items()}
        arqs = {g: h.make_arq(profile_id=profile, group_id=g - 1)
                for g in by_group}
        self.conductor.bind_arqs(self.ctxt, {
            arqs[g]: {'hostname': self.hostname,
                      'device_rp_uuid': rp_of[name],
                      'instance_uuid': instance}
            for g, name in by_group.items()})
        return {g: h.get_arq(arq_uuid) for g, arq_uuid in arqs.items()}

    def unbind(self, arq):
        releases.unbind(self.conductor, self.ctxt, [arq.uuid])

    def wipe(self):
        """End the clean of every region waiting for one or sent to its
        agent (there is none here), as a try that succeeded ends it, and
        publish."""
        for dep in devices_db.host_rows(self.hostname).deployables:
            if dep.device_state == 'pending_cleaning':
                h.clean({'deployable_id': dep.id})
            elif dep.device_state == 'cleaning':
                row, _attributes = deployables_db.get_deployable(dep.uuid)
                cleaning_db.finish(dep.uuid, row.cleaning_uuid)
        self.conductor.publish_requested(self.ctxt)


def configure_card(conf, state_dir, sriov, regions=2):
    """[fake_driver]: one card of ``regions`` regions."""
    for name, value in (('num_cards', 1), ('regions_per_card', regions),
                        ('local_memory_mb', MEMORY_MB), ('sriov', sriov),
                        ('state_dir', str(state_dir))):
        conf.set_override(name, value, group='fake_driver')
