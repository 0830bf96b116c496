"""Error paths shared by every resource: never a 500 for bad input."""
import io

import pytest
import webob
import webtest

from cyborg_lite.api import deploy

from cyborg_lite.db import devices as db_devices
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import error_of


def test_malformed_json_is_400_naming_the_body(app):
    resp = app.post('/v2/device_profiles', '[{"name": ',
                    headers=dict(ADMIN, **{'Content-Type':
                                           'application/json'}),
                    status=400)
    assert 'body' in error_of(resp)


def test_schema_error_names_the_field(app):
    body = [{'name': 'ok', 'groups': [{'resources:FPGA': 'x'}]}]
    resp = app.post_json('/v2/device_profiles', body, headers=ADMIN,
                         status=400)
    assert 'body.0.groups.0.resources:FPGA' in error_of(resp)


def test_missing_field_is_named(app):
    resp = app.post_json('/v2/accelerator_requests', {}, headers=ADMIN,
                         status=400)
    assert 'body.device_profile_name' in error_of(resp)


def test_nul_character_is_400_not_a_database_error(app):
    resp = app.get('/v2/devices', {'hostname': 'a\x00b'}, status=400)
    assert 'query.hostname' in error_of(resp)
    body = [{'name': 'x', 'groups': [{'resources:FPGA': '1'}],
             'description': 'a\x00'}]
    resp = app.post_json('/v2/device_profiles', body, headers=ADMIN,
                         status=400)
    assert 'body.0.description' in error_of(resp)


@pytest.mark.parametrize('text, field', [
    # Only a \\u escape makes these in JSON (utils.json_body).
    ('[{"name": "x", "groups": [{"resources:FPGA": "1"}], '
     '"description": "a\\ud800"}]', 'body.0.description'),
    ('[{"name": "x", "groups": [{"resources:FPGA": "1", '
     '"trait:A\\u0000": "required"}]}]', 'body.0.groups.0'),
])
def test_escaped_nul_or_lone_surrogate_is_400(app, text, field):
    resp = app.post('/v2/device_profiles', text.encode(), headers=dict(
        ADMIN, **{'Content-Type': 'application/json'}), status=400)
    assert field in error_of(resp)


def test_raw_nul_or_encoded_surrogate_is_not_json(app):
    for raw in (b'[{"name": "x\x00"}]', b'[{"name": "x\xed\xa0\x80"}]'):
        resp = app.post('/v2/device_profiles', raw, headers=dict(
            ADMIN, **{'Content-Type': 'application/json'}), status=400)
        assert 'not a JSON document' in error_of(resp)


def test_an_escaped_backslash_before_u_is_plain_text(app):
    text = ('[{"name": "x", "groups": [{"resources:FPGA": "1"}], '
            '"description": "C:\\\\u0000"}]')
    resp = app.post('/v2/device_profiles', text.encode(), headers=dict(
        ADMIN, **{'Content-Type': 'application/json'}), status=201)
    assert resp.json['description'] == 'C:\\u0000'


def test_deeply_nested_body_is_400(app):
    resp = app.post('/v2/accelerator_requests', '[' * 100000,
                    headers=dict(ADMIN, **{'Content-Type':
                                           'application/json'}),
                    status=400)
    assert 'body' in error_of(resp)


def test_unknown_or_repeated_query_parameter_is_400(app):
    assert 'query' in error_of(app.get('/v2/devices?colour=red', status=400))
    resp = app.get('/v2/devices?type=FPGA&type=GPU', status=400)
    assert 'type' in error_of(resp)


def test_declared_body_over_the_limit_is_413(app, api_conf):
    api_conf.set_override('max_request_body_size', 100, group='api')
    # The limit is read when the app is built.
    small = webtest.TestApp(deploy.loadapp(api_conf))
    resp = small.post('/v2/device_profiles', 'x' * 101, headers=ADMIN,
                      status=413)
    assert '100 bytes' in error_of(resp)


def test_streamed_body_over_the_limit_is_413(sqlite_db, api_conf):
    api_conf.set_override('max_request_body_size', 100, group='api')
    app = deploy.loadapp(api_conf)
    # Chunked: no Content-Length, the size shows only while reading.
    req = webob.Request.blank('/v2/device_profiles', method='POST',
                              headers=ADMIN)
    req.environ.pop('CONTENT_LENGTH', None)
    req.environ['HTTP_TRANSFER_ENCODING'] = 'chunked'
    req.environ['wsgi.input_terminated'] = True
    req.environ['wsgi.input'] = io.BytesIO(b'[' + b' ' * 500 + b']')
    resp = req.get_response(app)
    assert resp.status_int == 413
    assert '100 bytes' in error_of(resp)


def test_unexpected_error_is_json_500_without_traceback(app, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError('secret internals')
    monkeypatch.setattr(db_devices, 'list_device_rows', explode)
    resp = app.get('/v2/devices', status=500)
    message = error_of(resp)
    assert 'secret' not in message and 'Traceback' not in resp.text
    assert resp.headers['x-openstack-request-id'] in message


@pytest.mark.parametrize('path,status', [
    ('/v2/devices/%00', 404),
    ('/v2/devices/' + 'a' * 5000, 404),
    ('/v2/device_profiles/%00', 404),
    ('/v2/accelerator_requests/x%0a', 404),
    # Not UTF-8: the path cannot be decoded.
    ('/v2/device_profiles/%ff%fe', 400),
])
def test_odd_path_parameters_are_client_errors(app, path, status):
    resp = app.get(path, headers=dict(ADMIN, **{'OpenStack-API-Version':
                                                'accelerator latest'}),
                   status=status)
    assert error_of(resp)


def test_database_down_is_503_json_with_retry_after(app, conf):
    """Issue 18.4: not a 500 "Unexpected API error"."""
    from cyborg_lite.db.sql import session
    from tests import servers
    conf.set_override('connection', 'postgresql+psycopg2://nobody@127.0.0.1:'
                      '%d/x' % servers.free_port(), group='database')
    try:
        for path in ('/v2/devices', '/v2/accelerator_requests'):
            resp = app.get(path, headers=ADMIN, status=503)
            assert resp.headers['Retry-After'] == '5'
            assert resp.content_type == 'application/json'
            assert error_of(resp) == ('The database is unavailable; try '
                                      'again later.')
    finally:
        session.OUTAGE.succeeded()
        session.dispose_all()
