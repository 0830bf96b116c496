"""kill -9 of a real cyborg-lite-agent between making a MIG instance for
a claim's Prepare and noting it: nvidia-smi (tests/fixtures/drivers/
mig_host.py) kills the agent once ``-cgi`` made the instance. The
restarted agent adopts the instance at the noted placement: the kubelet's
retried Prepare gets it without a second ``-cgi``, and the Unprepare's
clean destroys it. Real conductor and agent processes over RabbitMQ and
PostgreSQL (tests/functional/multihost/cluster.py); the kubelet is the
test client over the agent's unix sockets."""
import configparser
import json
import shutil
import tempfile

import pytest

from tests import waiting
from tests.fixtures.drivers import mig_host
from tests.functional.kubernetes import test_agent_kill9 as kill9
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import resource_claims as rc

pytestmark = [pytest.mark.slow, pytest.mark.postgresql,
              pytest.mark.rabbitmq]

GPU = '0000:3b:00.0'
DEVICE = 'gpu-0000-3b-00-0-mig-3g20gb-9-4'


class MigCluster(kill9.K8sCluster):
    """The agent also runs the nvidia driver on ``mig``'s GPUs."""

    def __init__(self, apiserver_url, kubelet_dir, mig):
        super().__init__(apiserver_url, kubelet_dir)
        self.mig = mig

    def write_agent_conf(self, host, **fake_driver):
        super().write_agent_conf(host, **fake_driver)
        parser = configparser.RawConfigParser()
        parser.optionxform = str
        parser.read(self.conf_path(host))
        parser.set('agent', 'enabled_drivers', 'fake,nvidia')
        parser.add_section('nvidia_driver')
        for name, value in self.mig.options().items():
            parser.set('nvidia_driver', name, str(value).lower()
                       if isinstance(value, bool) else str(value))
        with open(self.conf_path(host), 'w') as f:
            parser.write(f)


@pytest.fixture
def setup(tmp_path):
    kubelet_dir = tempfile.mkdtemp(prefix='dra', dir='/tmp')
    mig = mig_host.MigHost(tmp_path / 'gpus')
    apiserver = fake_apiserver.FakeKubeApiServer().start()
    cluster = MigCluster(apiserver.url, kubelet_dir, mig)
    try:
        cluster.start()
        yield cluster, apiserver, kubelet_dir, mig
    finally:
        statuses = cluster.stop()
        apiserver.stop()
        shutil.rmtree(kubelet_dir, ignore_errors=True)
    assert all(s == 0 for s in statuses.values()), statuses


def test_killed_between_make_and_note_the_next_start_keeps_then_destroys(
        setup):
    cluster, apiserver, kubelet_dir, mig = setup
    host = kill9.HOST
    waiting.read_until(lambda: cluster.query(
        'SELECT name FROM deployables WHERE name LIKE :name',
        name='%mig-3g20gb-9-4'), bool, 60, what='the placement reported')
    claim = rc.allocated_claim('mig', [('gpu', DEVICE)], pool=host)
    apiserver.put_claim(claim)
    uid = claim['metadata']['uid']
    mig.kill_caller_after_create()
    kubelet = kill9._registered(kubelet_dir)
    try:
        kubelet.prepare('v1', [rc.ref(claim)])
    except Exception:
        pass            # the agent died under the call
    kubelet.close()
    agent = cluster.services[host]
    assert agent.proc.wait(30) == -9
    agent.proc = None
    [(gi, profile, start)] = mig.instances(GPU)
    assert (profile, start) == (9, 4)
    with open(mig.options()['mig_state_file']) as f:
        assert json.load(f) == {GPU: {'9:4': None}}     # made, not noted

    agent.start()
    kubelet = kill9._registered(kubelet_dir)
    try:
        error, devices = kill9._answer(kubelet, claim)
        assert (error, devices) == ('', [(host, DEVICE, [
            '%s/claim=%s-%s' % (rc.DRIVER, uid, DEVICE)])]), \
            cluster.logs(host)
        assert [line for line in mig.log() if 'create' in line] == [
            'create %s 9:4 gi=%d' % (GPU, gi)]
        with open(mig.options()['mig_state_file']) as f:
            assert json.load(f) == {GPU: {'9:4': gi}}
        assert kubelet.unprepare('v1', [rc.ref(claim)]).claims[uid].error \
            == ''
    finally:
        kubelet.close()
    waiting.read_until(lambda: mig.instances(GPU), lambda found: not found,
                       30, what='the instance destroyed')
    assert mig.log()[-2:] == ['-dci %s gi=%d' % (GPU, gi),
                              '-dgi %s gi=%d' % (GPU, gi)]
