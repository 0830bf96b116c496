"""The kubelet DRA plugin over real unix sockets, driven by a test client
that plays the kubelet, reading claims from the kube-apiserver stand-in
through the real ``kubernetes`` client, with the fake FPGA driver
programming for real."""
import json
import os
import threading
import uuid

import pytest

from cyborg_lite.agent.dra import claims as claims_mod
from cyborg_lite.agent.dra import plugin as plugin_mod
from cyborg_lite.agent.dra import server as server_mod
from tests.functional.kubernetes import fake_node
from tests.functional.kubernetes import kubelet as kubelet_mod
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import resource_claims as rc

DRIVER = rc.DRIVER
NODE = 'node-1'
REGION0 = 'fpga-0000-5e-00-0-region0'
REGION1 = 'fpga-0000-5e-00-0-region1'
VERSIONS = ('v1', 'v1beta1')


class Host:
    """The plugin and its servers, restartable over the same directories."""

    def __init__(self, base, apiserver, node, prepare_timeout=30.0):
        self.base = base
        self.apiserver = apiserver
        self.node = node
        self.prepare_timeout = prepare_timeout
        self.cdi_dir = os.path.join(base, 'cdi')
        self.client = apiserver.api_client()
        self.server = None

    def start(self):
        plugin = plugin_mod.DraPlugin(
            DRIVER, NODE, claims_mod.KubeClaimReader(self.client),
            self.node.prepare_device, self.node.release_device,
            cdi_dir=self.cdi_dir, state_dir=os.path.join(self.base, 'state'),
            prepare_timeout=self.prepare_timeout)
        self.server = server_mod.KubeletPluginServer(
            plugin, os.path.join(self.base, 'reg'),
            os.path.join(self.base, 'plugins')).start()
        return self

    def stop(self):
        if self.server:
            self.server.stop()
            self.server = None

    def cdi_spec(self, claim_uid):
        path = os.path.join(self.cdi_dir, '%s-claim_%s.json' % (DRIVER,
                                                                 claim_uid))
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)


@pytest.fixture
def host(short_dir, apiserver, node):
    host = Host(short_dir, apiserver, node).start()
    yield host
    host.stop()
    host.client.close()


@pytest.fixture
def kubelet(host):
    kubelet = kubelet_mod.TestKubelet(os.path.join(host.base, 'reg'))
    yield kubelet
    kubelet.close()


def _answer(response, uid):
    entry = response.claims[uid]
    return entry.error, [(list(d.request_names), d.pool_name, d.device_name,
                          list(d.cdi_device_ids)) for d in entry.devices]


def test_registration(host, kubelet):
    info = kubelet.register()
    assert info.type == 'DRAPlugin' and info.name == DRIVER
    assert info.endpoint == os.path.join(host.base, 'plugins', DRIVER,
                                         'dra.sock')
    assert list(info.supported_versions) == ['v1.DRAPlugin',
                                             'v1beta1.DRAPlugin']
    assert os.path.basename(
        host.server.registration_path) == DRIVER + '-reg.sock'
    assert host.server.registration.registered.is_set()


@pytest.mark.parametrize('version', VERSIONS)
def test_prepare_programs_writes_cdi_and_is_idempotent(
        version, host, kubelet, apiserver, node):
    kubelet.register()
    (bitstream,) = node.bitstreams.values()
    claim = rc.allocated_claim('fpga', [('fpga', REGION0)], config=[
        rc.fpga_config(bitstreamID=bitstream.uuid)])
    apiserver.put_claim(claim)
    uid = claim['metadata']['uid']
    cdi_id = '%s/claim=%s-%s' % (DRIVER, uid, REGION0)

    first = _answer(kubelet.prepare(version, [rc.ref(claim)]), uid)
    assert first == ('', [(['fpga'], NODE, REGION0, [cdi_id])])
    assert node.programmed == [(REGION0, bitstream.function_id)]
    assert node.driver.loaded_function('0000:5e:00.0', 'region0') == \
        bitstream.function_id
    spec = host.cdi_spec(uid)
    assert spec == {
        'cdiVersion': '0.5.0', 'kind': DRIVER + '/claim',
        'devices': [{'name': '%s-%s' % (uid, REGION0), 'containerEdits': {
            'env': ['CYBORG_LITE_FUNCTION_ID=' + bitstream.function_id,
                    'CYBORG_LITE_DEVICE=' + REGION0],
            'deviceNodes': [{'path': '/dev/dfl-port.0', 'hostPath':
                             os.path.join(node.driver.tree.dev,
                                          'dfl-port.0')}]}}]}
    assert os.path.exists(spec['devices'][0]['containerEdits'][
        'deviceNodes'][0]['hostPath'])

    # The kubelet asks again: same answer, nothing done twice.
    again = _answer(kubelet.prepare(version, [rc.ref(claim)]), uid)
    assert again == first and len(node.programmed) == 1
    assert apiserver.requests.count(
        ('GET', fake_apiserver.RESOURCE + '/namespaces/default/'
         'resourceclaims/fpga')) == 1

    response = kubelet.unprepare(version, [rc.ref(claim)])
    assert response.claims[uid].error == ''
    assert host.cdi_spec(uid) is None
    assert node.released == [(uid, REGION0)] and node.in_use == {}
    assert host.server.plugin.store.uids() == []
    # Unpreparing what is not prepared is done already.
    assert kubelet.unprepare(version, [rc.ref(claim)]).claims[uid].error == ''
    assert node.released == [(uid, REGION0)]


def test_function_id_config_and_loaded_function_needs_no_programming(
        host, kubelet, apiserver, node):
    kubelet.register()
    (bitstream,) = node.bitstreams.values()
    claim = rc.allocated_claim('by-function', [('fpga', REGION1)], config=[
        rc.fpga_config(functionID=bitstream.function_id)])
    apiserver.put_claim(claim)
    uid = claim['metadata']['uid']
    assert _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid)[0] == ''
    assert node.programmed == [(REGION1, bitstream.function_id)]
    kubelet.unprepare('v1', [rc.ref(claim)])
    # Loaded already: a second claim for the function is served as is.
    other = rc.allocated_claim('again', [('fpga', REGION1)], config=[
        rc.fpga_config(functionID=bitstream.function_id)])
    apiserver.put_claim(other)
    error, _ = _answer(kubelet.prepare('v1', [rc.ref(other)]),
                       other['metadata']['uid'])
    assert error == '' and len(node.programmed) == 1


def test_class_config_is_overridden_by_the_claims(host, kubelet, apiserver,
                                                   node):
    kubelet.register()
    (bitstream,) = node.bitstreams.values()
    claim = rc.allocated_claim('override', [('fpga', REGION0)], config=[
        rc.fpga_config(source='FromClass', functionID='0' * 32),
        rc.fpga_config(bitstreamID=bitstream.uuid)])
    apiserver.put_claim(claim)
    error, _ = _answer(kubelet.prepare('v1', [rc.ref(claim)]),
                       claim['metadata']['uid'])
    assert error == ''
    assert node.programmed == [(REGION0, bitstream.function_id)]


@pytest.mark.parametrize('parameters,reason', [
    ({'bitstreamID': 'not-a-uuid'}, 'bitstreamID must be a uuid'),
    ({'functionID': 'f' * 32, 'bitstreamID': str(uuid.uuid4())},
     'exactly one'),
    ({'functionID': 'f' * 32, 'color': 'blue'}, 'unknown field'),
    ({'functionID': 'f' * 32, 'force': 'yes'}, 'force must be'),
])
def test_bad_config_fails_that_claim_only_and_changes_nothing(
        parameters, reason, host, kubelet, apiserver, node):
    kubelet.register()
    (bitstream,) = node.bitstreams.values()
    bad = rc.allocated_claim('bad', [('fpga', REGION0)],
                             config=[rc.fpga_config(**parameters)])
    good = rc.allocated_claim('good', [('fpga', REGION1)], config=[
        rc.fpga_config(bitstreamID=bitstream.uuid)])
    apiserver.put_claim(bad)
    apiserver.put_claim(good)
    response = kubelet.prepare('v1', [rc.ref(bad), rc.ref(good)])
    error, devices = _answer(response, bad['metadata']['uid'])
    assert reason in error and devices == []
    assert _answer(response, good['metadata']['uid'])[0] == ''
    assert node.programmed == [(REGION1, bitstream.function_id)]
    assert REGION0 not in node.in_use
    assert host.cdi_spec(bad['metadata']['uid']) is None
    assert host.server.plugin.store.uids() == [good['metadata']['uid']]


@pytest.mark.parametrize('make,reason', [
    (lambda c: rc.unallocated(c), 'is not allocated'),
    (lambda c: dict(c, metadata=dict(c['metadata'], uid=str(uuid.uuid4()))),
     'it was replaced'),
    (lambda c: rc.allocated_claim('c', [('fpga', REGION0)], pool='node-2',
                                  uid=c['metadata']['uid']),
     'is not on this node'),
    (lambda c: rc.allocated_claim('c', [('fpga', REGION0)],
                                  driver='other.example.com',
                                  uid=c['metadata']['uid']),
     'no device of driver'),
    (None, 'not found'),
])
def test_claim_checks(make, reason, host, kubelet, apiserver, node):
    kubelet.register()
    claim = rc.allocated_claim('c', [('fpga', REGION0)])
    if make:
        apiserver.put_claim(make(claim))
    error, devices = _answer(kubelet.prepare('v1beta1', [rc.ref(claim)]),
                             claim['metadata']['uid'])
    assert reason in error and devices == []
    assert node.in_use == {} and node.programmed == []


def test_failed_device_releases_the_others(host, kubelet, apiserver, node):
    kubelet.register()
    claim = rc.allocated_claim('two', [('a', REGION0), ('b', 'no-such')])
    apiserver.put_claim(claim)
    uid = claim['metadata']['uid']
    error, _ = _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid)
    assert 'no device no-such' in error
    assert node.released == [(uid, REGION0)] and node.in_use == {}
    assert host.cdi_spec(uid) is None


def test_device_in_use_by_another_claim_is_refused(host, kubelet, apiserver,
                                                   node):
    kubelet.register()
    first = rc.allocated_claim('first', [('fpga', REGION0)])
    second = rc.allocated_claim('second', [('fpga', REGION0)])
    apiserver.put_claim(first)
    apiserver.put_claim(second)
    response = kubelet.prepare('v1', [rc.ref(first)])
    assert _answer(response, first['metadata']['uid'])[0] == ''
    response = kubelet.prepare('v1', [rc.ref(second)])
    assert 'in use by claim' in response.claims[
        second['metadata']['uid']].error


def test_slow_programming_answers_in_progress_then_the_retry_gets_it(
        short_dir, apiserver, node):
    host = Host(short_dir, apiserver, node, prepare_timeout=0.2).start()
    kubelet = kubelet_mod.TestKubelet(os.path.join(short_dir, 'reg'))
    try:
        kubelet.register()
        (bitstream,) = node.bitstreams.values()
        claim = rc.allocated_claim('slow', [('fpga', REGION0)], config=[
            rc.fpga_config(bitstreamID=bitstream.uuid)])
        apiserver.put_claim(claim)
        uid = claim['metadata']['uid']
        node.gate.clear()                    # programming blocks
        error, devices = _answer(kubelet.prepare('v1', [rc.ref(claim)]),
                                 uid)
        assert 'still being prepared' in error and devices == []
        assert host.cdi_spec(uid) is None
        # Unprepare must not tear down what is still being prepared.
        assert 'still being prepared' in kubelet.unprepare(
            'v1', [rc.ref(claim)]).claims[uid].error
        # Programming finishes; wait for it here, not in the call, so the
        # short prepare_timeout cannot make the retry below race it.
        running = host.server.plugin._running[uid]
        node.gate.set()
        running.result()
        error, devices = _answer(kubelet.prepare('v1', [rc.ref(claim)]),
                                 uid)
        assert error == '' and devices[0][2] == REGION0
        assert node.programmed == [(REGION0, bitstream.function_id)]
        assert host.cdi_spec(uid) is not None
    finally:
        node.gate.set()
        kubelet.close()
        host.stop()
        host.client.close()


def test_a_prepare_while_the_claim_is_unprepared_is_refused(
        short_dir, apiserver, node, monkeypatch):
    releasing, go = threading.Event(), threading.Event()
    release = node.release_device

    def slow_release(*args):
        releasing.set()
        assert go.wait(30)
        release(*args)
    monkeypatch.setattr(node, 'release_device', slow_release)
    host = Host(short_dir, apiserver, node).start()
    kubelet = kubelet_mod.TestKubelet(os.path.join(short_dir, 'reg'))
    claim = rc.allocated_claim('going', [('fpga', REGION0)])
    apiserver.put_claim(claim)
    uid = claim['metadata']['uid']
    unprepared = []
    unprepare = threading.Thread(target=lambda: unprepared.append(
        kubelet.unprepare('v1', [rc.ref(claim)]).claims[uid].error))
    try:
        kubelet.register()
        assert _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid)[0] == ''
        unprepare.start()
        assert releasing.wait(30)

        # Its devices are being given back: not answered as prepared.
        error, devices = _answer(kubelet.prepare('v1', [rc.ref(claim)]),
                                 uid)
        assert 'being unprepared' in error and devices == []

        go.set()
        unprepare.join(30)
        assert unprepared == [''] and node.in_use == {}
        assert host.cdi_spec(uid) is None
        # Once unprepared, the kubelet's retry prepares it again.
        assert _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid)[0] == ''
        assert node.in_use == {REGION0: uid}
    finally:
        go.set()
        if unprepare.is_alive():
            unprepare.join(30)
        kubelet.close()
        host.stop()
        host.client.close()


def test_restart_keeps_prepared_claims(short_dir, apiserver, node):
    host = Host(short_dir, apiserver, node).start()
    kubelet = kubelet_mod.TestKubelet(os.path.join(short_dir, 'reg'))
    (bitstream,) = node.bitstreams.values()
    claim = rc.allocated_claim('kept', [('fpga', REGION0)], config=[
        rc.fpga_config(bitstreamID=bitstream.uuid)])
    apiserver.put_claim(claim)
    uid = claim['metadata']['uid']
    try:
        kubelet.register()
        before = _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid)
        kubelet.close()
        sockets = (host.server.registration_path, host.server.dra_path)
        host.stop()
        assert not any(os.path.exists(s) for s in sockets)
        host.start()                         # the agent restarted
        kubelet.register()
        claim_gets = len([r for r in apiserver.requests if 'resourceclaims'
                          in r[1]])
        after = _answer(kubelet.prepare('v1beta1', [rc.ref(claim)]), uid)
        assert after == before and before[0] == ''
        assert len(node.programmed) == 1
        assert claim_gets == len([r for r in apiserver.requests
                                  if 'resourceclaims' in r[1]])
        assert host.cdi_spec(uid) is not None
        assert kubelet.unprepare('v1', [rc.ref(claim)]).claims[
            uid].error == ''
        assert node.released == [(uid, REGION0)]
        assert host.cdi_spec(uid) is None
    finally:
        kubelet.close()
        host.stop()
        host.client.close()
