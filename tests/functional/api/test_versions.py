"""Version documents, microversion negotiation and routing."""
import microversion_parse
import pytest

from cyborg_lite.api import microversion
from tests.functional.api.conftest import error_of

V = 'OpenStack-API-Version'
NEWEST = microversion.VERSIONS[-1]
PAST_NEWEST = '2.%d' % (microversion.MAX_VERSION.minor + 1)


def test_root_lists_v2_with_microversion_range(app):
    resp = app.get('/', status=200)
    body = resp.json
    assert body['name'] == 'OpenStack Cyborg API'
    [version] = body['versions']
    assert version['id'] == 'v2'
    assert (version['min_version'], version['max_version']) == ('2.0', NEWEST)
    assert version['links'] == [{'href': 'http://localhost/v2',
                                 'rel': 'self'}]
    assert body['default_version'] == version


def test_v2_document(app):
    body = app.get('/v2', status=200).json
    assert body['id'] == 'v2.0'
    assert (body['min_version'], body['max_version']) == ('2.0', NEWEST)


def test_public_endpoint_is_used_in_links(app, api_conf):
    api_conf.set_override('public_endpoint', 'https://cloud/accelerator',
                          group='api')
    body = app.get('/v2', status=200).json
    assert body['links'][0]['href'] == 'https://cloud/accelerator/v2'


@pytest.mark.parametrize('header,expected', [
    (None, '2.0'),
    ('accelerator 2.1', '2.1'),
    ('accelerator latest', NEWEST),
    ('2.2', '2.2'),  # bare version, accepted as Cyborg does
    ('compute 2.90', '2.0'),  # another service's version is not ours
])
def test_negotiated_version_is_echoed(app, header, expected):
    headers = {V: header} if header else {}
    resp = app.get('/v2/devices', headers=headers, status=200)
    assert resp.headers[V] == 'accelerator %s' % expected
    assert resp.headers['OpenStack-API-Minimum-Version'] == '2.0'
    assert resp.headers['OpenStack-API-Maximum-Version'] == NEWEST
    assert resp.headers['Vary'] == V


@pytest.mark.parametrize('header', ['accelerator ' + PAST_NEWEST,
                                    'accelerator 1.0',
                                    'accelerator 3.0', 'accelerator two',
                                    'accelerator 2.1.1'])
def test_unsupported_version_is_406(app, header):
    resp = app.get('/v2/devices', headers={V: header}, status=406)
    assert '2.0' in error_of(resp) and NEWEST in error_of(resp)
    assert resp.headers['OpenStack-API-Maximum-Version'] == NEWEST


# Headers that name no accelerator version: microversion-parse (which Nova
# and Placement use) reads each as absent, and so do we.
NO_VERSION = ['', '   ', 'accelerator', ' accelerator ', 'ACCELERATOR',
              'accelerator,', 'accelerator, compute 2.1', 'compute 2.1',
              'two', 'placement latest']


@pytest.mark.parametrize('header', NO_VERSION)
def test_a_header_naming_no_version_is_the_minimum(app, header):
    # The reference: microversion-parse's own reading of the header.
    assert microversion_parse.get_version({V: header}, 'accelerator') is None
    assert str(microversion_parse.extract_version(
        {V: header}, 'accelerator', microversion.VERSIONS)) == '2.0'
    resp = app.get('/v2/devices', headers={V: header}, status=200)
    assert resp.headers[V] == 'accelerator 2.0'


@pytest.mark.parametrize('header', ['accelerator 2.3', 'compute 2.1, '
                                    'accelerator 2.3', 'accelerator  2.3 ',
                                    'accelerator 2.1, accelerator 2.3'])
def test_a_version_reads_as_microversion_parse_reads_it(app, header):
    expected = str(microversion_parse.extract_version(
        {V: header}, 'accelerator', microversion.VERSIONS))
    assert expected == '2.3'
    resp = app.get('/v2/devices', headers={V: header}, status=200)
    assert resp.headers[V] == 'accelerator ' + expected


def test_path_without_version_goes_to_v2(app):
    assert app.get('/devices', status=200).json == {'devices': []}


def test_unknown_path_is_404_in_cyborg_form(app):
    resp = app.get('/v2/no_such_thing', status=404)
    assert error_of(resp) == 'The resource could not be found.'


def test_known_path_other_method_is_405_with_allow(app):
    resp = app.put('/v2/devices', status=405)
    assert resp.headers['Allow'] == 'GET'
    assert 'PUT' in error_of(resp)


def test_every_response_has_a_request_id(app):
    for resp in (app.get('/v2', status=200),
                 app.get('/v2/nope', status=404)):
        assert resp.headers['x-openstack-request-id'].startswith('req-')
