"""``cyborg-lite claim explain <namespace>/<name>``: the real entry point,
reading the apiserver stand-in through a kubeconfig as an operator's
kubectl would, prints the funnel the conductor's Event says."""
import pytest

from cyborg_lite.kubernetes import slice_sync
from tests.functional.cli import conftest as c
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import test_claim_events as claims


@pytest.fixture
def kube(tmp_path):
    server = fake_apiserver.FakeKubeApiServer().start()
    server.add_node('node-1')
    client = server.api_client()
    claims._setup(server, slice_sync.SliceSync(client, claims.DRIVER))
    client.close()
    env = c.clean_env(KUBECONFIG=server.write_kubeconfig(
        tmp_path / 'kubeconfig'))
    yield server, lambda *args: c.run('cyborg-lite', args, env)
    server.stop()


def test_the_funnel_names_the_selector_that_matches_nothing(kube):
    server, cli = kube
    server.write_claim(claims.pending_claim('train', [claims.NO_SUCH_TYPE]))
    result = cli('claim', 'explain', 'ns-a/train', '-f', 'json')
    assert result.rc == 0, result.stderr
    rows = [(r['step'].split(' `')[0], r['devices'], bool(r['blocking']))
            for r in result.json]
    assert rows == [
        ('devices of our driver', 4, False),
        ('selector 0 of DeviceClass fpga-region.%s' % claims.DRIVER, 4,
         False),
        ('selector 0 of request fpga', 0, True)]
    assert claims.NO_SUCH_TYPE in result.json[-1]['blocking']
    # Reading it posts nothing.
    assert server.k8s_events == []


def test_a_claim_that_fits_has_no_blocking_step_and_bad_names_fail(kube):
    server, cli = kube
    server.write_claim(claims.pending_claim('fits', count=2))
    result = cli('claim', 'explain', 'ns-a/fits', '-f', 'json')
    assert result.rc == 0, result.stderr
    assert [r['blocking'] for r in result.json] == [''] * 4
    assert result.json[-1]['step'] == 'count 2'
    missing = cli('claim', 'explain', 'ns-a/nope')
    assert missing.rc == 1 and 'not found' in missing.stderr
    assert cli('claim', 'explain', 'no-slash').rc != 0
