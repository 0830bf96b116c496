"""A service (Nova) acts on the ARQs of every project, as the default
policy says: the handlers look ARQs up in every project for a caller whom
the policy lets act whatever the project, not in the caller's own one.

Under noauth (identity headers), and behind the real keystonemiddleware
validating tokens with a stand-in Keystone."""
import json
import uuid

import pytest
import webtest

from cyborg_lite.api import deploy
from cyborg_lite.api import policy
from tests.functional.all_in_one import keystone_standin
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import MEMBER_B

ARQS = '/v2/accelerator_requests'
# Nova's service user: the service role, in a project of its own.
NOVA = {'X-Roles': 'service', 'X-Project-Id': 'service-project',
        'X-User-Id': 'nova'}


def _bind_ops(instance, rp='a1b2c3d4-0000-4000-8000-000000000001'):
    return [{'op': 'add', 'path': '/hostname', 'value': 'compute1'},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': rp},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]


UNBIND = [{'op': 'remove', 'path': p}
          for p in ('/hostname', '/device_rp_uuid', '/instance_uuid')]


def _nova_lifecycle(app, member, nova, conductor):
    """Member creates; Nova reads, binds, unbinds, deletes. Returns the
    statuses Nova got, in order."""
    fx.create_profile(app, member, name='nic')
    arq, other, third = (fx.create_arqs(app, member, name='nic')
                         .json['arqs'][0]['uuid'] for _ in range(3))
    instance = str(uuid.uuid4())
    statuses = []

    def call(method, path, body=None):
        kwargs = {} if body is None else {
            'body': json.dumps(body).encode(),
            'content_type': 'application/json'}
        resp = app.request(path, method=method, headers=nova,
                           expect_errors=True, **kwargs)
        statuses.append((method, path.split('?')[0], resp.status_int))
        return resp

    assert call('GET', '%s/%s' % (ARQS, arq)).json['uuid'] == arq
    call('PATCH', ARQS, {arq: _bind_ops(instance)})
    listed = call('GET', '%s?instance=%s' % (ARQS, instance))
    assert [a['uuid'] for a in listed.json['arqs']] == [arq]
    call('PATCH', '%s/%s' % (ARQS, arq), {arq: UNBIND})
    # Unbound, it belongs to no instance any more: a teardown by instance
    # finds nothing, and Nova deletes it by uuid.
    call('DELETE', '%s?instance=%s' % (ARQS, instance))
    call('DELETE', '%s?arqs=%s,%s' % (ARQS, arq, other))
    call('DELETE', '%s/%s' % (ARQS, third))
    assert [c[0] for c in conductor.calls] == ['bind_arqs']
    return statuses


EXPECTED = [('GET', ARQS + '/', 200), ('PATCH', ARQS, 202),
            ('GET', ARQS, 200), ('PATCH', ARQS + '/', 202),
            ('DELETE', ARQS, 204), ('DELETE', ARQS, 204),
            ('DELETE', ARQS + '/', 204)]


def _normalised(statuses):
    # The uuid in a path is not part of what is compared.
    return [(m, p if p == ARQS else ARQS + '/', s) for m, p, s in statuses]


def test_a_service_role_of_another_project_acts_on_a_members_arqs(
        app, conductor):
    statuses = _nova_lifecycle(app, MEMBER_A, NOVA, conductor)
    assert _normalised(statuses) == EXPECTED
    assert app.get(ARQS, headers=MEMBER_A).json['arqs'] == []


def test_a_service_role_lists_every_projects_arqs(app):
    fx.create_profile(app, ADMIN, name='public')
    mine = fx.create_arqs(app, MEMBER_A, name='public').json['arqs']
    theirs = fx.create_arqs(app, MEMBER_B, name='public').json['arqs']
    listed = {a['uuid'] for a in app.get(ARQS, headers=NOVA).json['arqs']}
    assert listed == {a['uuid'] for a in mine + theirs}
    # A member still sees its own project's only.
    assert [a['uuid'] for a in app.get(ARQS, headers=MEMBER_B)
            .json['arqs']] == [theirs[0]['uuid']]


def test_without_the_service_role_another_project_finds_nothing(app):
    fx.create_profile(app, MEMBER_A, name='nic')
    arq = fx.create_arqs(app, MEMBER_A, name='nic').json['arqs'][0]['uuid']
    app.get('%s/%s' % (ARQS, arq), headers=MEMBER_B, status=404)
    app.patch_json(ARQS, {arq: _bind_ops(str(uuid.uuid4()))},
                   headers=MEMBER_B, status=404)
    app.delete('%s?arqs=%s' % (ARQS, arq), headers=MEMBER_B, status=404)


def test_the_scope_follows_the_policy_file(app, api_conf, tmp_path):
    # An operator who does not let services read ARQs: Nova's token then
    # finds only its own project's, as any project member would.
    rules = tmp_path / 'policy.yaml'
    rules.write_text('"cyborg:arq:get_one": "rule:project_reader_or_admin"\n')
    api_conf.set_override('policy_file', str(rules), group='oslo_policy')
    policy.reset()
    fx.create_profile(app, MEMBER_A, name='nic')
    arq = fx.create_arqs(app, MEMBER_A, name='nic').json['arqs'][0]['uuid']
    app.get('%s/%s' % (ARQS, arq), headers=NOVA, status=404)
    app.get('%s/%s' % (ARQS, arq), headers=MEMBER_A, status=200)
    app.delete('%s/%s' % (ARQS, arq), headers=NOVA, status=204)


# --- behind keystonemiddleware --------------------------------------------

@pytest.fixture
def keystone():
    standin = keystone_standin.KeystoneStandIn(users={
        'alice-token': ['member', 'reader'],
        'nova-token': ['service']}).start()
    yield standin
    standin.stop()


@pytest.fixture
def keystone_app(sqlite_db, api_conf, conductor, keystone):
    fx.configure_keystone(api_conf, keystone.url)
    return webtest.TestApp(deploy.loadapp(
        api_conf, conductor_factory=lambda: conductor))


def test_novas_service_token_from_its_own_project_through_keystone(
        keystone_app, conductor, keystone):
    alice = {'X-Auth-Token': 'alice-token'}
    nova = {'X-Auth-Token': 'nova-token'}
    statuses = _nova_lifecycle(keystone_app, alice, nova, conductor)
    assert _normalised(statuses) == EXPECTED
    # The middleware really asked Keystone about both tokens, which are
    # of two projects.
    asked = {subject for _, path, subject in keystone.requests
             if path == '/v3/auth/tokens' and subject}
    assert {'alice-token', 'nova-token'} <= asked
    assert conductor.calls[0][1] == 'p-nova-token'
