"""NUMA alignment served by Placement alone, against the real Placement.

A simulated two-socket host (fake driver, one card of two regions on each
NUMA node, each region behind its own VF) is reported and published by the real conductor endpoint and
sink. A two-region profile asking for one NUMA node must get only
same-node candidates where the unconstrained one gets cross-node ones; a
host published without the NUMA layer (as before it existed), with a
bound ARQ, is moved under it keeping every uuid, inventory and
allocation; a tree with someone else's NUMA providers is left as it is.
"""
import urllib.parse
import uuid

import pytest

from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.common import context
from cyborg_lite.conductor import manager as conductor_manager
from cyborg_lite.conductor import publishing
from cyborg_lite.db import devices as devices_db
from cyborg_lite.drivers import fake
from cyborg_lite.placement import client as client_mod
from cyborg_lite.placement import sink as sink_mod
from tests import nova
from tests import releases
from tests.functional.placement import candidates_query
from tests.functional.placement.conftest import configure_placement
from tests.unit.conductor import bind_helpers as h

MEMORY_MB = 4096
REGION = {'resources:FPGA': '1',
          'resources:CUSTOM_FPGA_LOCAL_MEMORY_MB': str(MEMORY_MB)}


class NumaHost:
    """Two cards on two NUMA nodes, the conductor endpoint publishing to
    the real Placement, and a scheduler's view of it."""

    def __init__(self, conf, server, hostname, tmp_path):
        configure_placement(conf, server.endpoint)
        # NOTE: each region behind its own VF, so each is offered alone
        # (regions behind one PF are one accelerator: two of them on one
        # node would be one card's).
        for name, value in (('num_cards', 2), ('regions_per_card', 2),
                            ('numa_nodes', 2), ('sriov', True),
                            ('local_memory_mb', MEMORY_MB),
                            ('state_dir', str(tmp_path / 'fake'))):
            conf.set_override(name, value, group='fake_driver')
        self.conf = conf
        self.hostname = hostname
        self.placement = client_mod.PlacementClient(
            client_mod.adapter_from_conf(conf))
        self.driver = fake.FakeDriver(conf)
        self.ctxt = context.get_admin_context()
        self.conductor = None
        self.restart()

    def restart(self):
        """A conductor as after an upgrade: a fresh sink, reading conf."""
        publisher = publishing.Publisher([sink_mod.PlacementSink(
            self.placement, self.conf, cache_providers=True)])
        self.conductor = conductor_manager.ConductorManager(
            'cond1', after_report=publisher.publish_host,
            publisher=publisher)

    def report(self, previous_release=False):
        """The agent's report; ``previous_release``: as the agent of the
        release before topology sends it (no places, no NUMA nodes)."""
        devices = [r.to_dict() for r in self.driver.discover()]
        if previous_release:
            for device in devices:
                del device['topology']
                for deployable in device['deployables']:
                    del deployable['topology']
        entry = agent_manager.driver_entry('fake', devices)
        if previous_release:
            return self.conductor.report(self.ctxt, self.hostname, [entry])
        return self.conductor.report(self.ctxt, self.hostname, [entry],
                                     self.driver.numa_nodes())

    @property
    def root(self):
        return self.placement.get('/resource_providers?name=%s'
                                  % self.hostname)['resource_providers'][0][
            'uuid']

    def providers(self):
        """{name: provider} of the host's tree."""
        return {rp['name']: rp for rp in self.placement.get(
            '/resource_providers?in_tree=%s' % self.root)[
            'resource_providers']}

    def regions(self):
        """{rp uuid: (card identity, region name, numa node)}."""
        rows = devices_db.host_rows(self.hostname)
        identity = {d.id: d.identity for d in rows.devices}
        return {d.rp_uuid: (identity[d.device_id], d.name.rsplit('_', 1)[1],
                            d.numa_node) for d in rows.deployables}

    def candidates(self, groups):
        query = candidates_query.allocation_candidates_query(groups,
                                                             self.root)
        found = self.placement.get('/allocation_candidates?' +
                                   urllib.parse.urlencode(query))
        return [sorted(rps[0] for rps in c['mappings'].values()
                       if rps[0] in self.regions())
                for c in found['allocation_requests']]

    def allocations(self, consumer):
        """{rp uuid: resources} of the consumer."""
        return {rp: a['resources'] for rp, a in self.placement.get(
            '/allocations/%s' % consumer)['allocations'].items()}

    def inventories(self, rp):
        return self.placement.get('/resource_providers/%s/inventories'
                                  % rp)['inventories']


@pytest.fixture
def numa_host(sqlite_db, conf, placement, hostname, tmp_path):
    return NumaHost(conf, placement, hostname, tmp_path)


def _nodes(host, pair):
    regions = host.regions()
    return {regions[rp][2] for rp in pair}


def test_nodes_sit_between_the_compute_node_and_the_devices(numa_host):
    numa_host.report()
    tree = numa_host.providers()
    root = numa_host.root
    for node in (0, 1):
        numa = tree['%s_numa%d' % (numa_host.hostname, node)]
        assert numa['parent_provider_uuid'] == root
        traits = numa_host.placement.get('/resource_providers/%s/traits'
                                         % numa['uuid'])['traits']
        assert set(traits) == {'HW_NUMA_ROOT', 'OWNER_CYBORG',
                               'CUSTOM_NUMA_NODE_%d' % node}
        assert numa_host.inventories(numa['uuid']) == {}
    for rp, (card, _region, node) in numa_host.regions().items():
        device = tree['%s_%s' % (numa_host.hostname, card)]
        assert device['parent_provider_uuid'] == \
            tree['%s_numa%d' % (numa_host.hostname, node)]['uuid']
        assert 'CUSTOM_NUMA_NODE_%d' % node in numa_host.placement.get(
            '/resource_providers/%s/traits' % rp)['traits']


def test_one_node_for_two_groups_only_gives_same_node_pairs(numa_host):
    numa_host.report()
    free = numa_host.candidates([REGION, REGION])
    assert free and any(len(_nodes(numa_host, pair)) == 2 for pair in free)
    aligned = numa_host.candidates(
        [dict(REGION, **{'accel:numa_affinity': 'required'})] * 2)
    # Both same-node pairs, in either order of the groups, and no other.
    assert len(aligned) == 4
    assert all(len(_nodes(numa_host, pair)) == 1 for pair in aligned)
    assert {frozenset(pair) for pair in aligned} == \
        {frozenset(pair) for pair in free if len(_nodes(numa_host,
                                                          pair)) == 1}


def test_a_named_node_is_a_trait_nova_already_sends(numa_host):
    numa_host.report()
    named = dict(REGION, **{'trait:CUSTOM_NUMA_NODE_1': 'required'})
    found = numa_host.candidates([named])
    assert len(found) == 2
    assert all(_nodes(numa_host, pair) == {1} for pair in found)


def _bind(host, rp):
    """An instance's allocation on ``rp`` and its ARQ bound there."""
    instance = str(uuid.uuid4())
    host.placement.put('/allocations/%s' % instance, {
        'allocations': {rp: {'resources': {
            'FPGA': 1, 'CUSTOM_FPGA_LOCAL_MEMORY_MB': MEMORY_MB}}},
        'project_id': 'p1', 'user_id': 'u1', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})
    arq = h.make_arq(profile_id=h.make_profile([REGION]))
    host.conductor.bind_arqs(host.ctxt, {arq: {
        'hostname': host.hostname, 'device_rp_uuid': rp,
        'instance_uuid': instance}})
    assert h.get_arq(arq).state == 'Bound'
    return instance, arq


def test_upgrade_keeps_every_uuid_inventory_and_allocation(numa_host):
    """A host as the previous release published it (no places known, no
    NUMA layer), with a bound ARQ; then the upgraded agent reports."""
    numa_host.report(previous_release=True)
    flat = numa_host.providers()
    assert len(flat) == 7 and not [n for n in flat if '_numa' in n]
    rp = sorted(numa_host.regions())[0]
    instance, arq = _bind(numa_host, rp)
    before = {name: (p['uuid'], numa_host.inventories(p['uuid']))
              for name, p in flat.items()}
    allocations = numa_host.allocations(instance)

    assert numa_host.report()['changed']
    layered = numa_host.providers()
    assert set(layered) == set(flat) | {numa_host.hostname + '_numa0',
                                        numa_host.hostname + '_numa1'}
    assert {name: (p['uuid'], numa_host.inventories(p['uuid']))
            for name, p in layered.items() if name in flat} == before
    assert numa_host.allocations(instance) == allocations == {
        rp: {'FPGA': 1, 'CUSTOM_FPGA_LOCAL_MEMORY_MB': MEMORY_MB}}
    node = numa_host.regions()[rp][2]
    card = numa_host.regions()[rp][0]
    assert layered['%s_%s' % (numa_host.hostname, card)][
        'parent_provider_uuid'] == layered['%s_numa%d' % (
            numa_host.hostname, node)]['uuid']
    assert h.get_arq(arq).state == 'Bound'
    releases.unbind(numa_host.conductor, numa_host.ctxt, [arq])
    assert h.get_arq(arq).state == 'Unbound'


def test_novas_own_translation_of_a_named_node(numa_host):
    """Nova 34's code turns the profile into its request groups: the node
    trait travels, accel:numa_affinity does not (Nova sends no
    same_subtree for a profile: why a node is named for stock Nova)."""
    numa_host.report()
    group = dict(REGION, **{'trait:CUSTOM_NUMA_NODE_1': 'required',
                            'accel:numa_affinity': 'required'})
    asked = nova.run(nova.REQUEST_GROUPS, [{'groups': [group, group]}])
    assert [g['required'] for g in asked['groups']] == \
        [['CUSTOM_NUMA_NODE_1']] * 2
    query = []
    for index, rg in enumerate(asked['groups'], start=1):
        query += [('resources%d' % index, ','.join(
                      '%s:%s' % item for item in sorted(
                          rg['resources'].items()))),
                  ('required%d' % index, ','.join(rg['required'])),
                  ('in_tree%d' % index, numa_host.root)]
    found = numa_host.placement.get(
        '/allocation_candidates?' + urllib.parse.urlencode(
            query + [('group_policy', 'none')]))['allocation_requests']
    regions = numa_host.regions()
    pairs = [[rps[0] for rps in c['mappings'].values()] for c in found]
    assert len(pairs) == 2
    assert all({regions[rp][2] for rp in pair} == {1} for pair in pairs)


def test_moving_a_published_host_keeps_uuids_inventories_allocations(
        numa_host, conf):
    conf.set_override('numa_providers', False, group='placement')
    numa_host.restart()
    numa_host.report()
    flat = numa_host.providers()
    assert not [n for n in flat if '_numa' in n]
    rp = next(rp for rp, (_c, _r, node) in numa_host.regions().items()
              if node == 1)
    instance, arq = _bind(numa_host, rp)
    before = {name: (p['uuid'], numa_host.inventories(p['uuid']))
              for name, p in flat.items()}
    allocations = numa_host.allocations(instance)
    assert list(allocations) == [rp]

    conf.set_override('numa_providers', True, group='placement')
    numa_host.restart()
    numa_host.conductor.publisher.publish_host(numa_host.hostname)
    moved = numa_host.providers()
    assert {name: (p['uuid'], numa_host.inventories(p['uuid']))
            for name, p in moved.items() if name in before} == before
    assert numa_host.allocations(instance) == allocations
    node1 = moved['%s_numa1' % numa_host.hostname]['uuid']
    device = moved['%s_0000:5f:00.0' % numa_host.hostname]
    assert device['parent_provider_uuid'] == node1
    # The bound region is still the ARQ's, and it is released as usual.
    assert (h.get_arq(arq).state, h.get_arq(arq).device_rp_uuid) == \
        ('Bound', rp)
    releases.unbind(numa_host.conductor, numa_host.ctxt, [arq])
    assert h.get_arq(arq).state == 'Unbound'

    # And back: the layer off again moves them up and removes it.
    conf.set_override('numa_providers', False, group='placement')
    numa_host.restart()
    numa_host.conductor.publisher.publish_host(numa_host.hostname)
    assert set(numa_host.providers()) == set(flat)
    assert numa_host.allocations(instance) == allocations


def test_someone_elses_numa_providers_are_left_alone(numa_host):
    numa_host.report()
    root = numa_host.root
    # Another service's NUMA node provider appears in the tree.
    theirs = str(uuid.uuid4())
    numa_host.placement.post('/resource_providers', {
        'name': numa_host.hostname + '_NUMA0', 'uuid': theirs,
        'parent_provider_uuid': root})
    numa_host.placement.put('/resource_providers/%s/traits' % theirs, {
        'resource_provider_generation': 0, 'traits': ['HW_NUMA_ROOT']})
    numa_host.restart()
    numa_host.conductor.publisher.publish_host(numa_host.hostname)
    tree = numa_host.providers()
    assert not [n for n in tree if n.startswith(numa_host.hostname +
                                                '_numa')]
    assert tree[numa_host.hostname + '_NUMA0']['uuid'] == theirs
    for card in ('0000:5e:00.0', '0000:5f:00.0'):
        assert tree['%s_%s' % (numa_host.hostname, card)][
            'parent_provider_uuid'] == root
    # The per-node traits still let a profile name a node.
    named = dict(REGION, **{'trait:CUSTOM_NUMA_NODE_0': 'required'})
    assert all(_nodes(numa_host, pair) == {0}
               for pair in numa_host.candidates([named]))
