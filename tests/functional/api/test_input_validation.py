"""Bad input is a JSON 4xx that stores nothing: integers are integers,
patterns match whole strings, JSON bodies are declared as JSON."""
import json

import pytest

from cyborg_lite.api.schemas import validator
from tests.functional.api import bitstream_helpers as bh
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import error_of

LATEST = {'OpenStack-API-Version': 'accelerator latest'}
ARQS = '/v2/accelerator_requests'
INSTANCE = '8f1e3b52-6d1c-4a3e-9a63-0f1f2c3d4e5f'
RP = 'a1b2c3d4-0000-4000-8000-000000000001'


def _arqs(app):
    return app.get(ARQS, headers=ADMIN).json['arqs']


def _profile_names(app):
    return [p['name'] for p in
            app.get('/v2/device_profiles', headers=ADMIN).json[
                'device_profiles']]


# --- integers are ints: not 0.0, not 1e2, not true ---------------------

@pytest.mark.parametrize('group_id', [0.0, 1e0, True, False, '0'])
def test_arq_group_id_must_be_an_integer(app, group_id):
    fx.create_profile(app, ADMIN, groups=[fx.GROUP, fx.GROUP])
    resp = app.post_json(ARQS, {'device_profile_name': 'dp1',
                                'device_profile_group_id': group_id},
                         headers=ADMIN, status=400)
    assert 'body.device_profile_group_id' in error_of(resp)
    assert _arqs(app) == []


def test_arq_integral_group_id_still_works(app):
    fx.create_profile(app, ADMIN, groups=[fx.GROUP, fx.GROUP])
    arqs = app.post_json(ARQS, {'device_profile_name': 'dp1',
                                'device_profile_group_id': 1},
                         headers=ADMIN, status=201).json['arqs']
    assert [a['device_profile_group_id'] for a in arqs] == [1]


@pytest.mark.parametrize('count', [1.0, 2.5, True])
def test_profile_resource_count_must_be_an_integer(app, count):
    group = {'resources:FPGA': count}
    resp = fx.create_profile(app, ADMIN, groups=[group], status=400)
    assert 'body.0.groups.0.resources:FPGA' in error_of(resp)
    assert _profile_names(app) == []


@pytest.mark.parametrize('value', [1.0, 1.5, True])
def test_attribute_deployable_id_must_be_an_integer(app, value):
    body = {'deployable_id': value, 'key': 'k', 'value': 'v'}
    resp = app.post_json('/v2/attributes', body, headers=ADMIN, status=400)
    assert 'body.deployable_id' in error_of(resp)
    assert app.get('/v2/attributes', headers=ADMIN).json[
        'attributes'] == []


def test_bitstream_memory_must_be_an_integer(app):
    resp = bh.create(app, MEMBER_A, status=400, local_memory_mb=4096.0)
    assert 'body.local_memory_mb' in error_of(resp)
    assert app.get('/v2/bitstreams', headers=bh.h(MEMBER_A)).json[
        'bitstreams'] == []


@pytest.mark.parametrize('query', ['limit=2%0A', 'limit=2.0',
                                   'deployable_id=1%0A',
                                   'deployable_id=1.0'])
def test_integer_query_values_are_whole_digit_strings(app, query):
    resp = app.get('/v2/attributes?' + query, headers=ADMIN, status=400)
    assert 'query.' in error_of(resp)


# --- patterns match the whole string (no trailing newline) ---------------

def test_sha256_with_a_trailing_newline_is_refused(app):
    digest = 'ab' * 32
    resp = bh.create(app, MEMBER_A, status=400, sha256=digest + '\n')
    assert 'body.sha256' in error_of(resp)
    assert app.get('/v2/bitstreams', headers=bh.h(MEMBER_A)).json[
        'bitstreams'] == []
    bh.create(app, MEMBER_A, sha256=digest)


def test_bind_with_a_trailing_newline_in_instance_uuid_is_refused(
        app, conductor):
    fx.create_profile(app, ADMIN)
    arq = fx.create_arqs(app, MEMBER_A).json['arqs'][0]
    ops = [{'op': 'add', 'path': '/hostname', 'value': 'h1'},
           {'op': 'add', 'path': '/device_rp_uuid', 'value': RP},
           {'op': 'add', 'path': '/instance_uuid', 'value': INSTANCE + '\n'}]
    resp = app.patch_json(ARQS, {arq['uuid']: ops}, headers=MEMBER_A,
                          status=400)
    assert '/instance_uuid' in error_of(resp)
    assert conductor.calls == []
    shown = app.get('%s/%s' % (ARQS, arq['uuid']), headers=MEMBER_A).json
    assert shown['state'] == 'Initial' and shown['instance_uuid'] is None


@pytest.mark.parametrize('name', ['dp\n', 'dp\nx', '\ndp'])
def test_profile_name_with_a_newline_is_refused(app, name):
    resp = fx.create_profile(app, ADMIN, name=name, status=400)
    assert 'body.0.name' in error_of(resp)
    assert _profile_names(app) == []


@pytest.mark.parametrize('key', ['trait:CUSTOM_X\n', 'resources:FPGA\n',
                                 'accel:function_id_2\n'])
def test_group_key_with_a_newline_is_refused(app, key):
    group = dict(fx.GROUP)
    group[key] = 'required' if key.startswith('trait') else '1'
    resp = fx.create_profile(app, ADMIN, groups=[group], status=400)
    assert 'body.0.groups.0' in error_of(resp)
    assert _profile_names(app) == []



@pytest.mark.parametrize('depth', [100, 900, 5000])
@pytest.mark.parametrize('where', ['whole', 'value'])
def test_deeply_nested_bodies_are_refused_cleanly(app, depth, where):
    # Nested nearly as deep as json.loads takes (or deeper): a 400 from
    # every step that walks the document, never a RecursionError's 500.
    nested = '[' * depth + ']' * depth
    body = nested if where == 'whole' else (
        '[{"name": "deep", "groups": [{"accel:x": %s}]}]' % nested)
    resp = app.post('/v2/device_profiles', body, headers=dict(
        ADMIN, **{'Content-Type': 'application/json'}), status=400)
    assert 'body' in error_of(resp)
    assert _profile_names(app) == []


@pytest.mark.parametrize('pattern,python', [
    ('^a$', r'^a\Z'),
    ('^(a|b$)', r'^(a|b\Z)'),
    (r'^\$$', r'^\$\Z'),          # an escaped $ is a dollar sign
    ('^[$]+$', r'^[$]+\Z'),        # so is one in a class
    ('^[]$]$', r'^[]$]\Z'),        # ']' first in a class is a member
    ('^[^]$]$', r'^[^]$]\Z'),
    (r'^[\]$]$', r'^[\]$]\Z'),
])
def test_end_anchors_become_end_of_string(pattern, python):
    assert validator.whole_string_pattern(pattern) == python


def test_path_names_are_matched_whole(app):
    # A profile name or ARQ uuid in the path with a newline names nothing.
    fx.create_profile(app, ADMIN)
    resp = app.get('/v2/device_profiles/dp1%0A',
                   headers=dict(ADMIN, **LATEST), status=404)
    assert error_of(resp)


# --- JSON bodies are declared as JSON --------------------------------------

JSON_ROUTES = [
    ('POST', '/v2/device_profiles',
     [{'name': 'dp9', 'groups': [fx.GROUP]}]),
    ('POST', ARQS, {'device_profile_name': 'dp1'}),
    ('POST', '/v2/attributes',
     {'deployable_id': 1, 'key': 'k', 'value': 'v'}),
    ('POST', '/v2/bitstreams', {'name': 'b', 'format': 'gbs'}),
]


@pytest.mark.parametrize('content_type', [
    'text/plain', 'application/x-www-form-urlencoded', 'application/jsonx',
    'application/octet-stream', None])
@pytest.mark.parametrize('method,path,body', JSON_ROUTES)
def test_json_routes_refuse_other_content_types(app, method, path, body,
                                                content_type):
    fx.create_profile(app, ADMIN)
    before = (_profile_names(app), _arqs(app))
    headers = dict(ADMIN, **LATEST)
    if content_type:
        headers['Content-Type'] = content_type
    resp = app.request(path, method=method, headers=headers,
                       body=json.dumps(body).encode(), expect_errors=True)
    assert resp.status_int == 415, resp.text
    assert 'application/json' in error_of(resp)
    assert (_profile_names(app), _arqs(app)) == before
    assert app.get('/v2/bitstreams', headers=dict(ADMIN, **LATEST)).json[
        'bitstreams'] == []


def test_patch_refuses_a_form_body(app, conductor):
    fx.create_profile(app, ADMIN)
    arq = fx.create_arqs(app, MEMBER_A).json['arqs'][0]
    body = json.dumps({arq['uuid']: [
        {'op': 'add', 'path': '/hostname', 'value': 'h1'},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': RP},
        {'op': 'add', 'path': '/instance_uuid', 'value': INSTANCE}]})
    resp = app.patch(ARQS, body, headers=dict(
        MEMBER_A, **{'Content-Type': 'application/x-www-form-urlencoded'}),
        status=415)
    assert error_of(resp)
    assert conductor.calls == []


@pytest.mark.parametrize('content_type', [
    'application/json; charset=UTF-8', 'Application/JSON',
    'application/json;charset=utf-8'])
def test_json_with_parameters_or_other_case_is_accepted(app, content_type):
    body = json.dumps([{'name': 'dp1', 'groups': [fx.GROUP]}])
    app.post('/v2/device_profiles', body, headers=dict(
        ADMIN, **{'Content-Type': content_type}), status=201)
    assert _profile_names(app) == ['dp1']
