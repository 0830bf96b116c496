"""ResourceSlices the kubelet wipes come back: the started Kubernetes sink
watches its slices (the real client's watch, against the apiserver
stand-in) and publishes a node again when someone else deletes or changes
them, with no inventory change and no restart; the watch resumes after an
apiserver restart and after a 410 Gone; our own writes cause nothing."""
import json
import logging
import threading

import pytest
import sqlalchemy as sa

from cyborg_lite.common import outage
from cyborg_lite.db import agents as agents_db
from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.kubernetes import client as k8s_client
from cyborg_lite.kubernetes import sink as sink_mod
from cyborg_lite.kubernetes import slice_sync
from tests import waiting
from tests.functional import programming_env as pe
from tests.functional.kubernetes import kubelet
from tests.unit.conductor import bind_helpers as h
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import inventories as inv

DRIVER = 'cyborg-lite.openstack.org'
HOST, NODE = 'host1', 'k8s-node-1'


@pytest.fixture
def apiserver():
    server = fake_apiserver.FakeKubeApiServer().start()
    server.add_node(NODE)
    server.add_node('k8s-node-2')
    yield server
    server.stop()


@pytest.fixture
def client(apiserver):
    client = apiserver.api_client()
    yield client
    client.close()


@pytest.fixture
def sink(conf, sqlite_db, apiserver, client):
    conf.set_override('hosts', [HOST], group='kubernetes')
    conf.set_override('node_names', {HOST: NODE}, group='kubernetes')
    h.make_card(hostname=HOST, regions=2, sriov=True)
    sink = sink_mod.KubernetesSink(client, conf, resync_delay=0.05)
    assert sink.publish(HOST).ok
    sink.start()
    watch, _ = sink._watching
    watch.backoff = (0.05, 0.2)
    assert waiting.until(lambda: apiserver.watches == 1)
    yield sink
    sink.stop()


def _devices(apiserver, node=NODE):
    return sorted(d['name'] for s in apiserver.slices.values()
                  if s['spec']['nodeName'] == node
                  for d in s['spec'].get('devices', []))


def test_a_kubelet_wipe_is_published_again(sink, apiserver, client):
    published = _devices(apiserver)
    assert len(published) == 2
    kubelet.wipe_resource_slices(client, NODE, DRIVER)
    assert _devices(apiserver) == []
    assert waiting.until(lambda: _devices(apiserver) == published)
    # Once: the wipe's events made one sync, which created the slice.
    assert [w for w in apiserver.writes if w[0] == 'POST'] == [
        ('POST', fake_apiserver.RESOURCE + '/resourceslices')] * 2


def test_a_change_by_someone_else_is_undone(sink, apiserver, client):
    (name,) = [n for n, s in apiserver.slices.items()
               if s['spec']['nodeName'] == NODE]
    published = apiserver.slices[name]['spec']['devices']
    # Someone edits the slice: drops a device.
    edited = apiserver.handle('GET', fake_apiserver.RESOURCE +
                              '/resourceslices/' + name, b'')[1]
    edited['spec']['devices'] = edited['spec']['devices'][:1]
    code, _ = apiserver.handle('PUT', fake_apiserver.RESOURCE +
                               '/resourceslices/' + name,
                               json.dumps(edited).encode())
    assert code == 200
    assert waiting.until(lambda: len(apiserver.slices[name]['spec'][
        'devices']) == len(published))


def test_our_own_writes_cause_no_resync(sink, apiserver, client,
                                        monkeypatch):
    _, resyncs = sink._watching
    seen = []
    monkeypatch.setattr(resyncs, 'changed', seen.append)
    # Our own changes: a device disabled (one update of the slice), then
    # a new card (a new generation: every slice written again).
    with session.reader() as s:
        device_uuid = s.scalar(sa.select(models.Device.uuid))
    devices_db.set_status(device_uuid, 'maintaining')
    assert sink.publish(HOST).sync.updated == 1
    h.make_card(hostname=HOST, regions=1)
    assert sink.publish(HOST).sync.writes >= 1
    # Another node's slices, which this conductor does not publish.
    slice_sync.SliceSync(client, DRIVER).sync(
        inv.host('k8s-node-2', cards=1, regions=1))
    # Then one of ours touched by someone else: once its event is seen,
    # every earlier one was.
    (name,) = [n for n, s in apiserver.slices.items()
               if s['spec']['nodeName'] == NODE]
    apiserver.touch_slice(name)
    assert waiting.until(lambda: seen)
    assert seen == [HOST]


def test_the_watch_resumes_after_an_apiserver_restart(sink, apiserver,
                                                      client):
    published = _devices(apiserver)
    port = apiserver.port
    apiserver.stop()
    apiserver.start(port=port)
    assert waiting.until(lambda: apiserver.watches == 1)
    kubelet.wipe_resource_slices(client, NODE, DRIVER)
    assert waiting.until(lambda: _devices(apiserver) == published)


def test_a_change_missed_while_the_history_was_compacted_is_seen(
        sink, apiserver):
    published = _devices(apiserver)
    port = apiserver.port
    apiserver.stop()
    # While it is down, the kubelet's wipe (straight into the state, with
    # its events), and etcd compacts them away: the watch's version is
    # gone (410), the new list tells.
    apiserver.handle('DELETE', fake_apiserver.RESOURCE + '/resourceslices?'
                     'fieldSelector=spec.nodeName%3D' + NODE, b'')
    apiserver.compact()
    opened = apiserver.watches_opened
    apiserver.start(port=port)
    assert waiting.until(lambda: _devices(apiserver) == published)
    assert apiserver.watches_opened > opened


def test_a_watch_gone_410_lists_again_and_sees_what_it_missed(
        sink, apiserver, caplog):
    published = _devices(apiserver)
    caplog.set_level(logging.INFO)
    # The server ends the watch as its timeout does; the new one waits
    # while the kubelet's wipe happens and etcd compacts it away: it asks
    # from a version that is gone.
    apiserver.end_watches(hold=True)
    assert waiting.until(lambda: apiserver.watches == 0)
    apiserver.handle('DELETE', fake_apiserver.RESOURCE + '/resourceslices?'
                     'fieldSelector=spec.nodeName%3D' + NODE, b'')
    apiserver.compact()
    apiserver.release_watches()
    assert waiting.until(lambda: _devices(apiserver) == published)
    assert any('watch expired' in r.getMessage() for r in caplog.records)
    assert not any(r.levelno >= logging.WARNING for r in caplog.records)


def test_a_wipe_waits_for_a_heartbeat_of_a_known_agent(
        sink, apiserver, client, monkeypatch):
    agents_db.heartbeat(HOST)
    looks = []

    def beat(hostname):
        looks.append(hostname)
        return real_beat(hostname)
    real_beat = sink_mod._agent_beat
    _, resyncs = sink._watching
    monkeypatch.setattr(resyncs, 'beat_of', beat)
    published = _devices(apiserver)
    kubelet.wipe_resource_slices(client, NODE, DRIVER)
    # Looked when the wipe was seen, and again at least twice since: no
    # new heartbeat (the agent may be dead), so nothing published.
    assert waiting.until(lambda: len(looks) >= 3)
    assert _devices(apiserver) == []
    agents_db.heartbeat(HOST)
    assert waiting.until(lambda: _devices(apiserver) == published)


def test_an_unreachable_apiserver_is_said_once_by_the_watch(
        sink, apiserver, monkeypatch, caplog):
    log = outage.OutageLog('Kubernetes API', k8s_client.LOG, interval=60)
    monkeypatch.setattr(k8s_client, 'OUTAGE', log)
    opened = apiserver.watches_opened
    apiserver.stop()
    caplog.set_level(logging.WARNING)
    # Several tries of the watch, each refused.
    assert waiting.until(lambda: log.failures >= 4)
    port = apiserver.port
    apiserver.start(port=port)
    assert waiting.until(lambda: apiserver.watches_opened > opened)
    assert len([r for r in caplog.records
                if r.levelno >= logging.WARNING and
                'unreachable' in r.getMessage()]) == 1


def test_a_conductor_publishes_a_wiped_node_again(conf, sqlite_db, tmp_path,
                                                  apiserver, client):
    """The whole path: a conductor with the Kubernetes sink (from its
    options, as cyborg-lite-conductor builds it) and an agent with the
    fake driver; the kubelet wipes the node's slices; the conductor
    publishes them again, nothing else changed, nothing restarted."""
    pe.configure(conf, tmp_path)
    conf.set_override('heartbeat_interval', 1, group='agent')
    conf.set_override('inventory_sinks', ['kubernetes'], group='conductor')
    for name, value in (('hosts', [pe.HOST]), ('node_names', {pe.HOST: NODE}),
                        ('kubeconfig', apiserver.write_kubeconfig(
                            tmp_path / 'kubeconfig'))):
        conf.set_override(name, value, group='kubernetes')
    env = pe.Env(conf).start()
    try:
        assert waiting.until(lambda: len(_devices(apiserver)) == 2)
        published = _devices(apiserver)
        assert waiting.until(lambda: apiserver.watches == 1)
        kubelet.wipe_resource_slices(client, NODE, DRIVER)
        assert waiting.until(lambda: _devices(apiserver) == published,
                             timeout=30)
    finally:
        env.stop()
    # The conductor's stop ended its watch.
    assert not [t for t in threading.enumerate()
                if t.name.startswith('resourceslice-')]
