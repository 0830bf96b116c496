"""Error text and endpoint handling of the HTTP client."""
import json

import pytest
import requests

from cyborg_lite.cli import client


def _response(status, body, content_type='application/json'):
    # A real requests.Response, as keystoneauth hands it back.
    resp = requests.Response()
    resp.status_code = status
    resp.reason = 'Reason'
    resp._content = body.encode() if isinstance(body, str) else body
    resp.headers['Content-Type'] = content_type
    return resp


def test_cyborg_fault_string_is_unwrapped():
    inner = json.dumps({'faultcode': 'Client',
                        'faultstring': 'Device abc could not be found.',
                        'debuginfo': None})
    resp = _response(404, json.dumps({'error_message': inner}))
    assert client.error_message(resp) == 'Device abc could not be found.'


def test_placement_style_errors_give_detail():
    body = {'errors': [{'status': 409, 'title': 'Conflict',
                        'detail': 'generation mismatch'}]}
    resp = _response(409, json.dumps(body))
    assert client.error_message(resp) == 'generation mismatch'


def test_plain_text_body_gives_its_first_line():
    resp = _response(502, 'Bad gateway\nmore detail\n', 'text/plain')
    assert client.error_message(resp) == 'Bad gateway'


def test_empty_body_gives_the_reason():
    assert client.error_message(_response(500, b'')) == 'Reason'


def test_api_error_is_one_line_with_status():
    err = client.ApiError(409, 'name\n  taken')
    assert str(err) == 'name taken (HTTP 409)'
    assert err.status == 409


@pytest.mark.parametrize('given', ['http://h:6666', 'http://h:6666/',
                                   'http://h:6666/v2', 'http://h:6666/v2/'])
def test_endpoint_is_the_v2_base(given):
    assert client.normalize_endpoint(given) == 'http://h:6666/v2'


def test_catalog_path_prefix_is_kept():
    assert (client.normalize_endpoint('https://c.example/accelerator')
            == 'https://c.example/accelerator/v2')
