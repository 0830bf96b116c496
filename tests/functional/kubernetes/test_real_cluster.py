"""Against a real Kubernetes cluster (1.34 or later), when
CYBORG_LITE_KUBECONFIG names a kubeconfig with rights on ResourceSlices,
ResourceClaims and Nodes. No kube-apiserver can run on the project's
machines, so this is skipped there, CI included: the one skip the suite
allows. When the variable is set the test must pass; an unreachable
cluster fails it.

Everything is written under a driver name of its own and removed after.
"""
import os
import uuid

import kubernetes
import pytest

from cyborg_lite.agent.dra import claims
from cyborg_lite.kubernetes import client as k8s_client
from cyborg_lite.kubernetes import inventory
from cyborg_lite.kubernetes import slice_sync
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import inventories as inv
from tests.unit.kubernetes import resource_claims as rc

KUBECONFIG = os.environ.get('CYBORG_LITE_KUBECONFIG')
NO_CLUSTER = ('CYBORG_LITE_KUBECONFIG is not set: there is no real '
              'Kubernetes cluster to test against here (the one skip '
              'allowed, under CI=true too)')


def _client(kubeconfig):
    return k8s_client.new_api_client(kubeconfig)


def _first_node(client):
    nodes = kubernetes.client.CoreV1Api(client).list_node(limit=1).items
    assert nodes, 'the cluster has no Node'
    return nodes[0].metadata.name


def _run_all(kubeconfig):
    client = _client(kubeconfig)
    try:
        _slices_on_a_real_apiserver(client)
        _claim_reader_on_a_real_apiserver(client)
    finally:
        client.close()


@pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
def test_real_cluster():
    """One test, so that the suite has exactly one skip without a cluster."""
    _run_all(KUBECONFIG)


def test_the_real_cluster_test_itself_against_the_stand_in(tmp_path):
    """Keeps the gated test from rotting where no cluster is: the same
    steps, through a kubeconfig file, against the apiserver stand-in."""
    apiserver = fake_apiserver.FakeKubeApiServer().start()
    apiserver.add_node('worker-1')
    kubeconfig = apiserver.write_kubeconfig(tmp_path / 'kubeconfig')
    try:
        _run_all(kubeconfig)
        assert apiserver.refused == [] and apiserver.slices == {}
        assert apiserver.claims == {}
    finally:
        apiserver.stop()


def test_missing_kubeconfig_is_a_clear_error(tmp_path):
    with pytest.raises(k8s_client.KubernetesApiError, match='cannot load'):
        _client(str(tmp_path / 'absent'))


def _slices_on_a_real_apiserver(client):
    driver = 't%s.%s' % (uuid.uuid4().hex[:8], inv.DRIVER)
    node = _first_node(client)
    sync = slice_sync.SliceSync(client, driver)
    host = inventory.HostInventory(node, node, inv.host(node).devices)
    try:
        first = sync.sync(host)
        assert first.created == 1 and first.writes == 1
        (stored,) = sync.list_slices(node)
        assert len(stored['spec']['devices']) == 4
        assert stored['metadata']['ownerReferences'][0]['kind'] == 'Node'
        assert sync.sync(host).writes == 0
        changed = inv.change_region(host, 0, 1, unavailable=('cleaning',))
        assert sync.sync(changed).updated == 1
        # The real server canonicalised what it stored; still no change.
        assert sync.sync(changed).writes == 0
        big = inventory.HostInventory(node, node,
                                      inv.host(node, cards=13,
                                               regions=10).devices)
        assert sync.sync(big).generation == 2
        assert len(sync.list_slices(node)) == 3
    finally:
        sync.sync(inventory.HostInventory(node, node, ()))
    assert sync.list_slices(node) == []


def _claim_reader_on_a_real_apiserver(client):
    namespace = 'default'
    name = 'cyborg-lite-test-%s' % uuid.uuid4().hex[:8]
    body = rc.allocated_claim(name, [('fpga', 'x')])
    del body['status'], body['metadata']['uid']
    body['spec']['devices']['requests'][0]['exactly'][
        'deviceClassName'] = 'no-such-class.example.com'
    api = kubernetes.client.ResourceV1Api(client)
    created = api.create_namespaced_resource_claim(namespace, body)
    try:
        reader = claims.KubeClaimReader(client)
        claim = reader.get(namespace, name)
        assert claim['metadata']['uid'] == created.metadata.uid
        ref = claims.ClaimRef(namespace, name, created.metadata.uid)
        with pytest.raises(claims.ClaimError, match='not allocated'):
            claims.allocated_devices(claim, ref, inv.DRIVER, 'node')
    finally:
        api.delete_namespaced_resource_claim(name, namespace)
