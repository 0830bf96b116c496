"""PATCH bind/unbind end to end: the API casts over a real oslo.messaging
inproc:// transport to the real ConductorManager, whose bind workflow moves
the ARQ to Bound with an attach handle, and back on unbind."""

import pytest
import webtest

from cyborg_lite.api import deploy
from cyborg_lite.conductor import manager
from cyborg_lite.rpc import transport as rpc
from tests import waiting
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MEMBER_A

PATH = '/v2/accelerator_requests'
INSTANCE = '8f1e3b52-6d1c-4a3e-9a63-0f1f2c3d4e5f'


@pytest.fixture
def real_app(sqlite_db, api_conf):
    api_conf.set_override('transport_url', 'inproc://')
    server = rpc.get_server(rpc.CONDUCTOR_TOPIC, 'cond-api-test',
                            [manager.ConductorManager('cond-api-test')])
    server.start()
    yield webtest.TestApp(deploy.loadapp(api_conf))
    server.stop()
    server.wait()
    rpc.cleanup()


def _state_becomes(app, arq_uuid, wanted, timeout=15.0):
    return waiting.read_until(
        lambda: app.get('%s/%s' % (PATH, arq_uuid), headers=MEMBER_A).json,
        lambda arq: arq['state'] == wanted, timeout,
        what='ARQ %s %s' % (arq_uuid, wanted))


def test_bind_then_unbind_through_the_conductor(real_app):
    device = fx.add_device(hostname='host1')
    deployable = fx.add_deployable(device)
    fx.add_handle(deployable, in_use=False)
    fx.create_profile(real_app, ADMIN, groups=[{'resources:FPGA': '1'}])
    arq = fx.create_arqs(real_app, MEMBER_A).json['arqs'][0]
    ops = [{'op': 'add', 'path': '/hostname', 'value': 'host1'},
           {'op': 'add', 'path': '/device_rp_uuid',
            'value': deployable.rp_uuid},
           {'op': 'add', 'path': '/instance_uuid', 'value': INSTANCE}]
    # A member's request, as Nova sends it on with its service token.
    real_app.patch_json(PATH, {arq['uuid']: ops}, headers=dict(
        MEMBER_A, **{'X-Service-Roles': 'service'}), status=202)
    bound = _state_becomes(real_app, arq['uuid'], 'Bound')
    assert bound['instance_uuid'] == INSTANCE
    assert bound['attach_handle_type'] == 'PCI'
    unbind = [{'op': 'remove', 'path': p} for p in
              ('/hostname', '/device_rp_uuid', '/instance_uuid')]
    real_app.patch_json(PATH, {arq['uuid']: unbind}, headers=MEMBER_A,
                        status=202)
    unbound = _state_becomes(real_app, arq['uuid'], 'Unbound')
    assert unbound['attach_handle_uuid'] is None
