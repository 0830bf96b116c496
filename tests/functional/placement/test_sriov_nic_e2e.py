"""A SmartNIC for Nova's accelerator-direct ports, end to end.

An agent with the sriov_nic driver (a copy of a real N3000 sysfs tree)
reports; the conductor stores the devices and publishes them to the real
Placement; Nova's own code (in its venv, tests/nova.py) turns the port's
device profile, as our API lists it, into its request group; Placement
answers that group with a NIC provider carrying the function and physnet
traits; the ARQ is created and bound through the API (the real conductor
over inproc:// RPC claims a VF); and Nova's get_arq_pci_device_profile, and
the binding:profile it writes to the Neutron port, read the bound ARQ as
our API returns it.
"""
import shutil
import uuid

import pytest
import requests

from cyborg_lite.drivers import sriov_nic
from tests import nova
from tests.functional.placement import one_host
from tests.unit.drivers.conftest import fixture_path
from tests.unit.drivers.test_sriov_nic import nova_port_binding_profile
from tests import waiting

PF0 = '0000:1b:00.0'     # two VFs enabled
PF1 = '0000:1b:00.1'     # no VFs: nothing to offer
VF_SLOTS = {'0000:1b:02.0', '0000:1b:02.1'}
PLACEMENT = one_host.PLACEMENT
MEMBER = one_host.MEMBER
ADMIN = one_host.ADMIN
ACCEL = one_host.ACCEL
# What the port's device profile must be for Nova (nova/network/
# neutron.py create_resource_requests): exactly one device in all its
# groups, or Nova refuses the port ("request multiple devices for single
# port").
PORT_PROFILE = [{'name': 'smartnic-gtp', 'groups': [
    {'resources:CUSTOM_NIC': '1', 'trait:CUSTOM_GTPV1': 'required'}]}]

NOVA_PORT_BINDING = '''
import json, sys
from nova.accelerator import cyborg
from nova.network import neutron
arq = json.load(sys.stdin)
port = {'port': {'binding:profile': {'capabilities': ['switchdev']}}}
# The port update Nova sends to Neutron for an accelerator-direct port
# (pci_request_id None: the VF comes from the ARQ, not Nova's PCI tracker).
neutron.API._populate_neutron_binding_profile(None, None, None, port, arq)
print(json.dumps({'profile': cyborg.get_arq_pci_device_profile(arq),
                  'binding': port['port']['binding:profile']}))
'''


@pytest.fixture
def hostname():
    return 'nic-host-%s' % uuid.uuid4().hex[:8]


@pytest.fixture
def cloud(sqlite_db, conf, placement, hostname, tmp_path):
    """Placement, conductor, an agent with sriov_nic, and the API."""
    sysfs = tmp_path / 'host'
    shutil.copytree(fixture_path('nic_host'), sysfs, symlinks=True)
    one_host.configure(conf, placement)
    conf.set_override('sysfs_root', str(sysfs / 'sys'),
                      group='sriov_nic_driver')
    conf.set_override('physical_device_mappings',
                      ['physnet1:%s|%s' % (PF0, PF1)],
                      group='sriov_nic_driver')
    conf.set_override('function_device_mappings', ['GTPv1:%s' % PF0],
                      group='sriov_nic_driver')
    driver = sriov_nic.SriovNicDriver(conf)
    driver.name = 'sriov_nic'
    with one_host.serving(conf, hostname, driver, 'cond-nic') as app:
        yield app


_placement = one_host.placement_get


def _nic_providers(server, hostname):
    """{provider name: (inventories, traits)} of the host's NIC offers."""
    root = _placement(server, '/resource_providers', name=hostname)[
        'resource_providers']
    if not root:
        return {}
    found = {}
    for rp in _placement(server, '/resource_providers',
                         in_tree=root[0]['uuid'])['resource_providers']:
        path = '/resource_providers/%s' % rp['uuid']
        inventories = _placement(server, path + '/inventories')['inventories']
        if 'CUSTOM_NIC' in inventories:
            found[rp['name']] = (
                inventories, set(_placement(server, path + '/traits')[
                    'traits']), rp['uuid'])
    return found


def _nova_request_query(group):
    """Placement's query for one Nova RequestGroup (granular suffix 1)."""
    query = {'resources1': ','.join('%s:%d' % item for item in
                                    sorted(group['resources'].items()))}
    if group['required']:
        query['required1'] = ','.join(group['required'])
    return query


def test_a_bound_vf_is_the_port_binding_profile_nova_writes(
        cloud, placement, hostname):
    app = cloud
    # NOTE: a provider's inventory and traits are two writes.
    offers = waiting.read_until(
        lambda: _nic_providers(placement, hostname),
        lambda found: any(traits for _, traits, _ in found.values()),
        timeout=60, what='the NIC provider in Placement, with traits')
    [(name, (inventories, traits, rp_uuid))] = offers.items()
    assert name.startswith('%s_%s' % (hostname, PF0))
    assert inventories['CUSTOM_NIC']['total'] == 2
    assert {'CUSTOM_VF', 'CUSTOM_GTPV1', 'CUSTOM_PHYSNET1'} <= traits

    # The port's device profile, and what Nova makes of it.
    app.post_json('/v2/device_profiles', PORT_PROFILE,
                  headers=dict(ADMIN, **ACCEL), status=201)
    listed = app.get('/v2/device_profiles', {'name': 'smartnic-gtp'},
                     headers=dict(MEMBER, **ACCEL)).json['device_profiles']
    asked = nova.run(nova.REQUEST_GROUPS, listed)
    assert asked['devices'] == 1
    [group] = asked['groups']
    assert group == {'requester_id': 'device_profile_0port-1',
                     'resources': {'CUSTOM_NIC': 1},
                     'required': ['CUSTOM_GTPV1'], 'forbidden': []}

    # The scheduler's question, the allocation it makes.
    candidates = _placement(placement, '/allocation_candidates',
                            **_nova_request_query(group))
    [candidate] = [c for c in candidates['allocation_requests']
                   if c['mappings']['1'] == [rp_uuid]]
    instance = str(uuid.uuid4())
    resp = requests.put(
        '%s/allocations/%s' % (placement.endpoint, instance),
        headers=PLACEMENT, timeout=30, json={
            'allocations': candidate['allocations'],
            'project_id': 'tenant-1', 'user_id': 'alice',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    assert resp.status_code == 204, resp.text

    # Nova's conductor: create the ARQ, bind it to the chosen provider.
    headers = dict(MEMBER, **ACCEL)
    bound = one_host.bind_as_nova(app, headers, 'smartnic-gtp', hostname,
                                  rp_uuid, instance)
    assert bound['state'] == 'Bound', bound
    assert bound['attach_handle_type'] == 'PCI'   # what libvirt plugs

    # Nova's compute manager, with the ARQ exactly as the API gave it.
    got = nova.run(NOVA_PORT_BINDING, bound)
    assert got['profile'] == nova_port_binding_profile(bound)
    assert got['profile']['physical_network'] == 'physnet1'
    assert got['profile']['pci_slot'] in VF_SLOTS
    assert got['profile']['arq_uuid'] == bound['uuid']
    assert got['binding'] == dict(got['profile'],
                                  capabilities=['switchdev'])
