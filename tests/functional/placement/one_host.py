"""One host's services in process, for the end-to-end tests that drive
them the way Nova does: the conductor, an agent with the driver under
test, and the API (noauth, webtest), over ``inproc://`` and the real
Placement; and the headers those tests send."""
import contextlib

import requests
import webtest

from tests import waiting

from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.api import deploy
from cyborg_lite.cmd import placement_server
from cyborg_lite.conductor import service as conductor_service
from cyborg_lite.rpc import transport as rpc
from tests.functional.placement.conftest import configure_placement

PLACEMENT = {'X-Auth-Token': placement_server.TOKEN,
             'OpenStack-API-Version': 'placement 1.39'}
MEMBER = {'X-Roles': 'member,reader', 'X-Project-Id': 'tenant-1',
          'X-User-Id': 'alice'}
ADMIN = {'X-Roles': 'admin', 'X-Project-Id': 'admin-project'}
ACCEL = {'OpenStack-API-Version': 'accelerator 2.3'}


def configure(conf, placement):
    """What every such test sets before its driver's options."""
    conf.set_override('transport_url', 'inproc://')
    conf.set_override('auth_strategy', 'noauth', group='api')
    conf.set_override('report_interval', 3600, group='agent')
    configure_placement(conf, placement.endpoint)


@contextlib.contextmanager
def serving(conf, hostname, driver, conductor_host):
    """The API's webtest app while a conductor and ``hostname``'s agent
    with ``driver`` run; stopped after."""
    conductor = conductor_service.ConductorService(conf, host=conductor_host)
    agent = agent_manager.AgentManager(conf, host=hostname, drivers=[driver])
    conductor.start()
    agent.start()
    try:
        yield webtest.TestApp(deploy.loadapp(conf))
    finally:
        agent.stop()
        conductor.stop()
        rpc.cleanup()


def placement_get(server, path, **params):
    resp = requests.get(server.endpoint + path, headers=PLACEMENT,
                        params=params, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()


def bind_as_nova(app, headers, profile_name, hostname, rp_uuid, instance,
                 timeout=60):
    """Nova's conductor: create the ARQ of ``profile_name`` and bind it
    to the provider its scheduler allocated for ``instance``; the ARQ as
    the API shows it once Bound or BindFailed."""
    [arq] = app.post_json('/v2/accelerator_requests',
                          {'device_profile_name': profile_name},
                          headers=headers, status=201).json['arqs']
    app.patch_json('/v2/accelerator_requests', {arq['uuid']: [
        {'op': 'add', 'path': '/hostname', 'value': hostname},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}]},
        headers=headers, status=202)
    return waiting.read_until(
        lambda: app.get('/v2/accelerator_requests/' + arq['uuid'],
                        headers=headers).json,
        lambda a: a['state'] in ('Bound', 'BindFailed'), timeout=timeout,
        what='the ARQ bound')
