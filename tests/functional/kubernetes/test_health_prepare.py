"""A Kubernetes prepare on a device the agent's health monitor found
unhealthy is refused naming the reason; one prepared before stays, and
its claim is named in the conductor's log. The kubelet is played over the
real sockets, the claim read from the kube-apiserver stand-in."""
import logging
import os

import pytest

from cyborg_lite.rpc import transport as rpc
from tests.functional import programming_env as pe
from tests.functional.kubernetes import wired_env
from tests.unit.kubernetes import resource_claims as rc

CATFATAL = 'catfatal_errors 0x4'


@pytest.fixture
def env(conf, sqlite_db, tmp_path, short_dir, apiserver):
    wired_env.configure(conf, tmp_path, short_dir)
    # Each region behind its own VF: the regions are independent.
    conf.set_override('sriov', True, group='fake_driver')
    conf.set_override('readings_to_fault', 2, group='health')
    env = wired_env.K8sEnv(conf, apiserver).start()
    yield env
    env.stop()
    rpc.cleanup()


def _claim(apiserver, name, device):
    claim = rc.allocated_claim(name, [('fpga', device)], namespace='team-a',
                               pool=pe.HOST)
    apiserver.put_claim(claim)
    return claim


def _prepare(kubelet, claim):
    response = kubelet.prepare('v1', [rc.ref(claim)])
    return response.claims[claim['metadata']['uid']].error


def _fault(conf, text):
    path = os.path.join(conf.fake_driver.state_dir, 'sys/class/fpga_region',
                        'region0/dfl-fme.0/errors/catfatal_errors')
    with open(path, 'w') as f:
        f.write(text)


def test_prepare_refused_on_an_unhealthy_device(conf, env, kubelet,
                                                apiserver, caplog):
    held = _claim(apiserver, 'held', wired_env.REGION1)
    assert _prepare(kubelet, held) == ''
    _fault(conf, '0x4\n')
    with caplog.at_level(logging.WARNING):
        env.agent.report_once()
        env.agent.report_once()
    told = [r.getMessage() for r in caplog.records
            if 'stays bound' in r.getMessage()]
    assert len(told) == 1 and held['metadata']['uid'] in told[0]
    assert 'team-a/held' in told[0] and CATFATAL in told[0]

    fresh = _claim(apiserver, 'fresh', wired_env.REGION0)
    error = _prepare(kubelet, fresh)
    assert 'unhealthy' in error and CATFATAL in error
    # The held claim's retried prepare is the same answer as before.
    assert _prepare(kubelet, held) == ''

    _fault(conf, '0x0\n')
    for _ in range(2 * conf.health.readings_to_clear):
        env.agent.report_once()
    assert _prepare(kubelet, fresh) == ''
