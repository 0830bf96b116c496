"""The kubelet plugin through a DaemonSet rolling update with maxSurge:
the new agent's plugin starts beside the old one on the same node
(sockets named by pod uid, one state directory, one CDI directory), the
kubelet registers both and calls the newest; the new plugin answers and
unprepares what the old one prepared, a claim is never prepared twice
when both are asked at once, and the old one's stop leaves the new one's
sockets (so the driver never stops being usable and the kubelet never
wipes its slices: its wipe follows the last instance going away)."""
import os
import sys
import threading

import pytest

from cyborg_lite.agent.dra import claims as claims_mod
from cyborg_lite.agent.dra import plugin as plugin_mod
from cyborg_lite.agent.dra import server as server_mod
from cyborg_lite.agent.dra import service as service_mod
from tests import waiting
from tests.functional.kubernetes import kubelet as kubelet_mod
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import resource_claims as rc

DRIVER = rc.DRIVER
NODE = 'node-1'
REGION0 = 'fpga-0000-5e-00-0-region0'
OLD_UID = '0b6b1f3c-9d2e-4c55-a1b7-6f1f2a3b4c5d'
NEW_UID = '7e0d5a64-3c1b-4f0e-9a8d-2b6c4d1e0f99'
_answer = kubelet_mod.answer

class Agents:
    """The old and the new agent's plugins of one node: same directories,
    one pod uid each."""

    def __init__(self, base, apiserver, node):
        self.base = base
        self.client = apiserver.api_client()
        self.node = node
        self.servers = {}

    def start(self, pod_uid):
        plugin = plugin_mod.DraPlugin(
            DRIVER, NODE, claims_mod.KubeClaimReader(self.client),
            self.node.prepare_device, self.node.release_device,
            cdi_dir=os.path.join(self.base, 'cdi'),
            state_dir=os.path.join(self.base, 'state'), prepare_timeout=30)
        self.servers[pod_uid] = server_mod.KubeletPluginServer(
            plugin, os.path.join(self.base, 'reg'),
            os.path.join(self.base, 'plugins'), instance_uid=pod_uid).start()
        return self.servers[pod_uid]

    def stop(self, pod_uid):
        self.servers.pop(pod_uid).stop()

    def close(self):
        for pod_uid in list(self.servers):
            self.stop(pod_uid)
        self.client.close()


@pytest.fixture
def agents(short_dir, apiserver, node):
    agents = Agents(short_dir, apiserver, node)
    yield agents
    agents.close()


@pytest.fixture
def kubelet(short_dir):
    kubelet = kubelet_mod.TestKubelet(os.path.join(short_dir, 'reg'))
    yield kubelet
    kubelet.close()


def _claim(apiserver, node, name='fpga'):
    (bitstream,) = node.bitstreams.values()
    claim = rc.allocated_claim(name, [('fpga', REGION0)], config=[
        rc.fpga_config(bitstreamID=bitstream.uuid)])
    apiserver.put_claim(claim)
    return claim


def test_sockets_carry_the_pod_uid(agents, kubelet, short_dir):
    agents.start(OLD_UID)
    agents.start(NEW_UID)
    assert kubelet.sockets() == ['%s-%s-reg.sock' % (DRIVER, OLD_UID),
                                 '%s-%s-reg.sock' % (DRIVER, NEW_UID)]
    info = kubelet.register('%s-%s-reg.sock' % (DRIVER, NEW_UID))
    assert info.name == DRIVER
    assert info.endpoint == os.path.join(short_dir, 'plugins', DRIVER,
                                         'dra-%s.sock' % NEW_UID)


def test_the_new_plugin_takes_over_what_the_old_one_prepared(
        agents, kubelet, apiserver, node, short_dir):
    # The surge: the new pod's plugin starts while the old one serves.
    agents.start(OLD_UID)
    agents.start(NEW_UID)
    kubelet.register('%s-%s-reg.sock' % (DRIVER, OLD_UID))
    claim = _claim(apiserver, node)
    uid = claim['metadata']['uid']
    first = _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid)
    assert first[0] == '' and len(node.programmed) == 1

    # The kubelet moves to the newest: the same answer, nothing redone.
    kubelet.register('%s-%s-reg.sock' % (DRIVER, NEW_UID))
    assert _answer(kubelet.prepare('v1', [rc.ref(claim)]), uid) == first
    assert len(node.programmed) == 1
    assert apiserver.requests.count(
        ('GET', fake_apiserver.RESOURCE +
         '/namespaces/default/resourceclaims/fpga')) == 1

    # The old pod stops: only its own sockets go.
    agents.stop(OLD_UID)
    assert kubelet.sockets() == ['%s-%s-reg.sock' % (DRIVER, NEW_UID)]
    assert os.listdir(os.path.join(short_dir, 'plugins', DRIVER)) == [
        'dra-%s.sock' % NEW_UID]

    # What the old one prepared, the new one unprepares.
    assert kubelet.unprepare('v1', [rc.ref(claim)]).claims[uid].error == ''
    assert node.released == [(uid, REGION0)] and node.in_use == {}
    assert agents.servers[NEW_UID].plugin.store.uids() == []
    assert not os.listdir(os.path.join(short_dir, 'cdi'))


def _in_workers(function_name):
    """How many plugin worker threads are inside ``function_name`` (their
    stacks, as the interpreter has them)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    count = 0
    for ident, frame in sys._current_frames().items():
        if not names.get(ident, '').startswith('dra-prepare'):
            continue
        while frame is not None:
            if frame.f_code.co_name == function_name:
                count += 1
                break
            frame = frame.f_back
    return count


def test_a_claim_asked_of_both_plugins_at_once_is_prepared_once(
        agents, kubelet, apiserver, node):
    # The kubelet moved to the new plugin while the old one was still
    # programming the claim's region: the new one waits for it.
    old = agents.start(OLD_UID).plugin
    new = agents.start(NEW_UID).plugin
    claim = _claim(apiserver, node)
    ref = claims_mod.ClaimRef(namespace='default', name='fpga',
                              uid=claim['metadata']['uid'])
    node.gate.clear()                       # programming holds here
    answers = {}
    threads = [threading.Thread(target=lambda p=p, k=k: answers.__setitem__(
        k, p.prepare([ref])[ref.uid])) for k, p in (('old', old),
                                                     ('new', new))]
    threads[0].start()
    assert waiting.until(lambda: node.in_use.get(REGION0) == ref.uid)
    threads[1].start()
    # The new plugin's worker waits for the claim's lock (had it none, it
    # would be at the programming gate beside the old one's).
    assert waiting.until(lambda: _in_workers('claim_lock') == 1 or
                         _in_workers('prepare_device') == 2)
    node.gate.set()
    for thread in threads:
        thread.join(30)
    assert answers['old'].error == '' and answers['new'] == answers['old']
    assert len(node.programmed) == 1
    assert apiserver.requests.count(
        ('GET', fake_apiserver.RESOURCE +
         '/namespaces/default/resourceclaims/fpga')) == 1


def _pod_conf(monkeypatch, short_dir, pod_uid):
    """A fresh ConfigOpts of the agent, as the DaemonSet's pod starts it:
    the uid in the environment (the downward API), no option file."""
    from oslo_config import cfg

    from cyborg_lite.conf import opts
    monkeypatch.setenv('OS_KUBERNETES__PLUGIN_INSTANCE_UID', pod_uid)
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    conf([], project='cyborg-lite-test', default_config_files=[],
         default_config_dirs=[])
    for option, folder in (('kubelet_registry_dir', 'reg'),
                           ('kubelet_plugins_dir', 'plugins'),
                           ('cdi_dir', 'cdi'), ('plugin_state_dir', 'state')):
        conf.set_override(option, os.path.join(short_dir, folder),
                          group='kubernetes')
    return conf


def test_the_instance_uid_comes_from_the_pods_environment(
        short_dir, apiserver, monkeypatch):
    conf = _pod_conf(monkeypatch, short_dir, NEW_UID)
    client = apiserver.api_client()
    try:
        server = service_mod.create_server(
            conf, prepare_device=None, release_device=None,
            api_client=client, node=NODE)
    finally:
        client.close()
    driver = conf.kubernetes.driver_name
    assert os.path.basename(server.registration_path) == \
        '%s-%s-reg.sock' % (driver, NEW_UID)
    assert server.dra_path == os.path.join(
        short_dir, 'plugins', driver, 'dra-%s.sock' % NEW_UID)


@pytest.mark.parametrize('value', ['../escape', 'a/b', '-leading', 'x' * 64])
def test_an_instance_uid_that_is_no_file_name_is_refused(
        value, short_dir, monkeypatch):
    conf = _pod_conf(monkeypatch, short_dir, value)
    with pytest.raises(ValueError):
        conf.kubernetes.plugin_instance_uid
