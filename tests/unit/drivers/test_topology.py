"""Where devices sit, read by every sysfs driver from the NUMA fixture
hosts (tests/fixtures/drivers/numa_hosts.py), and the host's SLIT."""
import os
import shutil

import pytest

from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import topology
from cyborg_lite.drivers import fake
from cyborg_lite.drivers import fpga_sysfs
from cyborg_lite.drivers import pci
from cyborg_lite.drivers import sriov_nic
from cyborg_lite.drivers import topology as reader_mod
from tests.unit.drivers.conftest import fixture_path


@pytest.fixture
def host(tmp_path):
    def copy(name):
        root = tmp_path / name
        shutil.copytree(fixture_path(name), root, symlinks=True)
        return root / 'sys'
    return copy


def _by_identity(records):
    return {r.identity: r for r in records}


def _fpga(conf, sys_root):
    conf.set_override('sysfs_root', str(sys_root), group='fpga_sysfs')
    return fpga_sysfs.FpgaSysfsDriver(conf)


def _nic(conf, sys_root, pf):
    conf.set_override('sysfs_root', str(sys_root), group='sriov_nic_driver')
    conf.set_override('physical_device_mappings', ['physnet1:' + pf],
                      group='sriov_nic_driver')
    return sriov_nic.SriovNicDriver(conf)


def _pci(conf, sys_root):
    conf.set_override('sysfs_root', str(sys_root), group='pci_driver')
    conf.set_override('allowed_ids', ['0x10de'], group='pci_driver')
    return pci.PciDriver(conf)


def test_two_socket_host_nodes_roots_and_sockets(conf, host):
    sys_root = host('numa_2socket')
    cards = _by_identity(_fpga(conf, sys_root).discover())
    assert {a: (r.topology.numa_node, r.topology.pcie_root,
                r.topology.socket, r.topology.local_cpulist)
            for a, r in cards.items()} == {
        '0000:3b:00.0': (0, 'pci0000:3a', 0, '0-19,40-59'),
        '0000:af:00.0': (1, 'pci0000:ae', 1, '20-39,60-79')}
    assert cards['0000:3b:00.0'].topology.pci_bus_id == '0000:3b:00.0'
    # The region is reached through the PF: the card's place stands.
    assert cards['0000:3b:00.0'].deployables[0].topology is None
    [nic] = _nic(conf, sys_root, '0000:d8:00.0').discover()
    assert (nic.topology.numa_node, nic.topology.pcie_root) == \
        (1, 'pci0000:d7')
    qat = _by_identity(_pci(conf, sys_root).discover())['0000:6b:00.0']
    assert (qat.topology.numa_node, qat.topology.pcie_root) == \
        (0, 'pci0000:6a')
    nodes = _fpga(conf, sys_root).numa_nodes()
    assert nodes == [
        {'node': 0, 'cpulist': '0-19,40-59', 'socket': 0,
         'distances': [10, 21]},
        {'node': 1, 'cpulist': '20-39,60-79', 'socket': 1,
         'distances': [21, 10]}]
    assert [topology.numa_node_list(n, nodes) for n in (0, 1)] == [[0], [1]]


def test_nps4_host_gives_the_kep_lists(conf, host):
    """KEP-6072's examples: a device on node 0 is as near to 1-3; the NIC
    on node 6 to 4, 5, 7; the GPU on node 5 to 4, 6, 7 (never across the
    socket, at distance 32)."""
    sys_root = host('numa_nps4')
    [card] = _fpga(conf, sys_root).discover()
    [nic] = _nic(conf, sys_root, '0000:c1:00.0').discover()
    gpu = _by_identity(_pci(conf, sys_root).discover())['0000:a1:00.0']
    nodes = _fpga(conf, sys_root).numa_nodes()
    assert [n['socket'] for n in nodes] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert nodes[6]['distances'] == [32, 32, 32, 32, 12, 12, 10, 12]
    lists = {r.identity: topology.numa_node_list(r.topology.numa_node, nodes)
             for r in (card, nic, gpu)}
    assert lists == {'0000:01:00.0': [0, 1, 2, 3],
                     '0000:c1:00.0': [6, 4, 5, 7],
                     '0000:a1:00.0': [5, 4, 6, 7]}
    assert gpu.topology.pcie_root == 'pci0000:a0'


def test_a_region_behind_its_vf_gets_the_vf_place(conf, tmp_path):
    conf.set_override('state_dir', str(tmp_path / 'fake'),
                      group='fake_driver')
    conf.set_override('sriov', True, group='fake_driver')
    conf.set_override('numa_nodes', 2, group='fake_driver')
    driver = fake.FakeDriver(conf)
    cards = driver.discover()
    assert [c.topology.numa_node for c in cards] == [0, 1]
    region = cards[1].deployables[0]
    assert region.topology.pci_bus_id == '0000:5f:00.1'
    assert region.topology.numa_node == 1
    assert [n['distances'] for n in driver.numa_nodes()] == \
        [[10, 21], [21, 10]]


def test_no_numa_affinity_is_unknown_not_node_0(conf, host):
    sys_root = host('numa_2socket')
    with open(os.path.join(sys_root, 'bus/pci/devices/0000:3b:00.0/'
                                     'numa_node'), 'w') as f:
        f.write('-1\n')
    # With no affinity the kernel lists every CPU as local: two sockets.
    with open(os.path.join(sys_root, 'bus/pci/devices/0000:3b:00.0/'
                                     'local_cpulist'), 'w') as f:
        f.write('0-79\n')
    place = reader_mod.Reader(str(sys_root)).pci('0000:3b:00.0')
    assert (place.numa_node, place.socket) == (None, None)


@pytest.mark.parametrize('name,text', [
    ('numa_node', 'zero\n'), ('numa_node', '5000\n'),
    ('local_cpulist', '19-0\n'), ('local_cpulist', '0-3,2\n'),
    ('local_cpulist', '0-3;8\n')])
def test_garbage_in_a_function_skips_that_card(conf, host, name, text):
    sys_root = host('numa_2socket')
    with open(os.path.join(sys_root, 'bus/pci/devices/0000:3b:00.0', name),
              'w') as f:
        f.write(text)
    with pytest.raises(exception.HostDataError):
        reader_mod.Reader(str(sys_root)).pci('0000:3b:00.0')
    assert list(_by_identity(_fpga(conf, sys_root).discover())) == \
        ['0000:af:00.0']


@pytest.mark.parametrize('node,text', [
    (0, '10 21 21\n'), (0, '11 21\n'), (1, '21 ten\n'), (0, '')])
def test_a_slit_that_does_not_add_up_is_refused(host, node, text):
    sys_root = host('numa_2socket')
    with open(os.path.join(sys_root, 'devices/system/node/node%d/distance'
                           % node), 'w') as f:
        f.write(text)
    with pytest.raises(exception.HostDataError):
        reader_mod.Reader(str(sys_root)).numa_nodes()


def test_the_record_survives_the_wire_and_refuses_bad_values():
    record = device_records.TopologyRecord(
        numa_node=1, local_cpulist='20-39,60-79', socket=1,
        pcie_root='pci0000:ae', pci_bus_id='0000:af:00.0')
    assert device_records.TopologyRecord.from_dict(
        record.__dict__) == record
    for bad in ({'numa_node': -1}, {'numa_node': True}, {'numa_node': '1'},
                {'socket': 1.0}, {'pcie_root': 'pci0000:ae/x'},
                {'pci_bus_id': '0000:af:00.0 '}, {'local_cpulist': '1-0'},
                {'rack': 'b4'}, ['numa_node']):
        with pytest.raises(exception.Invalid):
            device_records.TopologyRecord.from_dict(bad)
