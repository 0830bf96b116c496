"""kill -9 of a real cyborg-lite-agent process that serves the kubelet
plugin: a claim it prepared stays prepared (its state file, its CDI spec,
the conductor's hold in PostgreSQL), the restarted agent answers the
kubelet's retry the same way without reading the claim again, and
unprepare then frees the region. Real conductor and agent processes over
RabbitMQ (tests/functional/multihost/cluster.py); the kubelet is the test
client over the agent's unix sockets; claims come from the kube-apiserver
stand-in through a kubeconfig."""
import glob
import os
import shutil
import tempfile

import pytest

from tests import fork_server
from tests import waiting
from tests.functional.kubernetes import kubelet as kubelet_mod
from tests.functional.multihost import cluster as cluster_mod
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import resource_claims as rc

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq]

HOST = 'host-0'
DEVICE = 'fpga-0000-5e-00-0-region0'
KUBECONFIG = '''apiVersion: v1
kind: Config
clusters:
- name: stand-in
  cluster: {server: "%s"}
users:
- name: agent
  user: {}
contexts:
- name: stand-in
  context: {cluster: stand-in, user: agent}
current-context: stand-in
'''


class K8sCluster(cluster_mod.Cluster):
    """One conductor and one agent; the agent serves the kubelet plugin
    in ``kubelet_dir``."""

    def __init__(self, apiserver_url, kubelet_dir):
        super().__init__(agents=1, conductors=1, cards=1, regions=2,
                         program_delay=0.1, popen=fork_server.popen)
        self.apiserver_url = apiserver_url
        self.kubelet_dir = kubelet_dir

    def _write_configs(self):
        super()._write_configs()
        kubeconfig = os.path.join(self.basedir, 'kubeconfig')
        with open(kubeconfig, 'w') as f:
            f.write(KUBECONFIG % self.apiserver_url)
        for name in self.conductor_names:
            with open(self.conf_path(name), 'a') as f:
                f.write('\n[kubernetes]\nhosts = %s\n' % HOST)
        with open(self.conf_path(HOST), 'a') as f:
            f.write('\n[kubernetes]\nenabled = true\nkubeconfig = %s\n'
                    'kubelet_registry_dir = %s/reg\n'
                    'kubelet_plugins_dir = %s/plugins\ncdi_dir = %s/cdi\n'
                    % (kubeconfig, self.kubelet_dir, self.kubelet_dir,
                       self.kubelet_dir))


@pytest.fixture
def setup():
    kubelet_dir = tempfile.mkdtemp(prefix='dra', dir='/tmp')
    apiserver = fake_apiserver.FakeKubeApiServer().start()
    cluster = K8sCluster(apiserver.url, kubelet_dir)
    try:
        cluster.start()
        yield cluster, apiserver, kubelet_dir
    finally:
        statuses = cluster.stop()
        apiserver.stop()
        shutil.rmtree(kubelet_dir, ignore_errors=True)
    assert all(s == 0 for s in statuses.values()), statuses


def _registered(kubelet_dir):
    """A kubelet that registered the plugin, once its socket answers."""
    def attempt():
        if not glob.glob(os.path.join(kubelet_dir, 'reg', '*-reg.sock')):
            return None
        kubelet = kubelet_mod.TestKubelet(os.path.join(kubelet_dir, 'reg'))
        try:
            kubelet.register()
            return kubelet
        except Exception:
            kubelet.close()
            return None
    kubelet = waiting.until(attempt, timeout=60, interval=0.2)
    assert kubelet, 'the agent never served its registration socket'
    return kubelet


def _answer(kubelet, claim):
    uid = claim['metadata']['uid']
    entry = kubelet.prepare('v1', [rc.ref(claim)]).claims[uid]
    return entry.error, [(d.pool_name, d.device_name, list(d.cdi_device_ids))
                         for d in entry.devices]


def _held(cluster):
    return [tuple(r) for r in cluster.query(
        'SELECT claim_uid, device_name FROM k8s_claim_devices')]


def test_kill9_of_the_agent_keeps_a_prepared_claim(setup):
    cluster, apiserver, kubelet_dir = setup
    claim = rc.allocated_claim('kept', [('fpga', DEVICE)], pool=HOST)
    apiserver.put_claim(claim)
    uid = claim['metadata']['uid']
    kubelet = _registered(kubelet_dir)
    first = _answer(kubelet, claim)
    assert first == ('', [(HOST, DEVICE, ['%s/claim=%s-%s' % (
        rc.DRIVER, uid, DEVICE)])]), cluster.logs(HOST)
    assert _held(cluster) == [(uid, DEVICE)]
    kubelet.close()

    assert cluster.kill9(HOST) == -9
    cdi = os.path.join(kubelet_dir, 'cdi', '%s-claim_%s.json'
                       % (rc.DRIVER, uid))
    assert os.path.exists(cdi)
    cluster.services[HOST].start()
    kubelet = _registered(kubelet_dir)
    try:
        reads = len(apiserver.requests)
        assert _answer(kubelet, claim) == first
        # From the state file: the claim was not read again.
        assert len(apiserver.requests) == reads
        assert _held(cluster) == [(uid, DEVICE)]
        assert kubelet.unprepare('v1', [rc.ref(claim)]).claims[uid].error \
            == ''
    finally:
        kubelet.close()
    assert _held(cluster) == []
    assert not os.path.exists(cdi)
