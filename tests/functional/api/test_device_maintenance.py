"""POST /v2/devices/{uuid}/disable and /enable (Cyborg 2.3, issue 12.3)
and the devices' unavailable_reasons (2.5, issue 18.2).

The last test drives it with the real openstacksdk, as its own device
test does, against the API on a loopback port whose conductor (inproc://
RPC, in this process) publishes to the real Placement."""
import uuid

import openstack
import pytest
import sqlalchemy as sa

from cyborg_lite.api import deploy
from cyborg_lite.db import agents as agents_db
from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.rpc import transport as rpc
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MANAGER_A
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import error_of
from tests.functional.placement import fake_host
from tests.functional.placement.conftest import configure_placement
from tests import servers
from tests import waiting

V = 'OpenStack-API-Version'


def _at(version, headers=ADMIN):
    return dict(headers, **{V: 'accelerator %s' % version})


def _publish_requests():
    with session.reader() as s:
        return list(s.scalars(sa.select(models.PublishRequest.reason)))


def test_disable_and_enable(app, conductor):
    device = fx.add_device()
    url = '/v2/devices/%s' % device.uuid

    resp = app.post(url + '/disable', headers=ADMIN, status=200)

    assert resp.body == b''
    assert app.get(url, headers=_at('2.3')).json['status'] == 'maintaining'
    # Taken away: published before it answers.
    assert conductor.calls == [('publish_hosts', 'admin-project',
                                [device.hostname])]
    assert _publish_requests() == ['device %s maintaining' % device.uuid]
    # Again: nothing changes, nobody is bothered.
    app.post(url + '/disable', headers=ADMIN, status=200)
    assert len(conductor.calls) == 1 and len(_publish_requests()) == 1

    # Given back: a conductor is asked to publish it.
    app.post(url + '/enable', headers=ADMIN, status=200)
    assert app.get(url, headers=_at('2.3')).json['status'] == 'enabled'
    assert conductor.calls[1] == ('publish_requested', 'admin-project')


def test_deleting_the_holder_of_a_shared_function_publishes_it(
        app, conductor):
    from cyborg_lite.conductor import bind
    from tests.unit.conductor import bind_helpers as h
    region0, _ = h.make_card(sriov=False)
    shared = h.make_arq()
    bind.bind_arqs(None, {shared: h.binding(region0)},
                   notifier=h.RecordingNotifier())
    app.delete('/v2/accelerator_requests/%s' % shared, headers=ADMIN,
               status=204)
    # The released region waits for its wipe, and its siblings behind the
    # same PF with it: published before it answers, then wiped.
    assert conductor.calls == [
        ('release', 'admin-project', (['host1'], ['host1']))]
    # An ARQ that held nothing: nobody is bothered.
    asked = len(conductor.calls)
    app.delete('/v2/accelerator_requests/%s' % h.make_arq(),
               headers=ADMIN, status=204)
    assert len(conductor.calls) == asked


def test_only_an_admin_may_disable_or_enable(app):
    device = fx.add_device()
    for action in ('disable', 'enable'):
        for persona in (MANAGER_A, MEMBER_A, fx.ANONYMOUS):
            resp = app.post('/v2/devices/%s/%s' % (device.uuid, action),
                            headers=persona, status=403)
            assert 'cyborg:device:%s' % action in error_of(resp)
    assert devices_db.get_device(device.uuid).status == 'enabled'


@pytest.mark.parametrize('path,status,fragment', [
    ('/v2/devices/5d6a8f0e-6a47-4b5b-9c50-1a2b3c4d5e6f/disable', 404,
     'could not be found'),
    ('/v2/devices/not-a-uuid/enable', 404, 'not-a-uuid'),
])
def test_an_unknown_device_is_404(app, path, status, fragment):
    resp = app.post(path, headers=ADMIN, status=status)
    assert fragment in error_of(resp)


@pytest.mark.parametrize('body', [b'{"status": "enabled"}', b'[]', b'x'])
def test_a_body_is_refused_and_changes_nothing(app, body):
    device = fx.add_device()
    resp = app.post('/v2/devices/%s/disable' % device.uuid, body,
                    headers=dict(ADMIN, **{'Content-Type':
                                           'application/json'}),
                    status=400)
    assert 'takes no body' in error_of(resp)
    assert devices_db.get_device(device.uuid).status == 'enabled'
    # An empty object is tolerated, as no body.
    app.post('/v2/devices/%s/disable' % device.uuid, b'{}',
             headers=dict(ADMIN, **{'Content-Type': 'application/json'}),
             status=200)


def test_reasons_are_shown_from_2_5_only(app):
    device = fx.add_device(hostname='node1', status='maintaining')
    fx.add_device(hostname='node2')
    agents_db.heartbeat('node1')
    with session.writer() as s:
        s.execute(sa.update(models.Agent.__table__).values(state='down'))
    url = '/v2/devices/%s' % device.uuid

    shown = app.get(url, headers=_at('2.5')).json
    assert shown['unavailable_reasons'] == ['maintaining', 'agent_down']
    listed = {d['hostname']: d['unavailable_reasons'] for d in app.get(
        '/v2/devices', headers=_at('latest')).json['devices']}
    assert listed == {'node1': ['maintaining', 'agent_down'], 'node2': []}
    # Older versions keep Cyborg's field set exactly.
    cyborg_fields = {'uuid', 'type', 'vendor', 'model', 'std_board_info',
                     'vendor_board_info', 'hostname', 'links', 'created_at',
                     'updated_at'}
    assert set(app.get(url, headers=_at('2.4')).json) == \
        cyborg_fields | {'status'}
    assert set(app.get(url, headers=_at('2.2')).json) == cyborg_fields


# --- the real openstacksdk, the real Placement --------------------------

@pytest.fixture
def cloud(sqlite_db, api_conf, placement, tmp_path):  # noqa: F811
    """(openstacksdk accelerator proxy at 2.3, the simulated host)."""
    hostname = 'sdk-%s' % uuid.uuid4().hex[:8]
    api_conf.set_override('transport_url', 'inproc://')
    configure_placement(api_conf, placement.endpoint)
    fake_host.configure_card(api_conf, tmp_path / 'fake_fpga', sriov=False)
    host = fake_host.Host(api_conf, placement, hostname)
    host.report()
    conductor = rpc.get_server(rpc.CONDUCTOR_TOPIC, 'cond-sdk',
                               [host.conductor])
    conductor.start()
    with servers.serving(deploy.loadapp(api_conf)) as endpoint:
        # As openstacksdk's own device test sets up its operator cloud.
        sdk = openstack.connection.Connection(
            auth_type='none', auth={'endpoint': endpoint},
            accelerator_endpoint_override=endpoint + '/v2',
            accelerator_default_microversion='2.3').accelerator
        yield sdk, host
    conductor.stop()
    conductor.wait()
    rpc.cleanup()


def _device_inventories(host, device_rp):
    """[(provider name, rc, total, reserved)] of every provider of the
    device: its own and its children's."""
    rps = host.placement.get('/resource_providers?in_tree=%s'
                             % host.root)['resource_providers']
    found = []
    for rp in rps:
        if device_rp not in (rp['uuid'], rp['parent_provider_uuid']):
            continue
        inv = host.placement.get('/resource_providers/%s/inventories'
                                 % rp['uuid'])['inventories']
        found += [(rp['name'], rc, i['total'], i['reserved'])
                  for rc, i in inv.items()]
    return sorted(found)


def _wait_device_status(sdk, device_id, status):
    return waiting.read_until(lambda: sdk.get_device(device_id),
                              lambda d: d.status == status, 30,
                              what='device %s %s' % (device_id, status))


def test_openstacksdk_disables_and_enables_a_device(cloud):
    sdk, host = cloud
    [device] = list(sdk.devices())
    device_rp = devices_db.host_rows(host.hostname).devices[0].rp_uuid
    before = _device_inventories(host, device_rp)
    # Its regions sit behind its PF: the card's own provider offers them.
    assert len(before) == 2 and all(r == 0 for *_, r in before)

    sdk.disable_device(device.id)
    assert _wait_device_status(sdk, device.id, 'maintaining').status == \
        'maintaining'
    # Every provider of the device: nothing left to offer.
    assert waiting.until(lambda: all(
        total == reserved for _, _, total, reserved in
        _device_inventories(host, device_rp)), 30)
    assert host.candidates() == []

    sdk.enable_device(device.id)
    assert _wait_device_status(sdk, device.id, 'enabled').status == 'enabled'
    assert waiting.until(lambda: _device_inventories(host, device_rp) ==
                         before, 30)
