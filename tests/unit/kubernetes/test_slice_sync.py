"""The ResourceSlice sync through the real ``kubernetes`` client against the
kube-apiserver stand-in: writes only differences, generation rules, 409s,
removals, splitting."""
import json

import pytest

from cyborg_lite.kubernetes import client as k8s_client
from cyborg_lite.kubernetes import slice_sync
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import inventories as inv

DRIVER = inv.DRIVER


@pytest.fixture
def apiserver():
    server = fake_apiserver.FakeKubeApiServer().start()
    server.add_node('node-1')
    server.add_node('node-2')
    yield server
    server.stop()


@pytest.fixture
def sync(apiserver):
    client = apiserver.api_client()
    yield slice_sync.SliceSync(client, DRIVER)
    client.close()


def _slices(apiserver, node='node-1'):
    return sorted((s for s in apiserver.slices.values()
                   if s['spec']['nodeName'] == node),
                  key=lambda s: s['metadata']['name'])


def _writes_during(apiserver, action):
    before = len(apiserver.writes)
    result = action()
    return result, apiserver.writes[before:]


def test_first_sync_creates_the_slice_owned_by_the_node(apiserver, sync):
    result, writes = _writes_during(apiserver,
                                    lambda: sync.sync(inv.host()))
    assert [w[0] for w in writes] == ['POST']
    assert (result.created, result.writes, result.generation) == (1, 1, 1)
    (stored,) = _slices(apiserver)
    assert stored['spec']['pool'] == {'name': 'node-1', 'generation': 1,
                                      'resourceSliceCount': 1}
    assert len(stored['spec']['devices']) == 4
    assert stored['metadata']['ownerReferences'] == [{
        'apiVersion': 'v1', 'kind': 'Node', 'name': 'node-1',
        'uid': apiserver.nodes['node-1']['metadata']['uid'],
        'controller': True}]
    assert apiserver.refused == []


def test_unchanged_sync_writes_nothing(apiserver, sync):
    host = inv.change_region(inv.host(), 0, 0, unavailable=('cleaning',))
    sync.sync(host)
    # The stand-in filled in the taint's timeAdded: still no difference.
    assert 'timeAdded' in _slices(apiserver)[0]['spec']['devices'][0][
        'taints'][0]
    result, writes = _writes_during(apiserver, lambda: sync.sync(host))
    assert writes == [] and result.writes == 0 and result.generation == 1


def test_one_changed_device_is_one_update_at_the_same_generation(
        apiserver, sync):
    sync.sync(inv.host())
    version = _slices(apiserver)[0]['metadata']['resourceVersion']
    changed = inv.change_region(inv.host(), 1, 0, function_id='f' * 32)
    result, writes = _writes_during(apiserver, lambda: sync.sync(changed))
    assert [w[0] for w in writes] == ['PUT'] and result.updated == 1
    (stored,) = _slices(apiserver)
    assert stored['metadata']['resourceVersion'] != version
    assert stored['spec']['pool']['generation'] == 1
    device = stored['spec']['devices'][2]
    assert device['name'] == 'fpga-0000-5f-00-0-region0'
    assert device['attributes']['functionID'] == {'string': 'f' * 32}


def test_taint_time_is_kept_when_the_slice_is_updated(apiserver, sync):
    host = inv.change_region(inv.host(), 0, 0, unavailable=('cleaning',))
    sync.sync(host)
    first = _slices(apiserver)[0]['spec']['devices'][0]['taints'][0]
    first['timeAdded'] = '2020-01-01T00:00:00Z'   # an earlier day
    sync.sync(inv.change_region(host, 1, 1, local_memory_mb=8192))
    kept = _slices(apiserver)[0]['spec']['devices'][0]['taints'][0]
    assert kept['timeAdded'] == '2020-01-01T00:00:00Z'


def test_conflict_is_reread_and_retried(apiserver, sync):
    sync.sync(inv.host())
    name = _slices(apiserver)[0]['metadata']['name']
    # Another writer changes the slice between our list and our update.
    apiserver.before_write = lambda server: server.touch_slice(name)
    changed = inv.change_region(inv.host(), 0, 1, bitstream_id='b' * 36)
    result, writes = _writes_during(apiserver, lambda: sync.sync(changed))
    assert [w[0] for w in writes] == ['PUT', 'PUT']
    assert [code for code, _ in apiserver.refused] == [409]
    assert (result.conflicts, result.updated, result.writes) == (1, 1, 2)
    device = _slices(apiserver)[0]['spec']['devices'][1]
    assert device['attributes']['bitstreamID'] == {'string': 'b' * 36}


def test_endless_conflicts_give_up_with_an_error(apiserver):
    client = apiserver.api_client()
    sync = slice_sync.SliceSync(client, DRIVER, conflict_retries=2)
    sync.sync(inv.host())
    name = _slices(apiserver)[0]['metadata']['name']

    def rival(server):
        server.touch_slice(name)
        server.before_write = rival
    apiserver.before_write = rival
    with pytest.raises(k8s_client.KubernetesApiError, match='3 tries'):
        sync.sync(inv.change_region(inv.host(), 0, 0, unavailable=('cleaning',)))
    apiserver.before_write = None
    client.close()


def test_removed_devices_and_slices_disappear(apiserver, sync):
    sync.sync(inv.host(cards=13, regions=10))               # 3 slices
    assert len(_slices(apiserver)) == 3
    result, writes = _writes_during(
        apiserver, lambda: sync.sync(inv.host(cards=2, regions=2)))
    stored = _slices(apiserver)
    assert len(stored) == 1 and len(stored[0]['spec']['devices']) == 4
    assert stored[0]['spec']['pool']['resourceSliceCount'] == 1
    assert sorted(w[0] for w in writes) == ['DELETE', 'DELETE', 'PUT']
    result, writes = _writes_during(
        apiserver, lambda: sync.sync(inv.host(cards=0)))
    assert _slices(apiserver) == [] and [w[0] for w in writes] == ['DELETE']


def test_growing_the_pool_moves_the_generation_on_every_slice(apiserver,
                                                              sync):
    sync.sync(inv.host(cards=6, regions=10))                # 60: 1 slice
    result = sync.sync(inv.host(cards=7, regions=10))       # 70: 2 slices
    stored = _slices(apiserver)
    assert [len(s['spec']['devices']) for s in stored] == [64, 6]
    assert {(s['spec']['pool']['generation'],
             s['spec']['pool']['resourceSliceCount']) for s in stored} == {
        (2, 2)}
    assert (result.created, result.updated, result.generation) == (1, 1, 2)


def test_change_in_two_slices_moves_the_generation(apiserver, sync):
    host = inv.host(cards=13, regions=10)
    sync.sync(host)
    changed = inv.change_region(host, 0, 0, unavailable=('cleaning',))
    changed = inv.change_region(changed, 12, 9, unavailable=('cleaning',))
    result = sync.sync(changed)
    assert result.updated == 3 and result.generation == 2
    assert {s['spec']['pool']['generation']
            for s in _slices(apiserver)} == {2}


def test_stale_generation_slice_is_removed(apiserver, sync):
    sync.sync(inv.host(cards=13, regions=10))
    # A leftover of an older generation under a name we no longer use.
    leftover = dict(_slices(apiserver)[0])
    leftover['metadata'] = {'name': 'node-1-old-slice'}
    leftover['spec'] = dict(leftover['spec'],
                            pool=dict(leftover['spec']['pool'], generation=0))
    apiserver.handle('POST', fake_apiserver.RESOURCE + '/resourceslices',
                     json.dumps(leftover).encode())
    result = sync.sync(inv.host(cards=13, regions=10))
    assert result.deleted == 1 and result.writes == 1
    assert 'node-1-old-slice' not in apiserver.slices


def test_other_nodes_and_drivers_are_left_alone(apiserver, sync):
    sync.sync(inv.host('node-2'))
    other = slice_sync.SliceSync(apiserver.api_client(), 'other.example.com')
    other.sync(inv.host('node-1'))
    sync.sync(inv.host('node-1'))
    sync.sync(inv.host('node-1', cards=0))
    assert {(s['spec']['nodeName'], s['spec']['driver'])
            for s in apiserver.slices.values()} == {
        ('node-2', DRIVER), ('node-1', 'other.example.com')}


def test_missing_node_is_an_error_and_writes_nothing(apiserver, sync):
    host = inv.host('node-9')
    with pytest.raises(k8s_client.KubernetesApiError, match='node-9'):
        sync.sync(host)
    assert apiserver.writes == []


def test_every_write_passed_the_schemas(apiserver, sync):
    """The stand-in refuses (422) what fails the 1.34-1.37 schemas or the
    apiserver's rules; a whole session of syncs gets no refusal."""
    host = inv.host(cards=13, regions=10, with_gpu=True)
    sync.sync(host)
    sync.sync(inv.change_all_regions(host, 3, unavailable=('unhealthy',)))
    sync.sync(inv.change_region(host, 5, 5, bound_to_nova=True))
    assert apiserver.refused == []
    assert len(apiserver.writes) >= 5


def test_unreachable_apiserver_is_a_clear_error():
    server = fake_apiserver.FakeKubeApiServer().start()
    client = server.api_client()
    server.stop()
    sync = slice_sync.SliceSync(client, DRIVER)
    with pytest.raises(k8s_client.KubernetesApiError, match='list'):
        sync.sync(inv.host())
    client.close()
