"""The kubelet plugin's parts: claim config, allocation reading, device
answers, the state file, CDI files and the [kubernetes] options."""
import json
import os
import uuid

import pytest

from cyborg_lite.agent.dra import cdi
from cyborg_lite.kubernetes import claim_config
from cyborg_lite.agent.dra import claims
from cyborg_lite.agent.dra import device_api
from cyborg_lite.agent.dra import server
from cyborg_lite.agent.dra import service
from cyborg_lite.agent.dra import state
from cyborg_lite.common import exception
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import resource_claims as rc

DRIVER = rc.DRIVER
BITSTREAM = '1c5b5e0c-3d0a-4b8e-9f3c-2a7d6c1e0b9f'


def _params(**fields):
    return dict({'apiVersion': DRIVER + '/v1alpha1', 'kind': 'FpgaConfig'},
                **fields)


def test_config_by_bitstream_or_function():
    assert claim_config.parse(_params(bitstreamID=BITSTREAM.upper()),
                              DRIVER) == claim_config.FpgaConfig(
        bitstream_id=BITSTREAM)
    assert claim_config.parse(_params(functionID='d8424dc4', force=True),
                              DRIVER) == claim_config.FpgaConfig(
        function_id='d8424dc4', force=True)


@pytest.mark.parametrize('parameters', [
    None, [], _params(), _params(bitstreamID=BITSTREAM, functionID='a'),
    _params(bitstreamID='1c5b5e0c3d0a4b8e9f3c2a7d6c1e0b9f'),
    _params(bitstreamID=7), _params(functionID=''),
    _params(functionID='a' * 65), _params(functionID='a b'),
    _params(functionID='a\n'), _params(functionID='a', force=1),
    _params(functionID='a', extra=1),
    dict(_params(functionID='a'), apiVersion='other.io/v1alpha1'),
    dict(_params(functionID='a'), kind='GpuConfig'),
])
def test_bad_config_is_refused(parameters):
    with pytest.raises(claim_config.ConfigError):
        claim_config.parse(parameters, DRIVER)


def test_config_applies_by_request_and_subrequest_and_validates_all():
    by_function = rc.fpga_config(['a'], functionID='aa')
    for_all = rc.fpga_config(source='FromClass', functionID='bb')
    config = [by_function, for_all]        # class entries sort first
    assert claim_config.for_request(config, 'a', DRIVER).function_id == 'aa'
    assert claim_config.for_request(config, 'a/small',
                                    DRIVER).function_id == 'aa'
    assert claim_config.for_request(config, 'b', DRIVER).function_id == 'bb'
    other_driver = {'source': 'FromClaim', 'opaque': {
        'driver': 'other.io', 'parameters': {'anything': 1}}}
    assert claim_config.for_request([other_driver], 'a', DRIVER) is None
    broken = rc.fpga_config(['z'], functionID='a b')
    with pytest.raises(claim_config.ConfigError):
        claim_config.for_request([by_function, broken], 'a', DRIVER)


def test_allocated_devices_reads_our_results_only():
    claim = rc.allocated_claim('c', [('a', 'dev-a'), ('b/x', 'dev-b')],
                               config=[rc.fpga_config(['b'],
                                                      functionID='ff')])
    claim['status']['allocation']['devices']['results'].append(
        {'request': 'a', 'driver': 'gpu.example.com', 'pool': 'elsewhere',
         'device': 'gpu-0'})
    ref = claims.ClaimRef('default', 'c', claim['metadata']['uid'])
    devices = claims.allocated_devices(claim, ref, DRIVER, 'node-1')
    assert [(d.request, d.base_request, d.device) for d in devices] == [
        ('a', 'a', 'dev-a'), ('b/x', 'b', 'dev-b')]
    assert devices[0].config is None
    assert devices[1].config.function_id == 'ff'


def test_the_pods_a_claim_is_reserved_for_are_read_whole():
    claim = rc.allocated_claim('c', [('a', 'dev-a')],
                               pods=('trainer-0', 'trainer-1'))
    # A consumer that is not a core pod is not a pod.
    claim['status']['reservedFor'].append(
        {'apiGroup': 'batch', 'resource': 'jobs', 'name': 'nightly',
         'uid': '0b7a3c5e-1b2d-4e6f-8a9b-0c1d2e3f4a5b'})
    ref = claims.ClaimRef('default', 'c', claim['metadata']['uid'])
    assert claims.pods_of(claim, ref) == ('trainer-0', 'trainer-1')
    assert claims.pods_of(rc.allocated_claim('d', [('a', 'x')]), ref) == ()


@pytest.mark.parametrize('reserved_for', [
    [{'resource': 'pods', 'name': 'Trainer_0', 'uid': 'u'}],
    [{'resource': 'pods', 'name': 'trainer-0\n', 'uid': 'u'}],
    [{'resource': 'pods', 'name': 7, 'uid': 'u'}],
    [{'resource': 'pods', 'name': 'p%d' % i, 'uid': 'u'}
     for i in range(257)],
    {'resource': 'pods'},
])
def test_a_reserved_for_that_names_no_pod_refuses_the_claim(reserved_for):
    claim = rc.allocated_claim('c', [('a', 'dev-a')])
    claim['status']['reservedFor'] = reserved_for
    ref = claims.ClaimRef('default', 'c', claim['metadata']['uid'])
    with pytest.raises(claims.ClaimError, match='reservedFor'):
        claims.pods_of(claim, ref)


def test_claim_reader_uses_the_api(conf):
    apiserver = fake_apiserver.FakeKubeApiServer().start()
    client = apiserver.api_client()
    try:
        claim = rc.allocated_claim('c', [('a', 'dev-a')], namespace='team-a')
        apiserver.put_claim(claim)
        reader = claims.KubeClaimReader(client)
        assert reader.get('team-a', 'c') == apiserver.claims[('team-a', 'c')]
        assert reader.get('team-a', 'c')['spec'] == claim['spec']
        with pytest.raises(claims.ClaimError, match='not found'):
            reader.get('team-b', 'c')
    finally:
        client.close()
        apiserver.stop()


def _prepared(**kwargs):
    return device_api.PreparedDevice(**kwargs)


@pytest.mark.parametrize('device', [
    _prepared(),
    _prepared(device_nodes=(device_api.DeviceNode('dev/x'),)),
    _prepared(device_nodes=(device_api.DeviceNode('/dev/x', 'rel'),)),
    _prepared(device_nodes=(device_api.DeviceNode('/dev/x',
                                                  permissions='rx'),)),
    _prepared(env=(('1BAD', 'x'),)),
    _prepared(env=(('A', 'x\0'),)),
    _prepared(env=(('A', 3),)),
])
def test_prepared_device_must_fit_a_cdi_spec(device):
    with pytest.raises(device_api.DevicePrepareError):
        device.check()


def test_cdi_names_and_file(tmp_path):
    uid = str(uuid.uuid4())
    device = _prepared(device_nodes=(device_api.DeviceNode(
        '/dev/dfl-port.1', '/host/dev/dfl-port.1', 'rw'),), env=(('A', 'b'),))
    path = cdi.write_spec(str(tmp_path), DRIVER, uid, [('r0', device)])
    assert os.path.basename(path) == '%s-claim_%s.json' % (DRIVER, uid)
    assert cdi.device_id(DRIVER, uid, 'r0') == '%s/claim=%s-r0' % (DRIVER,
                                                                   uid)
    with open(path) as f:
        assert json.load(f)['devices'] == [{
            'name': '%s-r0' % uid, 'containerEdits': {
                'env': ['A=b'], 'deviceNodes': [{
                    'path': '/dev/dfl-port.1',
                    'hostPath': '/host/dev/dfl-port.1',
                    'permissions': 'rw'}]}}]
    assert os.listdir(tmp_path) == [os.path.basename(path)]   # no tmp left
    assert cdi.remove_spec(str(tmp_path), DRIVER, uid) is True
    assert cdi.remove_spec(str(tmp_path), DRIVER, uid) is False


def _claim(uid='u1'):
    return state.PreparedClaim(uid, 'ns', 'name', (state.PreparedDeviceRecord(
        ('a',), 'node-1', 'dev-a', ('k=uid-dev-a',), None),))


def test_state_survives_a_new_store(tmp_path):
    store = state.PreparedClaimStore(str(tmp_path))
    store.put(_claim('u1'))
    store.put(_claim('u2'))
    store.remove('u1')
    again = state.PreparedClaimStore(str(tmp_path))
    assert again.uids() == ['u2'] and again.get('u2') == _claim('u2')
    assert oct(os.stat(again.path).st_mode & 0o777) == '0o600'


@pytest.mark.parametrize('content', ['{', '[]', '{"version": 2}',
                                     '{"version": 1, "claims": {"u": {}}}'])
def test_unreadable_state_refuses_to_start(tmp_path, content):
    (tmp_path / state.STATE_FILE).write_text(content)
    with pytest.raises(state.StateError):
        state.PreparedClaimStore(str(tmp_path))


def test_state_write_failure_leaves_memory_as_the_disk(tmp_path,
                                                      monkeypatch):
    store = state.PreparedClaimStore(str(tmp_path))
    store.put(_claim('u1'))

    def disk_full(*args, **kwargs):
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(state.files, 'write_json_atomically', disk_full)
    with pytest.raises(OSError):
        store.put(_claim('u2'))
    with pytest.raises(OSError):
        store.remove('u1')
    assert store.uids() == ['u1']


def test_socket_paths_are_checked():
    assert server.registration_socket('/r', DRIVER) == \
        '/r/%s-reg.sock' % DRIVER
    assert server.dra_socket('/p', DRIVER) == '/p/%s/dra.sock' % DRIVER
    with pytest.raises(server.SocketPathError, match='longer than'):
        server._check_socket_path('/' + 'x' * 120)
    with pytest.raises(server.SocketPathError, match='not absolute'):
        server._check_socket_path('x.sock')


def test_options_are_validated(conf):
    for bad in ('Upper.io', 'a_b.io', 'x' * 64, '-a.io'):
        with pytest.raises(ValueError):
            conf.set_override('driver_name', bad, group='kubernetes')
    with pytest.raises(ValueError):
        conf.set_override('prepare_timeout', 45, group='kubernetes')
    conf.set_override('driver_name', 'fpga.example.com', group='kubernetes')
    assert conf.kubernetes.driver_name == 'fpga.example.com'


def test_create_server_from_options(conf, tmp_path):
    conf.set_override('host', 'compute-7')
    client = object()
    built = service.create_server(conf, lambda r: None, lambda *a: None,
                                  api_client=client)
    assert built.plugin.node_name == 'compute-7'
    assert built.plugin.store.path == os.path.join(
        str(tmp_path), 'dra', state.STATE_FILE)
    assert built.dra_path == '/var/lib/kubelet/plugins/%s/dra.sock' % (
        conf.kubernetes.driver_name)
    conf.set_override('node_name', 'k8s-node-7', group='kubernetes')
    conf.set_override('cdi_dir', 'relative/cdi', group='kubernetes')
    with pytest.raises(exception.ConfigError, match='cdi_dir'):
        service.create_server(conf, None, None, api_client=client)
    conf.clear_override('cdi_dir', group='kubernetes')
    assert service.create_server(conf, None, None, api_client=client) \
        .plugin.node_name == 'k8s-node-7'
