"""The API behind a real Keystone (tests/real_keystone.py): keystonemiddleware
validating Keystone's own fernet tokens, the policy reading the roles
Keystone puts in them (implied ones too), and the real clients finding
the API in Keystone's catalog, as in a deployment.

The catalog holds the API as devstack registers Cyborg's:
``accelerator`` at the ``/v2`` URL. The conductor is real (inproc://
RPC), so a bind ends Bound.
"""
import json
import os
import subprocess
import sys

import openstack
import pytest
import requests
from keystonemiddleware.auth_token import _request as ks_request

from cyborg_lite.api import deploy
from cyborg_lite.conductor import manager
from cyborg_lite.rpc import transport as rpc
from tests import nova
from tests import real_keystone as ks
from tests import servers
from tests import waiting
from tests.functional.api import conftest as fx

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('keystone')]

BIN = os.path.dirname(sys.executable)
HEADERS = {'OpenStack-API-Version': 'accelerator 2.3'}
INSTANCE = '8f1e3b52-6d1c-4a3e-9a63-0f1f2c3d4e5f'


@pytest.fixture
def endpoint(keystone, sqlite_db, api_conf):
    """The API's base URL, in the catalog as ``accelerator``."""
    fx.configure_keystone(api_conf, keystone.url)
    conductor = rpc.get_server(rpc.CONDUCTOR_TOPIC, 'cond-keystone',
                               [manager.ConductorManager('cond-keystone')])
    conductor.start()
    try:
        with servers.serving(deploy.loadapp(api_conf)) as url:
            keystone.set_endpoint('accelerator', url + '/v2')
            yield url
    finally:
        conductor.stop()
        conductor.wait()
        rpc.cleanup()


def _sdk(keystone, user, project=None, **scope):
    """openstacksdk's accelerator proxy, logged in to the real Keystone;
    the endpoint comes from the token's catalog."""
    return openstack.connection.Connection(
        **keystone.auth(user, project, **scope)).accelerator


def _region(hostname):
    device = fx.add_device(hostname=hostname)
    deployable = fx.add_deployable(device)
    fx.add_handle(deployable, in_use=False)
    return device, deployable


def test_members_readers_and_other_projects(keystone, endpoint):
    alice = _sdk(keystone, 'alice', 'project-a')
    profile = alice.create_device_profile(
        name='ks_dp', groups=[{'resources:FPGA': '1'}])
    arq = alice.create_accelerator_request(device_profile_name='ks_dp')
    assert arq.state == 'Initial'
    assert [a.uuid for a in alice.accelerator_requests()] == [arq.uuid]

    # A reader of the project reads, and may not create.
    rita = _sdk(keystone, 'rita', 'project-a')
    assert rita.get_accelerator_request(arq.uuid).uuid == arq.uuid
    with pytest.raises(openstack.exceptions.ForbiddenException):
        rita.create_accelerator_request(device_profile_name='ks_dp')

    # Another project's member sees nothing of project-a.
    bob = _sdk(keystone, 'bob', 'project-b')
    assert list(bob.accelerator_requests()) == []
    with pytest.raises(openstack.exceptions.NotFoundException):
        bob.get_accelerator_request(arq.uuid)
    with pytest.raises(openstack.exceptions.NotFoundException):
        bob.delete_accelerator_request(arq.uuid, ignore_missing=False)

    # Devices: a project manager or the admin (whose token carries the
    # roles Keystone's admin implies).
    device, _ = _region('host-ks')
    with pytest.raises(openstack.exceptions.ForbiddenException):
        list(alice.devices())
    assert [d.uuid for d in _sdk(keystone, 'anne', 'project-a').devices()] \
        == [device.uuid]
    admin = _sdk(keystone, 'admin', 'admin')
    assert admin.get_accelerator_request(arq.uuid).uuid == arq.uuid

    alice.delete_accelerator_request(arq.uuid)
    alice.delete_device_profile(profile.uuid)
    assert list(alice.device_profiles()) == []


def test_tokens_keystone_refuses_are_refused(keystone, endpoint):
    arqs = endpoint + '/v2/accelerator_requests'

    def get(token=None):
        headers = dict(HEADERS)
        if token is not None:
            headers['X-Auth-Token'] = token
        return requests.get(arqs, headers=headers, timeout=30)

    resp = get()
    assert resp.status_code == 401
    assert keystone.auth_url in resp.headers['WWW-Authenticate']
    assert 'error_message' in resp.json()
    assert get('gAAAAAB-not-a-fernet-token').status_code == 401

    token = keystone.token('alice', 'project-a')
    keystone.revoke(token)
    assert get(token).status_code == 401

    # Keystone's real token for the same user is accepted.
    resp = get(keystone.token('alice', 'project-a'))
    assert resp.status_code == 200, resp.text
    assert resp.json() == {'arqs': []}


def test_a_system_scoped_token_is_refused_project_operations(keystone,
                                                             endpoint):
    # Every rule is for project-scoped tokens (scope_types): the cloud
    # admin's system-scoped token gets a clear 403, not someone's data.
    token = keystone.token('admin', system_scope='all')
    resp = requests.get(endpoint + '/v2/accelerator_requests',
                        headers=dict(HEADERS, **{'X-Auth-Token': token}),
                        timeout=30)
    assert resp.status_code == 403, resp.text
    fault = json.loads(resp.json()['error_message'])
    assert 'cyborg:arq:get_all' in fault['faultstring']


def test_nova_binds_a_members_arq_with_its_service_token(keystone,
                                                         endpoint):
    _, deployable = _region('host-nova')
    alice = _sdk(keystone, 'alice', 'project-a')
    alice.create_device_profile(name='nova_dp',
                                groups=[{'resources:FPGA': '1'}])
    arq = alice.create_accelerator_request(device_profile_name='nova_dp')
    # Nova's service user acts on the member's ARQ (service role).
    nova = _sdk(keystone, 'nova', 'service')
    nova.update_accelerator_request(arq.uuid, [
        {'path': '/hostname', 'op': 'add', 'value': 'host-nova'},
        {'path': '/device_rp_uuid', 'op': 'add',
         'value': deployable.rp_uuid},
        {'path': '/instance_uuid', 'op': 'add', 'value': INSTANCE}])
    bound = waiting.read_until(
        lambda: alice.get_accelerator_request(arq.uuid),
        lambda a: a.state in ('Bound', 'BindFailed'), 30,
        what='ARQ %s bound' % arq.uuid)
    assert bound.state == 'Bound'
    assert bound.instance_uuid == INSTANCE
    nova.delete_accelerator_request(arq.uuid)
    assert list(alice.accelerator_requests()) == []


def _cli(keystone, *argv):
    """A console script of our venv, logged in with the OS_* variables of
    an admin openrc; its JSON output."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith('OS_') and k != 'CYBORG_LITE_URL'}
    env.update({'OS_' + name.upper(): value for name, value in
                keystone.password_options('admin', 'admin').items()},
               OS_IDENTITY_API_VERSION='3', OS_REGION_NAME=ks.REGION)
    proc = subprocess.run([os.path.join(BIN, argv[0])] + list(argv[1:]),
                          capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_clis_find_the_api_in_the_catalog(keystone, endpoint):
    device, _ = _region('host-osc')
    # python-cyborgclient's plugin, our own plugin, our own CLI.
    assert [d['uuid'] for d in _cli(keystone, 'openstack', 'accelerator',
                                    'device', 'list', '-f', 'json')] \
        == [device.uuid]
    assert _cli(keystone, 'openstack', 'accelerator', 'bitstream', 'list',
                '-f', 'json') == []
    assert [d['uuid'] for d in _cli(keystone, 'cyborg-lite', 'device',
                                    'list', '-f', 'json')] == [device.uuid]


# Nova's conductor and compute manager, as nova 34 drives Cyborg: the
# user's token from the request context, Nova's own service token beside
# it ([service_user]), the endpoint from the context's catalog.
NOVA_CYBORG_CLIENT = '''
import json, sys, time
payload = json.load(sys.stdin)
from nova import config, context, objects
config.parse_args(['nova', '--config-file', payload['conf']],
                  configure_db=False, init_rpc=False)
objects.register_all()
from nova.accelerator import cyborg
ctx = context.RequestContext(
    user_id=payload['user_id'], project_id=payload['project_id'],
    roles=payload['roles'], auth_token=payload['token'],
    service_catalog=payload['catalog'])
client = cyborg.get_client(ctx)
dp, instance = payload['profile'], payload['instance']
groups = client.get_device_profile_groups(dp)
request_groups = client.get_device_request_groups(groups, owner=None)
arqs = client.create_arqs_and_match_resource_providers(
    dp, {rg.requester_id: [payload['rp_uuid']] for rg in request_groups})
client.bind_arqs({arq['uuid']: {
    'hostname': payload['hostname'], 'instance_uuid': instance,
    'device_rp_uuid': arq['device_rp_uuid']} for arq in arqs})
deadline = time.monotonic() + 30
resolved = []
while len(resolved) < len(arqs) and time.monotonic() < deadline:
    resolved = client.get_arqs_for_instance(instance, only_resolved=True)
    time.sleep(0.05)
shown = client.get_arq_by_uuid(arqs[0]['uuid'])
spare = client.create_arqs(dp)
client.delete_arqs_by_uuid([arq['uuid'] for arq in spare])
client.delete_arqs_for_instance(instance)
try:
    left = client.get_arqs_for_instance(instance)
except Exception as exc:  # Nova raises when none are left
    left = '%s: %s' % (type(exc).__name__, exc)
print(json.dumps({
    'requester_ids': [rg.requester_id for rg in request_groups],
    'resources': [rg.resources for rg in request_groups],
    'created': arqs, 'resolved': resolved, 'shown': shown, 'left': left}))
'''


def test_novas_own_cyborg_client_with_user_and_service_tokens(
        keystone, endpoint, tmp_path):
    _, deployable = _region('host-nova-code')
    alice = _sdk(keystone, 'alice', 'project-a')
    alice.create_device_profile(name='nova_code_dp', groups=[
        {'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required'}])
    conf = tmp_path / 'nova.conf'
    conf.write_text(ks.ini({
        'cyborg': {'region_name': ks.REGION},
        'service_user': dict(keystone.password_options('nova', 'service'),
                             send_service_user_token='true')}))
    access = keystone.login('alice', 'project-a')
    got = nova.run(NOVA_CYBORG_CLIENT, {
        'conf': str(conf), 'user_id': access.user_id,
        'project_id': access.project_id, 'roles': access.role_names,
        'token': access.auth_token,
        # What keystonemiddleware hands nova-api (X-Service-Catalog).
        'catalog': ks_request._normalize_catalog(
            access.service_catalog.catalog),
        'profile': 'nova_code_dp', 'instance': INSTANCE,
        'hostname': 'host-nova-code', 'rp_uuid': deployable.rp_uuid})
    assert got['requester_ids'] == ['device_profile_0']
    assert got['resources'] == [{'FPGA': 1}]
    [created] = got['created']
    assert created['state'] == 'Initial'
    [resolved] = got['resolved']
    assert resolved['uuid'] == created['uuid']
    assert resolved['state'] == 'Bound'
    assert resolved['device_rp_uuid'] == deployable.rp_uuid
    assert resolved['instance_uuid'] == INSTANCE
    assert got['shown']['uuid'] == created['uuid']
    assert got['left'].startswith('AcceleratorRequestOpFailed: ')
    assert 'no accelerator requests' in got['left']
    assert list(alice.accelerator_requests()) == []
