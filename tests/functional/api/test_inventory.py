"""/v2/devices, /v2/deployables, /v2/attributes and list pagination."""
import json

import pytest

from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import error_of

LATEST = dict(ADMIN, **{'OpenStack-API-Version': 'accelerator latest'})


def test_device_list_filters_and_show(app):
    fpga = fx.add_device(hostname='h1', type_='FPGA', vendor='8086')
    gpu = fx.add_device(hostname='h2', type_='GPU', vendor='10de')
    listed = app.get('/v2/devices', headers=ADMIN).json['devices']
    assert {d['uuid'] for d in listed} == {fpga.uuid, gpu.uuid}
    for query, expected in (({'type': 'GPU'}, gpu), ({'vendor': '8086'}, fpga),
                            ({'hostname': 'h2'}, gpu)):
        got = app.get('/v2/devices', query, headers=ADMIN).json['devices']
        assert [d['uuid'] for d in got] == [expected.uuid]
    shown = app.get('/v2/devices/%s' % fpga.uuid, headers=ADMIN).json
    assert shown['hostname'] == 'h1' and shown['type'] == 'FPGA'
    assert shown['links'][0]['href'].endswith('/v2/devices/' + fpga.uuid)
    assert shown['created_at'].endswith('+00:00')


def test_device_status_from_2_3(app):
    device = fx.add_device(status='maintaining')
    path = '/v2/devices/%s' % device.uuid
    assert 'status' not in app.get(path, headers=ADMIN).json
    assert app.get(path, headers=LATEST).json['status'] == 'maintaining'


def test_missing_device_is_404(app):
    missing = '00000000-0000-0000-0000-000000000000'
    resp = app.get('/v2/devices/%s' % missing, headers=ADMIN, status=404)
    assert 'could not be found' in error_of(resp)


def test_deployable_list_show_with_attributes(app):
    device = fx.add_device()
    dep = fx.add_deployable(device, name='region0',
                            attributes=[('rc', 'FPGA'),
                                        ('trait0', 'CUSTOM_FPGA_INTEL')])
    listed = app.get('/v2/deployables', headers=ADMIN).json['deployables']
    assert [d['uuid'] for d in listed] == [dep.uuid]
    shown = app.get('/v2/deployables/%s' % dep.uuid, headers=ADMIN).json
    assert shown['device_id'] == device.id
    assert json.loads(shown['attributes_list']) == [
        {'rc': 'FPGA'}, {'trait0': 'CUSTOM_FPGA_INTEL'}]
    got = app.get('/v2/deployables', {'name': 'other'}, headers=ADMIN)
    assert got.json == {'deployables': []}
    app.get('/v2/deployables/%s' % device.uuid, headers=ADMIN, status=404)


def test_attribute_create_list_show_delete(app):
    dep = fx.add_deployable(fx.add_device())
    body = {'deployable_id': dep.id, 'key': 'trait0', 'value': 'CUSTOM_A'}
    created = app.post_json('/v2/attributes', body, headers=ADMIN,
                            status=201).json
    assert created['key'] == 'trait0'
    app.post_json('/v2/attributes', body, headers=ADMIN, status=409)
    listed = app.get('/v2/attributes', {'deployable_id': str(dep.id),
                                        'key': 'trait0'}, headers=ADMIN)
    assert [a['uuid'] for a in listed.json['attributes']] == [created['uuid']]
    path = '/v2/attributes/%s' % created['uuid']
    assert app.get(path, headers=ADMIN).json['value'] == 'CUSTOM_A'
    app.delete(path, headers=ADMIN, status=204)
    app.get(path, headers=ADMIN, status=404)
    app.delete(path, headers=ADMIN, status=404)


def test_attribute_for_missing_deployable_is_400(app):
    resp = app.post_json('/v2/attributes', {'deployable_id': 999, 'key': 'k',
                                            'value': 'v'},
                         headers=ADMIN, status=400)
    assert 'deployable_id' in error_of(resp)


def test_pagination_pages_through_everything_once(app):
    made = [fx.add_device(hostname='h%d' % (i % 2)) for i in range(5)]
    seen, marker = [], None
    while True:
        query = {'limit': '2', 'sort_key': 'hostname', 'sort_dir': 'desc'}
        if marker:
            query['marker'] = marker
        body = app.get('/v2/devices', query, headers=ADMIN).json
        page = body['devices']
        seen.extend(d['uuid'] for d in page)
        if 'devices_links' not in body:
            break
        assert body['devices_links'][0]['rel'] == 'next'
        marker = page[-1]['uuid']
    assert sorted(seen) == sorted(d.uuid for d in made)
    assert len(seen) == len(set(seen))


def test_limit_is_capped_by_max_limit(app, api_conf):
    api_conf.set_override('max_limit', 2, group='api')
    for i in range(3):
        fx.add_device()
    body = app.get('/v2/devices', {'limit': '50'}, headers=ADMIN).json
    assert len(body['devices']) == 2


@pytest.mark.parametrize('query,field', [
    ({'limit': '0'}, 'query.limit'),
    ({'limit': '-1'}, 'query.limit'),
    ({'sort_key': 'secret'}, 'query.sort_key'),
    ({'sort_dir': 'up'}, 'query.sort_dir'),
    ({'marker': 'nope'}, 'query.marker'),
    ({'marker': '11111111-1111-1111-1111-111111111111'}, 'marker'),
])
def test_bad_pagination_is_400_naming_the_parameter(app, query, field):
    resp = app.get('/v2/devices', query, headers=ADMIN, status=400)
    assert field in error_of(resp)


def test_sorting_on_each_backend(pg_app):
    for vendor in ('b', 'c', 'a'):
        fx.add_device(vendor=vendor)
    body = pg_app.get('/v2/devices', {'sort_key': 'vendor'},
                      headers=ADMIN).json
    assert [d['vendor'] for d in body['devices']] == ['a', 'b', 'c']
