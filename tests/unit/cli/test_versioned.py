"""2.4 resources' commands send at least 2.4; the tree is shown depth
first."""
import argparse
import types

import pytest

from cyborg_lite.cli import accelerator_requests
from cyborg_lite.cli import client as cl_client
from cyborg_lite.cli import deployables
from cyborg_lite.cli import devices
from cyborg_lite.cli import provider_trees
from cyborg_lite.cli import versioned


@pytest.mark.parametrize('current,sent', [
    ('2.0', '2.4'), ('2.3', '2.4'), ('2.4', '2.4'), ('2.10', '2.10'),
    ('3', '3'), ('latest', 'latest')])
def test_at_least(current, sent):
    assert versioned.at_least(current, '2.4') == sent


class RecordingClient:
    endpoint = 'http://api/v2'
    api_version = '2.3'

    def __init__(self, bodies):
        self.bodies = list(bodies)
        self.calls = []

    def request(self, method, path, **kwargs):
        self.calls.append((method, path, kwargs))
        return self.bodies.pop(0)


class Response:
    status_code = 200

    def __init__(self, body):
        self.body = body
        self.content = b'x'

    def json(self):
        return self.body


def test_every_call_carries_the_version_and_pages_are_followed():
    next_link = [{'rel': 'next', 'href': 'http://x/v2/programs?marker=m'}]
    client = RecordingClient([
        Response({'programs': [1], 'programs_links': next_link}),
        Response({'programs': [2]})])
    api = versioned.VersionedApi(client, '2.4')
    assert api.get_all('/programs', 'programs', {'state': 'queued'}) == [1, 2]
    assert [c[2]['microversion'] for c in client.calls] == ['2.4', '2.4']
    assert client.calls[1][2]['params'] == {'state': 'queued',
                                            'marker': 'm'}


def _rp(name, uuid, parent):
    return {'name': name, 'uuid': uuid, 'parent_uuid': parent}


def test_depth_first_with_siblings_by_name():
    providers = [_rp('b', 'B', None), _rp('a', 'A', None),
                 _rp('b2', 'B2', 'B'), _rp('b1', 'B1', 'B'),
                 _rp('a1', 'A1', 'A')]
    assert [(p['name'], depth) for p, depth in
            provider_trees.depth_first(None, providers)] == [
        ('a', 1), ('a1', 2), ('b', 1), ('b1', 2), ('b2', 2)]


def test_table_cells_indent_and_summarise():
    body = {'root': {'name': 'h', 'uuid': None}, 'resource_providers': [
        dict(_rp('h_card', 'C', None), traits=['T1', 'T2'],
             inventories={'FPGA': {'total': 2, 'reserved': 2}})]}
    rows = list(provider_trees.tree_rows(body))
    assert [r[0].human_readable() for r in rows] == ['h', '  h_card']
    assert [r[0].machine_readable() for r in rows] == ['h', 'h_card']
    assert rows[1][3].human_readable() == 'FPGA=2 (2 reserved)'
    assert rows[1][4].human_readable() == 'T1\nT2'


class StockCyborg(RecordingClient):
    """An API whose newest version is 2.3: 406 for anything newer."""
    _json = cl_client.Client._json
    get = cl_client.Client.get
    get_all = cl_client.Client.get_all

    def request(self, method, path, **kwargs):
        version = kwargs.get('microversion', self.api_version)
        self.calls.append((method, path, version))
        if version != '2.3':
            raise cl_client.ApiError(406, 'Version %s is not supported'
                                     % version)
        return Response({'devices': [{'uuid': 'd1', 'status': 'enabled'}]})


class StockCyborgDeployables(StockCyborg):
    def request(self, method, path, **kwargs):
        super().request(method, path, **kwargs)
        return Response({'uuid': 'r1', 'name': 'region0'})


def test_deployable_show_asks_for_device_state_and_falls_back_on_406():
    api = StockCyborgDeployables([])
    app = types.SimpleNamespace(
        client_manager=types.SimpleNamespace(cyborg_lite=api))
    command = deployables.ShowDeployable(app, None)
    args = argparse.Namespace(deployable='r1')
    columns, values = command.take_action(args)
    assert api.calls == [
        ('GET', '/deployables/r1', versioned.HEALTH_API_VERSION),
        ('GET', '/deployables/r1', versioned.TOPOLOGY_API_VERSION),
        ('GET', '/deployables/r1', '2.5'), ('GET', '/deployables/r1', '2.3')]
    assert dict(zip(columns, values)) == {'uuid': 'r1', 'name': 'region0'}


def test_device_list_asks_for_reasons_and_falls_back_on_406():
    api = StockCyborg([])
    app = types.SimpleNamespace(
        client_manager=types.SimpleNamespace(cyborg_lite=api))
    command = devices.ListDevice(app, None)
    args = argparse.Namespace(type=None, vendor=None, hostname='h1',
                              long=False)
    columns, rows = command.take_action(args)
    assert [c[2] for c in api.calls] == [versioned.HEALTH_API_VERSION,
                                         versioned.TOPOLOGY_API_VERSION,
                                         '2.5', '2.3']
    assert columns[-2:] == ('health', 'unavailable_reasons')
    assert list(rows) == [('d1', None, None, None, None, 'enabled', None,
                           None)]


class StockCyborgArq(StockCyborg):
    def request(self, method, path, **kwargs):
        super().request(method, path, **kwargs)
        return Response({'uuid': 'a1', 'state': 'Bound'})


def test_arq_show_asks_for_bind_waits_for_and_falls_back_on_406():
    api = StockCyborgArq([])
    app = types.SimpleNamespace(
        client_manager=types.SimpleNamespace(cyborg_lite=api))
    command = accelerator_requests.ShowArq(app, None)
    columns, values = command.take_action(argparse.Namespace(arq='a1'))
    assert api.calls == [
        ('GET', '/accelerator_requests/a1',
         accelerator_requests.BIND_WAITS_API_VERSION),
        ('GET', '/accelerator_requests/a1', '2.3')]
    assert dict(zip(columns, values)) == {'uuid': 'a1', 'state': 'Bound'}
