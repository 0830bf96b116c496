"""Topology in the API (microversion TOPOLOGY): where devices and
deployables sit, the NUMA node in an ARQ's attach_handle_info, and
numa_aligned from Nova's GET /servers/{id}/topology, asked only where the
service has [nova] credentials."""
import http.server
import uuid

import pytest

from cyborg_lite.api import microversion
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import add_deployable
from tests.functional.api.conftest import add_device
from tests.functional.api.conftest import add_handle
from tests.functional.api.conftest import create_arqs
from tests.functional.api.conftest import create_profile
from tests.functional.api.conftest import set_arq
from tests import json_http
from tests import servers

PLACE = {'numa_node': 6, 'local_cpulist': '24-27,56-59', 'socket': 1,
         'pcie_root': 'pci0000:c0'}


def _at(version):
    return dict(ADMIN, **{'OpenStack-API-Version': 'accelerator ' + version})


class NovaTopology(http.server.ThreadingHTTPServer):
    """GET /v2.1/servers/<uuid>/topology as Nova 2.78 answers an admin."""

    def __init__(self):
        super().__init__(('127.0.0.1', 0), _Handler)
        self.requests = []
        self.cells = {}         # instance uuid -> [host_node, ...]
        self.url = 'http://127.0.0.1:%d/v2.1' % self.server_address[1]


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.requests.append(
            (self.path, self.headers.get('OpenStack-API-Version')))
        instance = self.path.split('/')[-2]
        if instance not in self.server.cells:
            status, body = 404, {'itemNotFound': {'code': 404}}
        else:
            status, body = 200, {'pagesize_kb': None, 'nodes': [
                {'cpu_pinning': {}, 'host_node': node, 'memory_mb': 1024,
                 'siblings': [[0]], 'vcpu_set': [0]}
                for node in self.server.cells[instance]]}
        json_http.send_json(self, status, body)

    def log_message(self, *args):
        pass


@pytest.fixture
def nova(conf):
    server = NovaTopology()
    servers.serve_in_thread(server)
    yield server
    server.shutdown()
    server.server_close()


def _with_nova(conf, server):
    conf.set_override('auth_type', 'none', group='nova')
    conf.set_override('endpoint_override', server.url, group='nova')


def _placed_region():
    device = add_device()
    with session.writer() as s:
        s.query(models.Device).filter_by(id=device.id).update(
            dict(PLACE, pci_address='0000:c1:00.0'))
    region = add_deployable(device)
    with session.writer() as s:
        s.query(models.Deployable).filter_by(id=region.id).update(
            dict(PLACE, pci_bus_id='0000:c1:02.0'))
    return device, region


def test_devices_and_deployables_show_where_they_sit(app):
    device, region = _placed_region()
    shown = app.get('/v2/devices/' + device.uuid,
                    headers=_at(microversion.TOPOLOGY)).json
    assert {k: shown[k] for k in list(PLACE) + ['pci_bus_id']} == \
        dict(PLACE, pci_bus_id='0000:c1:00.0')
    older = app.get('/v2/devices/' + device.uuid, headers=_at('2.5')).json
    assert 'numa_node' not in older
    [listed] = app.get('/v2/deployables',
                       headers=_at(microversion.TOPOLOGY)).json[
        'deployables']
    assert listed['pci_bus_id'] == '0000:c1:02.0'
    assert listed['numa_node'] == 6 and listed['pcie_root'] == 'pci0000:c0'
    assert 'socket' not in app.get('/v2/deployables/' + region.uuid,
                                   headers=_at('2.5')).json


def _bound_arq(app):
    _device, region = _placed_region()
    handle = add_handle(region)
    create_profile(app, ADMIN)
    [arq] = create_arqs(app, ADMIN).json['arqs']
    instance = str(uuid.uuid4())
    set_arq(arq['uuid'], state='Bound', hostname='host1',
            device_rp_uuid=str(uuid.uuid4()), instance_uuid=instance,
            attach_handle_id=handle.id, deployable_id=region.id)
    return arq['uuid'], instance


def test_attach_handle_info_carries_the_numa_node(app):
    arq, _instance = _bound_arq(app)
    info = app.get('/v2/accelerator_requests/' + arq,
                   headers=ADMIN).json['attach_handle_info']
    assert info == {'domain': '0000', 'bus': '5e', 'device': '00',
                    'function': '1', 'numa_node': '6'}
    [listed] = app.get('/v2/accelerator_requests', headers=ADMIN).json['arqs']
    assert listed['attach_handle_info'] == info


@pytest.mark.parametrize('cells,expected', [
    ([6], True), ([0, 6], True), ([0, 1], False), ([], 'unknown'),
    (None, 'unknown')])
def test_numa_aligned_from_novas_topology(app, conf, nova, cells, expected):
    arq, instance = _bound_arq(app)
    _with_nova(conf, nova)
    if cells is not None:
        nova.cells[instance] = cells
    shown = app.get('/v2/accelerator_requests/' + arq,
                    headers=_at(microversion.TOPOLOGY)).json
    assert shown['numa_aligned'] == expected
    [listed] = app.get('/v2/accelerator_requests',
                       headers=_at(microversion.TOPOLOGY)).json['arqs']
    assert listed['numa_aligned'] == expected
    assert {r for r in nova.requests} == {
        ('/v2.1/servers/%s/topology' % instance, 'compute 2.78')}


def test_without_nova_credentials_nova_is_never_asked(app, nova):
    arq, instance = _bound_arq(app)
    nova.cells[instance] = [6]
    shown = app.get('/v2/accelerator_requests/' + arq,
                    headers=_at(microversion.TOPOLOGY)).json
    assert shown['numa_aligned'] == 'unknown'
    assert nova.requests == []
    assert 'numa_aligned' not in app.get('/v2/accelerator_requests/' + arq,
                                         headers=_at('2.5')).json


def test_an_unbound_arq_is_unknown_without_asking(app, conf, nova):
    _with_nova(conf, nova)
    create_profile(app, ADMIN)
    [arq] = create_arqs(app, ADMIN).json['arqs']
    shown = app.get('/v2/accelerator_requests/' + arq['uuid'],
                    headers=_at(microversion.TOPOLOGY)).json
    assert shown['numa_aligned'] == 'unknown' and nova.requests == []


@pytest.mark.parametrize('value,status', [('required', 201),
                                          ('preferred', 400), ('', 400)])
def test_a_profile_asks_for_one_numa_node(app, value, status):
    group = {'resources:FPGA': '1', 'accel:numa_affinity': value}
    create_profile(app, ADMIN, groups=[group, group], status=status)
