"""The Kubernetes inventory sink: database rows -> ResourceSlices through
the real ``kubernetes`` client against the kube-apiserver stand-in,
loaded by its entry point as the conductor loads it."""
import logging

import sqlalchemy as sa

import pytest

from cyborg_lite.common import outage
from cyborg_lite.conductor import publishing
from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import k8s_claims
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from cyborg_lite.kubernetes import client as k8s_client
from cyborg_lite.kubernetes import sink as sink_mod
from tests import waiting
from tests.unit.conductor import bind_helpers as h
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import schemas

DRIVER = 'cyborg-lite.openstack.org'


@pytest.fixture
def apiserver():
    server = fake_apiserver.FakeKubeApiServer().start()
    server.add_node('k8s-node-1')
    yield server
    server.stop()


@pytest.fixture
def sink(db, conf, apiserver):
    conf.set_override('hosts', ['host1'], group='kubernetes')
    conf.set_override('node_names', {'host1': 'k8s-node-1'},
                      group='kubernetes')
    client = apiserver.api_client()
    yield sink_mod.KubernetesSink(client, conf)
    client.close()


def _devices(apiserver):
    (obj,) = apiserver.slices.values()
    return {d['name']: d for d in obj['spec']['devices']}


def _writes(apiserver, action):
    before = len(apiserver.writes)
    action()
    return len(apiserver.writes) - before


def test_the_entry_point_is_the_sink(conf, apiserver):
    assert publishing.load_sink_class('kubernetes') is \
        sink_mod.KubernetesSink
    # Not configured: left out, as Placement without [placement].
    assert sink_mod.KubernetesSink.from_conf(conf) is None


def test_publish_writes_the_host_once_and_unchanged_is_zero_writes(
        sink, apiserver):
    regions = h.make_card(hostname='host1', regions=2, sriov=True)
    result = sink.publish('host1')
    assert result.ok and result.sync.created == 1
    (obj,) = apiserver.slices.values()
    assert obj['spec']['nodeName'] == 'k8s-node-1'
    assert obj['spec']['pool']['name'] == 'k8s-node-1'
    assert schemas.schema_errors(obj) == []
    devices = _devices(apiserver)
    assert sorted(d['attributes']['deployableUUID']['string']
                  for d in devices.values()) == sorted(
        r['deployable_uuid'] for r in regions)
    # Named by the driver's region name, not the database's long one.
    assert all(name.startswith('fpga-0000-') and name[-7:-1] == 'region'
               for name in devices)
    assert not any('taints' in d for d in devices.values())
    for _ in range(3):
        assert _writes(apiserver, lambda: sink.publish('host1')) == 0


def test_every_unavailability_reason_is_a_taint(sink, apiserver):
    h.make_card(hostname='host1', regions=2, sriov=True)
    sink.publish('host1')
    with session.reader() as s:
        device_uuid = s.scalar(sa.select(models.Device.uuid))
    devices_db.set_status(device_uuid, 'maintaining')
    assert _writes(apiserver, lambda: sink.publish('host1')) == 1
    for device in _devices(apiserver).values():
        assert device['taints'][0]['key'] == DRIVER + '/maintaining'
        assert device['taints'][0]['effect'] == 'NoSchedule'
    devices_db.set_status(device_uuid, 'enabled')
    assert _writes(apiserver, lambda: sink.publish('host1')) == 1
    assert not any('taints' in d for d in _devices(apiserver).values())


def test_a_nova_bound_region_is_tainted_a_claimed_one_is_not(
        sink, apiserver):
    first, second = h.make_card(hostname='host1', regions=2, sriov=True)
    # An ARQ's bind holds the first region's handle.
    with session.writer() as s:
        s.execute(sa.update(models.AttachHandle)
                  .where(models.AttachHandle.deployable_id ==
                         first['deployable_id'])
                  .values(in_use=True))
    k8s_claims.claim(second['deployable_id'], 'c1aa0000-0000-4000-8000-'
                     '000000000001', 'ns', 'c', 'dev')
    sink.publish('host1')
    taints = {d['attributes']['deployableUUID']['string']: d.get('taints')
              for d in _devices(apiserver).values()}
    assert [(t['key'], t.get('value')) for t in
            taints[first['deployable_uuid']]] == [(DRIVER + '/in-use',
                                                   'nova')]
    # Kubernetes' own allocation: offered as it is.
    assert taints[second['deployable_uuid']] is None


def test_hosts_not_serving_kubernetes_are_not_published(sink, apiserver):
    h.make_card(hostname='host2', regions=1)
    result = sink.publish('host2')
    assert result.ok and result.sync is None
    assert apiserver.requests == []


def test_an_unreachable_api_leaves_the_host_pending(db, conf):
    conf.set_override('hosts', ['host1'], group='kubernetes')
    server = fake_apiserver.FakeKubeApiServer().start()
    client = server.api_client()
    server.stop()
    sink = sink_mod.KubernetesSink(client, conf)
    h.make_card(hostname='host1', regions=1)
    result = sink.publish('host1')
    assert not result.ok and 'ResourceSlice' in result.error
    assert list(sink.pending_hosts()) == ['host1']
    client.close()


def test_an_unreachable_api_is_logged_once_per_outage(
        db, conf, tmp_path, caplog, monkeypatch):
    """Every publish fails alike while the apiserver is away: one line when
    it starts, none per publish (nor urllib3's own retries), one when it
    ends; the services' client (from a kubeconfig) does not retry."""
    clock = waiting.ManualClock()
    monkeypatch.setattr(k8s_client, 'OUTAGE', outage.OutageLog(
        'Kubernetes API', k8s_client.LOG, interval=60, clock=clock))
    conf.set_override('hosts', ['host1'], group='kubernetes')
    server = fake_apiserver.FakeKubeApiServer().start()
    server.add_node('host1')
    client = k8s_client.new_api_client(
        server.write_kubeconfig(tmp_path / 'kubeconfig'))
    port = server.port
    server.stop()
    sink = sink_mod.KubernetesSink(client, conf)
    h.make_card(hostname='host1', regions=1)
    caplog.set_level(logging.INFO)
    for _ in range(24):        # the publishes of 15 s of an outage
        assert not sink.publish('host1').ok
        clock.now += 0.6
    complaints = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(complaints) == 1, [r.getMessage() for r in complaints]
    assert 'Kubernetes API unreachable' in complaints[0].getMessage()
    server.start(port=port)
    try:
        clock.now += 5
        assert sink.publish('host1').ok
        ended = [r.getMessage() for r in caplog.records
                 if r.levelno >= logging.WARNING][1:]
        assert len(ended) == 1 and 'reachable again' in ended[0], ended
    finally:
        server.stop()
        client.close()


def test_a_nova_bind_or_unbind_republishes_a_kubernetes_host(
        sink, apiserver):
    from cyborg_lite.db import arq_binds
    from cyborg_lite.db import arq_releases
    from cyborg_lite.db import arqs as arqs_db
    region = h.make_region(hostname='host1')
    publisher = publishing.Publisher([sink])
    publisher.publish_requested()
    sink.publish('host1')
    assert not any('taints' in d for d in _devices(apiserver).values())
    arq_uuid = h.make_arq()
    [started], _ = arq_binds.begin_binds({arq_uuid: h.binding(region)},
                                         'cond1')
    arq_binds.finish_bind(started, region['deployable_id'],
                          region['deployable_uuid'])
    # The bind asked for the host to be published: the slice follows.
    assert publisher.publish_requested() == ['host1']
    (device,) = _devices(apiserver).values()
    assert device['taints'][0]['key'] == DRIVER + '/in-use'
    arq_releases.unbind_all(arqs_db.ALL, [arq_uuid])
    assert publisher.publish_requested() == ['host1']
    # Free of Nova, and waiting for its wipe: a reason the sink knows
    # nothing about, published as a taint all the same.
    (device,) = _devices(apiserver).values()
    assert [t['key'] for t in device['taints']] == [
        DRIVER + '/pending-cleaning']
