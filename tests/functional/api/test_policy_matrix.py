"""Who may do what: admin, manager/member of project A, member of project
B, anonymous (no roles: 403 under noauth; no token: 401 under keystone)."""
import pytest
import webtest

from cyborg_lite.api import deploy
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import ANONYMOUS
from tests.functional.api.conftest import MANAGER_A
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import MEMBER_B
from tests.functional.api.conftest import error_of

PERSONAS = {'admin': ADMIN, 'manager_a': MANAGER_A, 'member_a': MEMBER_A,
            'member_b': MEMBER_B, 'anonymous': ANONYMOUS}


@pytest.fixture
def world(app):
    """A device, an attribute, a public profile, project A's profile and
    an ARQ of project A."""
    dep = fx.add_deployable(fx.add_device(), attributes=[('rc', 'FPGA')])
    attr = app.get('/v2/attributes', headers=ADMIN).json['attributes'][0]
    fx.create_profile(app, ADMIN, name='public')
    fx.create_profile(app, MEMBER_A, name='private_a')
    arq = fx.create_arqs(app, MEMBER_A, name='private_a').json['arqs'][0]
    return {'device': dep.device_id, 'deployable': dep.uuid,
            'attribute': attr['uuid'], 'arq': arq['uuid'],
            'device_uuid': app.get('/v2/devices', headers=ADMIN)
            .json['devices'][0]['uuid']}


# (method, path template, {persona: expected status})
READS = [
    ('GET', '/v2/devices', dict(admin=200, manager_a=200, member_a=403,
                                member_b=403, anonymous=403)),
    ('GET', '/v2/devices/{device_uuid}', dict(admin=200, manager_a=200,
                                              member_a=403, member_b=403,
                                              anonymous=403)),
    ('GET', '/v2/deployables', dict(admin=200, manager_a=200, member_a=403,
                                    member_b=403, anonymous=403)),
    ('GET', '/v2/deployables/{deployable}', dict(admin=200, manager_a=200,
                                                 member_a=403, member_b=403,
                                                 anonymous=403)),
    ('GET', '/v2/attributes', dict(admin=200, manager_a=200, member_a=403,
                                   member_b=403, anonymous=403)),
    ('GET', '/v2/attributes/{attribute}', dict(admin=200, manager_a=200,
                                               member_a=403, member_b=403,
                                               anonymous=403)),
    ('GET', '/v2/device_profiles', dict(admin=200, member_a=200,
                                        member_b=200, anonymous=403)),
    ('GET', '/v2/device_profiles/public', dict(admin=200, member_a=200,
                                               member_b=200, anonymous=403)),
    ('GET', '/v2/device_profiles/private_a', dict(admin=200, member_a=200,
                                                  member_b=404,
                                                  anonymous=403)),
    ('GET', '/v2/accelerator_requests', dict(admin=200, member_a=200,
                                             member_b=200, anonymous=403)),
    ('GET', '/v2/accelerator_requests/{arq}', dict(admin=200, member_a=200,
                                                   member_b=404,
                                                   anonymous=404)),
]


@pytest.mark.parametrize('method,template,expected', READS)
def test_reads(app, world, method, template, expected):
    path = template.format(**world)
    for persona, status in expected.items():
        headers = dict(PERSONAS[persona],
                       **{'OpenStack-API-Version': 'accelerator latest'})
        resp = app.request(path, method=method, headers=headers,
                           expect_errors=True)
        assert resp.status_int == status, (persona, resp.text)
        if status >= 400:
            assert error_of(resp)


def test_lists_show_only_what_the_caller_may_see(app, world):
    def names(headers):
        return sorted(p['name'] for p in app.get(
            '/v2/device_profiles', headers=headers).json['device_profiles'])
    assert names(ADMIN) == ['private_a', 'public']
    assert names(MEMBER_A) == ['private_a', 'public']
    assert names(MEMBER_B) == ['public']

    def arqs(headers):
        return [a['uuid'] for a in app.get(
            '/v2/accelerator_requests', headers=headers).json['arqs']]
    assert arqs(ADMIN) == arqs(MEMBER_A) == [world['arq']]
    assert arqs(MEMBER_B) == []


def test_attribute_writes_are_admin_only(app, world):
    body = {'deployable_id': 1, 'key': 'trait9', 'value': 'CUSTOM_Z'}
    for headers in (MANAGER_A, MEMBER_A, ANONYMOUS):
        app.post_json('/v2/attributes', body, headers=headers, status=403)
        app.delete('/v2/attributes/%s' % world['attribute'],
                   headers=headers, status=403)
    app.delete('/v2/attributes/%s' % world['attribute'], headers=ADMIN,
               status=204)


def test_profiles_members_own_theirs_admins_own_public(app, world):
    created = fx.create_profile(app, MEMBER_B, name='private_b').json
    assert created['project_id'] == 'project-b'
    fx.create_profile(app, ANONYMOUS, name='anon', status=403)
    # B can neither see A's profile nor delete the public one.
    app.delete('/v2/device_profiles/private_a', headers=MEMBER_B,
               status=404)
    resp = app.delete('/v2/device_profiles/public', headers=MEMBER_B,
                      status=403)
    assert 'cyborg:device_profile:delete' in error_of(resp)
    app.delete('/v2/device_profiles/private_b', headers=MEMBER_B,
               status=204)
    app.delete('/v2/device_profiles/public', headers=ADMIN, status=204)


def test_arqs_belong_to_their_project(app, world):
    arq = world['arq']
    # B sees no ARQ of A, so every action on it is a 404 for B.
    app.delete('/v2/accelerator_requests?arqs=%s' % arq, headers=MEMBER_B,
               status=404)
    unbind = [{'op': 'remove', 'path': '/hostname'}]
    app.patch_json('/v2/accelerator_requests', {arq: unbind},
                   headers=MEMBER_B, status=404)
    # B cannot create ARQs from A's private profile.
    fx.create_arqs(app, MEMBER_B, name='private_a', status=404)
    fx.create_arqs(app, ANONYMOUS, name='public', status=403)
    app.patch_json('/v2/accelerator_requests', {arq: unbind},
                   headers=ANONYMOUS, status=403)
    app.delete('/v2/accelerator_requests?arqs=%s' % arq, headers=ANONYMOUS,
               status=403)
    app.delete('/v2/accelerator_requests?arqs=%s' % arq, headers=MEMBER_A,
               status=204)


@pytest.fixture
def keystone_app(sqlite_db, api_conf):
    api_conf.set_override('auth_strategy', 'keystone', group='api')
    api_conf.set_override('www_authenticate_uri', 'http://127.0.0.1:1/v3',
                          group='keystone_authtoken')
    return webtest.TestApp(deploy.loadapp(api_conf))


def test_keystone_without_a_token_is_401(keystone_app):
    resp = keystone_app.get('/v2/devices', headers=ADMIN, status=401)
    assert error_of(resp)
    assert 'Keystone' in resp.headers.get('WWW-Authenticate', '')


def test_keystone_version_documents_are_public(keystone_app):
    assert keystone_app.get('/', status=200).json['versions']
    assert keystone_app.get('/v2', status=200).json['id'] == 'v2.0'
