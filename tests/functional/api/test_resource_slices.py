"""GET /v2/resource_slices/{hostname}: the Kubernetes ResourceSlices the
conductor would publish for a host, computed from the database by the
sink's own code; compared with what the sink writes to the
kube-apiserver stand-in."""
from cyborg_lite.kubernetes import sink as sink_mod
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import error_of
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import schemas

V25 = {'OpenStack-API-Version': 'accelerator 2.5'}
V24 = {'OpenStack-API-Version': 'accelerator 2.4'}
DRIVER = 'cyborg-lite.openstack.org'


def _get(app, hostname, caller=ADMIN, version=V25, status=200):
    return app.get('/v2/resource_slices/%s' % hostname,
                   headers=dict(caller, **version), status=status)


def _fpga(hostname='node1', status='enabled'):
    device = fx.add_device(hostname=hostname, identity='0000:5e:00.0',
                           status=status)
    for index in range(2):
        fx.add_deployable(device, name='region%d' % index,
                          attributes=[('rc', 'FPGA')])
    return device


def test_a_hosts_slices_are_valid_and_named_after_its_node(app, conf):
    _fpga()
    body = _get(app, 'node1').json
    assert (body['hostname'], body['node_name'], body['served']) == (
        'node1', 'node1', False)
    (obj,) = body['resource_slices']
    assert schemas.schema_errors(obj) == []
    assert schemas.slice_rule_errors(obj) == []
    assert [d['name'] for d in obj['spec']['devices']] == [
        'fpga-0000-5e-00-0-region0', 'fpga-0000-5e-00-0-region1']
    conf.set_override('hosts', ['node1'], group='kubernetes')
    conf.set_override('node_names', {'node1': 'worker-1'},
                      group='kubernetes')
    body = _get(app, 'node1').json
    assert body['served'] and body['node_name'] == 'worker-1'
    assert body['resource_slices'][0]['spec']['pool']['name'] == 'worker-1'


def test_what_is_shown_is_what_the_sink_writes(app, conf):
    device = _fpga(status='maintaining')
    fx.add_deployable(device, name='region2', attributes=[('rc', 'FPGA')])
    conf.set_override('hosts', ['node1'], group='kubernetes')
    (shown,) = _get(app, 'node1').json['resource_slices']
    assert {t['key'] for d in shown['spec']['devices']
            for t in d['taints']} == {DRIVER + '/maintaining'}
    server = fake_apiserver.FakeKubeApiServer().start()
    client = server.api_client()
    try:
        server.add_node('node1')
        assert sink_mod.KubernetesSink(client, conf).publish('node1').ok
        (written,) = server.slices.values()
    finally:
        client.close()
        server.stop()
    assert written['metadata']['name'] == shown['metadata']['name']
    for device in written['spec']['devices']:
        for taint in device['taints']:
            del taint['timeAdded']          # the apiserver's
    assert written['spec']['devices'] == shown['spec']['devices']
    assert written['spec']['pool']['generation'] == 1
    assert shown['spec']['pool']['generation'] == 0


def test_refusals(app):
    _fpga()
    resp = _get(app, 'node1', version=V24, status=404)
    assert 'resource_slices' in error_of(resp)
    _get(app, 'node1', caller=MEMBER_A, status=403)
    assert 'No device of host nowhere' in error_of(
        _get(app, 'nowhere', status=404))
