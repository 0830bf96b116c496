"""GET /v2/resource_provider_trees/{hostname}: the Placement tree the
conductor wants for a host, computed from the database."""
import uuid

import requests

from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MANAGER_A
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import error_of
from tests.functional.placement.conftest import configure_placement
from tests import servers

V24 = {'OpenStack-API-Version': 'accelerator 2.4'}
V23 = {'OpenStack-API-Version': 'accelerator 2.3'}
PCI = '0000:5e:00.0'
CARD = 'node1_' + PCI


def _get(app, hostname, caller=ADMIN, version=V24, status=200):
    return app.get('/v2/resource_provider_trees/%s' % hostname,
                   headers=dict(caller, **version), status=status)


def _rp_uuid(name):
    # Cyborg's provider uuids, written out again rather than imported.
    return str(uuid.uuid3(uuid.NAMESPACE_DNS, name))


def _inventory(total, reserved=0):
    return {'total': total, 'reserved': reserved, 'min_unit': 1,
            'max_unit': total, 'step_size': 1, 'allocation_ratio': 1.0}


def _fpga(hostname='node1', status='enabled'):
    device = fx.add_device(hostname=hostname, vendor='0x8086',
                           identity=PCI, status=status)
    for index in range(2):
        fx.add_deployable(device, name='region%d' % index,
                          attributes=[('rc', 'FPGA'),
                                      ('trait0', 'CUSTOM_FAST')])
    return device


def _providers(app, hostname='node1'):
    return {rp['name']: rp
            for rp in _get(app, hostname).json['resource_providers']}


def test_fpga_card_with_two_regions(app):
    _fpga()
    body = _get(app, 'node1').json
    assert (body['hostname'], body['root']) == (
        'node1', {'name': 'node1', 'uuid': None,
                  'placement': 'not configured'})
    rps = {rp['name']: rp for rp in body['resource_providers']}
    assert list(rps) == [CARD, CARD + '_region0', CARD + '_region1']
    card = rps[CARD]
    assert (card['uuid'], card['parent_uuid'], card['inventories']) == (
        _rp_uuid(CARD), None, {})
    assert card['traits'] == ['CUSTOM_FPGA_INTEL', 'CUSTOM_PROGRAMMABLE',
                              'OWNER_CYBORG']
    region = rps[CARD + '_region1']
    assert region['uuid'] == _rp_uuid(CARD + '_region1')
    assert region['parent_uuid'] == card['uuid']
    assert region['inventories'] == {'FPGA': _inventory(1)}
    assert region['traits'] == ['CUSTOM_FAST', 'CUSTOM_FPGA_INTEL',
                                'CUSTOM_FPGA_REGION_PR_1',
                                'CUSTOM_PROGRAMMABLE', 'OWNER_CYBORG']


def test_whole_gpu_is_its_device_provider_and_hosts_stay_apart(app):
    fx.add_device(hostname='node1', type_='GPU', vendor='0x10de',
                  identity='0000:3b:00.0')
    _fpga(hostname='node2')
    rps = _providers(app)
    assert list(rps) == ['node1_0000:3b:00.0']
    gpu = rps['node1_0000:3b:00.0']
    assert gpu['inventories'] == {'PGPU': _inventory(1)}
    assert gpu['traits'] == ['CUSTOM_GPU_NVIDIA', 'OWNER_CYBORG']
    assert set(_providers(app, 'node2')) == {
        'node2_' + PCI, 'node2_%s_region0' % PCI, 'node2_%s_region1' % PCI}


def test_card_in_maintenance_reserves_everything(app):
    _fpga(status='maintaining')
    region = _providers(app)[CARD + '_region0']
    assert region['inventories'] == {'FPGA': _inventory(1, reserved=1)}


def test_unknown_host_is_404_naming_it(app):
    _fpga()
    resp = _get(app, 'nosuchhost', status=404)
    assert error_of(resp) == ('No device of host nosuchhost is known: it '
                              'has no resource providers of ours.')


def test_needs_version_2_4(app):
    _fpga()
    resp = _get(app, 'node1', version=V23, status=404)
    assert 'needs API version 2.4' in error_of(resp)


def test_admin_only(app):
    _fpga()
    for caller in (MEMBER_A, MANAGER_A):
        resp = _get(app, 'node1', caller=caller, status=403)
        assert 'cyborg:resource_provider_tree:get' in error_of(resp)


def test_odd_hostnames_are_client_errors(app):
    _fpga()
    for quoted in ('%00', 'a%00b', '%ED%A0%80', '%FF', 'x' * 300, '%25',
                   'node1%2F..'):
        resp = _get(app, quoted, status='*')
        assert resp.status_int in (400, 404), (quoted, resp.text)
        assert error_of(resp)


# --- the compute node's uuid, from a real Placement ------------------------

def _create_compute_node(server, name):
    resp = requests.post(
        server.endpoint + '/resource_providers', json={'name': name},
        headers={'X-Auth-Token': 'admin', 'OpenStack-API-Version':
                 'placement 1.20'}, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()['uuid']


def test_root_uuid_is_placements_compute_node(app, api_conf,
                                               placement):  # noqa: F811
    hostname = 'node-%s' % uuid.uuid4().hex[:8]
    _fpga(hostname=hostname)
    configure_placement(api_conf, placement.endpoint)
    body = _get(app, hostname).json
    assert body['root'] == {'name': hostname, 'uuid': None,
                            'placement': 'not yet created'}

    root = _create_compute_node(placement, hostname)
    body = _get(app, hostname).json
    assert body['root'] == {'name': hostname, 'uuid': root,
                            'placement': 'found'}
    parents = {rp['name']: rp['parent_uuid']
               for rp in body['resource_providers']}
    card = '%s_%s' % (hostname, PCI)
    assert parents == {card: root, card + '_region0': _rp_uuid(card),
                       card + '_region1': _rp_uuid(card)}


def test_placement_down_still_shows_the_tree(app, api_conf):
    _fpga()
    configure_placement(api_conf,
                        'http://127.0.0.1:%d' % servers.free_port())
    body = _get(app, 'node1').json
    assert body['root'] == {'name': 'node1', 'uuid': None,
                            'placement': 'unreachable'}
    assert len(body['resource_providers']) == 3
