"""The real clients, unmodified, against the API on a loopback port:
openstacksdk's accelerator proxy, and python-openstackclient with
python-cyborgclient's plugin (its entry point, tests/functional/
in_process.py; test_readme_tour.py runs the ``openstack`` process), all
in this process. The conductor is real too (inproc:// RPC in this
process), so an SDK bind ends Bound."""
import json
import os

import openstack
import pytest

from cyborg_lite.api import deploy
from cyborg_lite.conductor import manager
from cyborg_lite.rpc import transport as rpc
from tests.functional.api import conftest as fx
from tests.functional import in_process
from tests import servers
from tests import waiting


@pytest.fixture
def endpoint(sqlite_db, api_conf):
    api_conf.set_override('transport_url', 'inproc://')
    conductor = rpc.get_server(rpc.CONDUCTOR_TOPIC, 'cond-clients',
                               [manager.ConductorManager('cond-clients')])
    conductor.start()
    with servers.serving(deploy.loadapp(api_conf)) as url:
        yield url
    conductor.stop()
    conductor.wait()
    rpc.cleanup()


@pytest.fixture
def sdk(endpoint):
    # auth_type none: keystoneauth's noauth plugin; the endpoint override
    # is where version discovery starts.
    return openstack.connection.Connection(
        auth_type='none', auth={'endpoint': endpoint},
        accelerator_endpoint_override=endpoint + '/v2').accelerator


def _wait_state(sdk, arq_uuid, wanted, timeout=15.0):
    return waiting.read_until(
        lambda: sdk.get_accelerator_request(arq_uuid),
        lambda arq: arq.state == wanted, timeout,
        what='ARQ %s %s' % (arq_uuid, wanted))


def test_openstacksdk(sdk):
    device = fx.add_device(hostname='host1')
    deployable = fx.add_deployable(device)
    fx.add_handle(deployable, in_use=False)
    assert [d.uuid for d in sdk.devices()] == [device.uuid]
    assert sdk.get_device(device.uuid).hostname == 'host1'
    profile = sdk.create_device_profile(
        name='sdk_dp', groups=[{'resources:FPGA': '1'}], description='d')
    assert sdk.get_device_profile(profile.uuid).name == 'sdk_dp'
    assert [p.name for p in sdk.device_profiles()] == ['sdk_dp']
    arq = sdk.create_accelerator_request(device_profile_name='sdk_dp')
    assert arq.state == 'Initial'
    sdk.update_accelerator_request(arq.uuid, [
        {'path': '/hostname', 'op': 'add', 'value': 'host1'},
        {'path': '/device_rp_uuid', 'op': 'add',
         'value': deployable.rp_uuid},
        {'path': '/instance_uuid', 'op': 'add',
         'value': '8f1e3b52-6d1c-4a3e-9a63-0f1f2c3d4e5f'}])
    bound = _wait_state(sdk, arq.uuid, 'Bound')
    assert bound.attach_handle_type == 'PCI'
    with pytest.raises(openstack.exceptions.ConflictException):
        sdk.delete_device_profile(profile.uuid, ignore_missing=False)
    sdk.delete_accelerator_request(arq.uuid)
    sdk.delete_device_profile(profile.uuid)
    assert list(sdk.device_profiles()) == []


def _osc(endpoint, *args):
    env = dict(os.environ, OS_AUTH_TYPE='none', OS_ENDPOINT=endpoint)
    for key in ('OS_CLOUD', 'OS_AUTH_URL', 'OS_TOKEN'):
        env.pop(key, None)
    rc, stdout, stderr = in_process.run('openstack', args, env)
    assert rc == 0, stderr
    return stdout


def test_openstackclient_with_cyborgclient(endpoint):
    device = fx.add_device(hostname='host9')
    devices = json.loads(_osc(endpoint, 'accelerator', 'device', 'list',
                              '-f', 'json'))
    assert [d['uuid'] for d in devices] == [device.uuid]
    created = json.loads(_osc(
        endpoint, 'accelerator', 'device', 'profile', 'create', 'osc_dp',
        '[{"resources:FPGA": "1", "trait:CUSTOM_FPGA_INTEL": "required"}]',
        '-f', 'json'))
    assert created['name'] == 'osc_dp'
    listed = json.loads(_osc(endpoint, 'accelerator', 'device', 'profile',
                             'list', '-f', 'json'))
    assert [p['uuid'] for p in listed] == [created['uuid']]
    shown = json.loads(_osc(endpoint, '--os-accelerator-api-version', '2.2',
                            'accelerator', 'device', 'profile', 'show',
                            'osc_dp', '-f', 'json'))
    assert shown['uuid'] == created['uuid']
    arq = json.loads(_osc(endpoint, 'accelerator', 'arq', 'create',
                          'osc_dp', '-f', 'json'))
    assert arq['state'] == 'Initial'
    arqs = json.loads(_osc(endpoint, 'accelerator', 'arq', 'list',
                           '-f', 'json'))
    assert [a['uuid'] for a in arqs] == [arq['uuid']]
    _osc(endpoint, 'accelerator', 'arq', 'delete', arq['uuid'])
    _osc(endpoint, 'accelerator', 'device', 'profile', 'delete',
         created['uuid'])
    assert json.loads(_osc(endpoint, 'accelerator', 'device', 'profile',
                           'list', '-f', 'json')) == []
