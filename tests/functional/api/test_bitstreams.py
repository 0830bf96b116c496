"""/v2/bitstreams metadata: create, list with filters, show, delete, the
microversion gate and who sees what (private vs public)."""
import pytest

from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import programming_jobs as jobs_db
from tests.functional.api import bitstream_helpers as bh
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import ANONYMOUS
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import MEMBER_B
from tests.functional.api.conftest import add_deployable
from tests.functional.api.conftest import add_device
from tests.functional.api.conftest import error_of
from tests.unit.bitstreams import builders

UUID = '5d6a8f0e-6a47-4b5b-9c50-1a2b3c4d5e6f'


def test_create_is_queued_with_normalised_ids(app):
    resp = bh.create(app, MEMBER_A, region_type=builders.INTERFACE_UUID,
                     function_id=builders.AFU_UUID.upper(), sha256='A' * 64,
                     local_memory_mb=512)
    body = resp.json
    assert resp.location == 'http://localhost/v2/bitstreams/' + body['uuid']
    assert (body['status'], body['project_id'], body['visibility']) == (
        'queued', 'project-a', 'private')
    assert (body['region_type'], body['function_id'], body['sha256']) == (
        bh.REGION_TYPE, bh.FUNCTION_ID, 'a' * 64)
    assert (body['local_memory_mb'], body['size']) == (512, None)
    assert app.get('/v2/bitstreams/' + body['uuid'],
                   headers=bh.h(MEMBER_A)).json == body


@pytest.mark.parametrize('body,field', [
    ({'format': 'gbs'}, 'body.name'),
    (bh.metadata(format='bin'), 'body.format'),
    (bh.metadata(colour='red'), 'body.colour'),
    (bh.metadata(sha256='abc'), 'body.sha256'),
    (bh.metadata(local_memory_mb=-1), 'body.local_memory_mb'),
    (bh.metadata(local_memory_mb='1'), 'body.local_memory_mb'),
    (bh.metadata(region_type='   '), 'body.region_type'),
    (bh.metadata(visibility='shared'), 'body.visibility'),
    (bh.metadata(name='a\x00b'), 'body.name'),
    ([bh.metadata()], 'body'),
])
def test_bad_metadata_is_400_naming_the_field(app, body, field):
    resp = app.post_json('/v2/bitstreams', body, headers=bh.h(MEMBER_A),
                         status=400)
    assert 'Invalid value for %s:' % field in error_of(resp)
    assert bitstreams_db.list_bitstreams() == []


def test_body_that_is_not_json_is_400(app):
    resp = app.post('/v2/bitstreams', '{"name": ', status=400,
                    headers=bh.h(MEMBER_A, **{'Content-Type':
                                              'application/json'}))
    assert 'body' in error_of(resp)
    assert bitstreams_db.list_bitstreams() == []


def test_only_admins_create_public_bitstreams(app):
    resp = bh.create(app, MEMBER_A, status=403, visibility='public')
    assert 'cyborg:bitstream:publicize' in error_of(resp)
    assert bitstreams_db.list_bitstreams() == []
    assert bh.create(app, ADMIN, visibility='public').json[
        'visibility'] == 'public'


@pytest.mark.parametrize('method,path', [
    ('GET', '/v2/bitstreams'), ('POST', '/v2/bitstreams'),
    ('GET', '/v2/bitstreams/' + UUID), ('DELETE', '/v2/bitstreams/' + UUID),
    ('GET', '/v2/bitstreams/%s/file' % UUID),
    ('PUT', '/v2/bitstreams/%s/file' % UUID),
])
def test_routes_need_version_2_4(app, method, path):
    headers = dict(ADMIN, **{'OpenStack-API-Version': 'accelerator 2.3'})
    resp = app.request(path, method=method, headers=headers, status=404)
    assert 'needs API version 2.4' in error_of(resp)


def _three(app):
    """A's private gbs, B's private xclbin-declared, admin's public one."""
    a = bh.create(app, MEMBER_A, region_type='pr-1', function_id='f1',
                  vendor='intel').json
    b = bh.create(app, MEMBER_B, format='xclbin', region_type='pr-2',
                  function_id='f2', vendor='xilinx').json
    pub = bh.create(app, ADMIN, visibility='public', region_type='pr-1',
                    function_id='f2', vendor='intel').json
    return a, b, pub


def _listed(app, caller, query=''):
    body = app.get('/v2/bitstreams' + query, headers=bh.h(caller)).json
    return [b['uuid'] for b in body['bitstreams']]


def test_visibility_per_caller(app):
    a, b, pub = _three(app)
    assert _listed(app, MEMBER_A) == [a['uuid'], pub['uuid']]
    assert _listed(app, MEMBER_B) == [b['uuid'], pub['uuid']]
    assert _listed(app, ADMIN) == [a['uuid'], b['uuid'], pub['uuid']]
    app.get('/v2/bitstreams', headers=bh.h(ANONYMOUS), status=403)
    # Another project's private bitstream does not exist for B.
    app.get('/v2/bitstreams/' + a['uuid'], headers=bh.h(MEMBER_B),
            status=404)
    app.get('/v2/bitstreams/' + pub['uuid'], headers=bh.h(MEMBER_B),
            status=200)
    app.get('/v2/bitstreams/' + a['uuid'], headers=bh.h(ADMIN), status=200)
    app.get('/v2/bitstreams/' + pub['uuid'], headers=bh.h(ANONYMOUS),
            status=403)


@pytest.mark.parametrize('query,expected', [
    ('?region_type=pr-1', ['a', 'pub']),
    ('?region_type=PR-1', ['a', 'pub']),
    ('?function_id=f2', ['b', 'pub']),
    ('?vendor=xilinx', ['b']),
    ('?format=xclbin', ['b']),
    ('?visibility=public', ['pub']),
    ('?status=active', []),
    ('?region_type=pr-1&function_id=f2', ['pub']),
    # Ties in desc order: the newest first.
    ('?sort_key=format&sort_dir=desc', ['b', 'pub', 'a']),
])
def test_list_filters(app, query, expected):
    a, b, pub = _three(app)
    names = {a['uuid']: 'a', b['uuid']: 'b', pub['uuid']: 'pub'}
    assert [names[u] for u in _listed(app, ADMIN, query)] == expected


def test_region_type_filter_takes_a_uuid_in_any_form(app):
    made = bh.create(app, MEMBER_A, region_type=bh.REGION_TYPE).json
    assert _listed(app, MEMBER_A, '?region_type=' +
                   builders.INTERFACE_UUID.upper()) == [made['uuid']]


def test_list_pages_with_marker(app):
    made = [bh.create(app, MEMBER_A, name='bs%d' % i).json['uuid']
            for i in range(3)]
    first = app.get('/v2/bitstreams?limit=2', headers=bh.h(MEMBER_A)).json
    assert [b['uuid'] for b in first['bitstreams']] == made[:2]
    next_href = first['bitstreams_links'][0]['href']
    assert 'marker=' + made[1] in next_href
    rest = _listed(app, MEMBER_A, '?limit=2&marker=' + made[1])
    assert rest == made[2:]


@pytest.mark.parametrize('query,field', [
    ('?format=bin', 'query.format'), ('?colour=red', 'query.colour'),
    ('?limit=0', 'query.limit'), ('?marker=nope', 'query.marker'),
    ('?sort_key=sha256', 'query.sort_key'),
    ('?region_type=%20', 'query.region_type'),
])
def test_bad_list_query_is_400(app, query, field):
    resp = app.get('/v2/bitstreams' + query, headers=bh.h(MEMBER_A),
                   status=400)
    assert 'Invalid value for %s' % field in error_of(resp)


def test_unknown_marker_is_400(app):
    resp = app.get('/v2/bitstreams?marker=' + UUID, headers=bh.h(ADMIN),
                   status=400)
    assert 'marker' in error_of(resp)


@pytest.mark.parametrize('ident', [UUID, 'not-a-uuid'])
def test_show_and_delete_unknown_is_404(app, ident):
    for method in ('GET', 'DELETE'):
        resp = app.request('/v2/bitstreams/' + ident, method=method,
                           headers=bh.h(ADMIN), status=404)
        assert 'Bitstream %s could not be found' % ident in error_of(resp)


def test_delete_policy(app):
    a, _b, pub = _three(app)
    app.delete('/v2/bitstreams/' + a['uuid'], headers=bh.h(MEMBER_B),
               status=404)
    resp = app.delete('/v2/bitstreams/' + pub['uuid'],
                      headers=bh.h(MEMBER_B), status=403)
    assert 'cyborg:bitstream:delete' in error_of(resp)
    app.delete('/v2/bitstreams/' + a['uuid'], headers=bh.h(ANONYMOUS),
               status=403)
    app.delete('/v2/bitstreams/' + a['uuid'], headers=bh.h(MEMBER_A),
               status=204)
    app.delete('/v2/bitstreams/' + pub['uuid'], headers=bh.h(ADMIN),
               status=204)
    assert [b.uuid for b in bitstreams_db.list_bitstreams()] == [_b['uuid']]


def test_delete_removes_the_bytes_unless_shared(app, conf):
    data = builders.build_gbs()
    first = bh.create_active(app, MEMBER_A, data)
    second = bh.create_active(app, MEMBER_A, data)
    path = conf.bitstreams.store_dir + '/%s/%s' % (first['sha256'][:2],
                                                   first['sha256'])
    app.delete('/v2/bitstreams/' + first['uuid'], headers=bh.h(MEMBER_A),
               status=204)
    # The second bitstream still has these bytes.
    assert bh.stored_files(conf.bitstreams.store_dir) == [path]
    app.delete('/v2/bitstreams/' + second['uuid'], headers=bh.h(MEMBER_A),
               status=204)
    assert bh.stored_files(conf.bitstreams.store_dir) == []


def test_delete_refused_while_a_job_uses_it(app, conf):
    made = bh.create_active(app, MEMBER_A)
    region = add_deployable(add_device())
    row = bitstreams_db.get(made['uuid'])
    job = jobs_db.create_job(region.id, row.id, hostname='host1')
    resp = app.delete('/v2/bitstreams/' + made['uuid'],
                      headers=bh.h(MEMBER_A), status=409)
    assert job.uuid in error_of(resp)
    # Nothing changed: the row and its bytes are still there.
    assert bitstreams_db.get(made['uuid']).status == 'active'
    assert len(bh.stored_files(conf.bitstreams.store_dir)) == 1


def test_queries_on_each_backend(pg_app):
    """The bitstream and job list queries (filters, visibility, joins,
    markers) on SQLite and PostgreSQL."""
    app = pg_app
    a, _b, pub = _three(app)
    assert _listed(app, MEMBER_A, '?region_type=pr-1&limit=1') == [a['uuid']]
    assert _listed(app, MEMBER_A, '?region_type=pr-1&marker=' +
                   a['uuid']) == [pub['uuid']]
    made = bh.create_active(app, MEMBER_A)
    region = add_deployable(add_device())
    jobs = [jobs_db.create_job(region.id, bitstreams_db.get(made['uuid']).id,
                               project_id='project-a')]
    jobs_db.cancel(jobs[0].uuid)
    jobs.append(jobs_db.create_job(region.id, bitstreams_db.get(
        made['uuid']).id, project_id='project-a'))
    query = '/v2/programs?deployable_uuid=%s&bitstream_uuid=%s&marker=%s' % (
        region.uuid, made['uuid'], jobs[0].uuid)
    listed = app.get(query, headers=bh.h(MEMBER_A)).json['programs']
    assert [(j['uuid'], j['state']) for j in listed] == [(jobs[1].uuid,
                                                          'queued')]
    assert app.get('/v2/programs', headers=bh.h(MEMBER_B)).json == {
        'programs': []}
