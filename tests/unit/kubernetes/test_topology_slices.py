"""Topology in the ResourceSlices, from the NUMA fixture hosts through the
real drivers, the conductor's report and the database: the standard
attributes (pcieRoot, pciBusID, KEP-6072's numaNode as a scalar or a
list), valid for the strict schemas, and honoured by a reference
allocator's matchAttribute against another driver's devices."""
import os
import shutil

import pytest
import yaml

from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.common import context
from cyborg_lite.conductor import manager as conductor_manager
from cyborg_lite.db import devices as devices_db
from cyborg_lite.drivers import fpga_sysfs
from cyborg_lite.drivers import pci
from cyborg_lite.drivers import sriov_nic
from cyborg_lite.kubernetes import slices as k8s_slices
from cyborg_lite.kubernetes import view as k8s_view
from tests.unit.drivers.conftest import fixture_path
from tests.unit.kubernetes import allocator
from tests.unit.kubernetes import schemas

DRIVER = 'cyborg-lite.openstack.org'
NUMA = 'resource.kubernetes.io/numaNode'
DEPLOY = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'deploy',
                      'kubernetes')


def _report(conf, tmp_path, name, nic_pf):
    """Discover the fixture host with the sysfs drivers and apply the
    report as an agent sends it; the host's slices builder input."""
    root = tmp_path / name
    shutil.copytree(fixture_path(name), root, symlinks=True)
    sys_root = str(root / 'sys')
    for group in ('fpga_sysfs', 'pci_driver', 'sriov_nic_driver'):
        conf.set_override('sysfs_root', sys_root, group=group)
    conf.set_override('allowed_ids', ['0x10de'], group='pci_driver')
    conf.set_override('ignored_ids', ['0x8086:0x09c4'], group='pci_driver')
    conf.set_override('physical_device_mappings', ['physnet1:' + nic_pf],
                      group='sriov_nic_driver')
    drivers = [fpga_sysfs.FpgaSysfsDriver(conf), pci.PciDriver(conf),
               sriov_nic.SriovNicDriver(conf)]
    for driver, entry_point in zip(drivers, ('fpga_sysfs', 'pci',
                                             'sriov_nic')):
        driver.name = entry_point
    agent = agent_manager.AgentManager(conf, host=name.replace('_', '-'),
                                       drivers=drivers, conductor_api=None)
    ack = conductor_manager.ConductorManager('cond').report(
        context.get_admin_context(), agent.host, agent.scan(),
        agent.numa_nodes())
    assert ack['changed']
    return k8s_view.of_host(conf, devices_db.load_inventory(agent.host))


def _numa(slices):
    return {d['name']: d['attributes'].get(NUMA)
            for s in slices for d in s['spec']['devices']}


@pytest.fixture
def nps4(sqlite_db, conf, tmp_path):
    return _report(conf, tmp_path, 'numa_nps4', '0000:c1:00.0')


def test_nps4_publishes_the_keps_lists(nps4):
    scalar = k8s_slices.build_slices(nps4, DRIVER)
    listed = k8s_slices.build_slices(nps4, DRIVER, numa_node_list=True)
    assert _numa(scalar) == {'fpga-0000-01-00-0-region0': {'int': 0},
                             'gpu-0000-a1-00-0-pgpu': {'int': 5},
                             'pci-0000-c1-00-0-vfs': {'int': 6}} or \
        _numa(scalar) == {'fpga-0000-01-00-0-region0': {'int': 0},
                          'gpu-0000-a1-00-0-pgpu': {'int': 5},
                          'nic-0000-c1-00-0-vfs': {'int': 6}}
    assert sorted(_numa(listed).values(), key=str) == sorted(
        [{'ints': [0, 1, 2, 3]}, {'ints': [5, 4, 6, 7]},
         {'ints': [6, 4, 5, 7]}], key=str)
    by_name = {d['name']: d['attributes'] for s in listed
               for d in s['spec']['devices']}
    fpga = by_name['fpga-0000-01-00-0-region0']
    assert fpga[NUMA] == {'ints': [0, 1, 2, 3]}
    assert fpga['resource.kubernetes.io/pcieRoot'] == {'string':
                                                       'pci0000:00'}
    assert fpga['resource.kubernetes.io/pciBusID'] == {'string':
                                                       '0000:01:00.0'}
    assert by_name['gpu-0000-a1-00-0-pgpu'][NUMA] == {'ints': [5, 4, 6, 7]}


def test_two_socket_nodes_and_roots(sqlite_db, conf, tmp_path):
    host = _report(conf, tmp_path, 'numa_2socket', '0000:d8:00.0')
    attributes = {d['name']: d['attributes']
                  for s in k8s_slices.build_slices(host, DRIVER,
                                                   numa_node_list=True)
                  for d in s['spec']['devices']}
    assert {name: (a[NUMA]['ints'],
                   a['resource.kubernetes.io/pcieRoot']['string'])
            for name, a in attributes.items()} == {
        'fpga-0000-3b-00-0-region0': ([0], 'pci0000:3a'),
        'fpga-0000-af-00-0-region0': ([1], 'pci0000:ae'),
        'pci-0000-6b-00-0-pf': ([0], 'pci0000:6a'),
        'nic-0000-d8-00-0-vfs': ([1], 'pci0000:d7')}


def test_scalar_valid_on_every_release_the_list_with_the_gate(nps4):
    scalar = k8s_slices.build_slices(nps4, DRIVER)
    listed = k8s_slices.build_slices(nps4, DRIVER, numa_node_list=True)
    for obj in scalar + listed:
        assert schemas.slice_rule_errors(obj) == []
        assert schemas.schema_errors(obj, ('1.36', '1.37')) == []
    for obj in scalar:
        assert schemas.schema_errors(obj) == []
    # Before list-type attributes (1.36) the list form is refused.
    for obj in listed:
        assert schemas.schema_errors(obj, ('1.34',)) != []
        assert schemas.schema_errors(obj, ('1.35',)) != []


def test_no_other_name_under_the_standard_domain(nps4):
    names = {key for numa_list in (False, True)
             for s in k8s_slices.build_slices(nps4, DRIVER,
                                              numa_node_list=numa_list)
             for d in s['spec']['devices'] for key in d['attributes']
             if key.startswith('resource.kubernetes.io/')}
    assert names == {'resource.kubernetes.io/numaNode',
                     'resource.kubernetes.io/pcieRoot',
                     'resource.kubernetes.io/pciBusID'}
    obj = k8s_slices.build_slices(nps4, DRIVER)[0]
    obj['spec']['devices'][0]['attributes'][
        'resource.kubernetes.io/socket'] = {'int': 0}
    with pytest.raises(k8s_slices.InvalidSlice):
        k8s_slices.check_slice(obj)


def _cpu_slice(nodes):
    """The CPU DRA driver's pool: one device per NUMA node, shared."""
    return {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceSlice',
            'spec': {'driver': 'dra.cpu', 'nodeName': 'numa-nps4',
                     'pool': {'name': 'numa-nps4', 'generation': 1,
                              'resourceSliceCount': 1},
                     'devices': [{'name': 'cpudevnuma%03d' % n,
                                  'allowMultipleAllocations': True,
                                  'attributes': {NUMA: {'int': n}}}
                                 for n in nodes]}}


def _template():
    with open(os.path.join(DEPLOY, 'numa-aligned-claim.yaml')) as f:
        (obj,) = [o for o in yaml.safe_load_all(f) if o]
    return obj['spec']['spec']


CLASSES = {
    'fpga-region.cyborg-lite.openstack.org':
        lambda driver, device: driver == DRIVER and
        device['attributes']['type'] == {'string': 'fpga-region'},
    'dra.cpu': lambda driver, device: driver == 'dra.cpu',
}


def _allocated_cpu(claim, slices):
    found = allocator.allocate(claim, slices, CLASSES)
    return None if found is None else found['cpu'][0][2]


def test_the_shipped_claim_puts_the_region_and_cpus_on_one_node(nps4):
    claim = _template()
    ours = k8s_slices.build_slices(nps4, DRIVER)
    listed = k8s_slices.build_slices(nps4, DRIVER, numa_node_list=True)
    # CPU nodes of the other socket first, so a careless allocator would
    # take one.
    cpus = _cpu_slice([7, 6, 5, 4, 3, 2, 1, 0])
    assert _allocated_cpu(claim, ours + [cpus]) == 'cpudevnuma000'
    # The list: any node of the region's socket at distance 12.
    assert _allocated_cpu(claim, listed + [cpus]) == 'cpudevnuma003'
    # CPUs only on the other socket: no allocation either way.
    far = _cpu_slice([4, 5, 6, 7])
    assert _allocated_cpu(claim, ours + [far]) is None
    assert _allocated_cpu(claim, listed + [far]) is None
    # Without the constraint the far CPUs would do.
    free = dict(claim, devices=dict(claim['devices'], constraints=[]))
    assert _allocated_cpu(free, ours + [far]) == 'cpudevnuma004'


def test_the_allocator_compares_values_not_presence():
    """The reference itself: a scalar meets a list when it is in it."""
    left = ('a', {'attributes': {NUMA: {'int': 4}}})
    right = ('b', {'attributes': {NUMA: {'ints': [6, 4, 5, 7]}}})
    other = ('b', {'attributes': {NUMA: {'ints': [0, 1]}}})
    none = ('b', {'attributes': {}})
    assert allocator._matches([left, right], NUMA)
    assert not allocator._matches([left, other], NUMA)
    assert not allocator._matches([left, none], NUMA)
