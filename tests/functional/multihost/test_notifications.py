"""A region's whole life, heard from RabbitMQ and read in its history.

A listener on the cluster's RabbitMQ (oslo.messaging's notification
listener, topic ``notifications``) hears every transition of one region
and its device, through a scripted life: an ARQ created, bound with
programming, unbound, cleaned, deleted; a health fault and its repair;
a maintenance; a Kubernetes claim prepared and unprepared. Exactly one
notification per transition, each valid against its committed schema;
the device's history has the same transitions, in order. The
conductors' own /metrics ports count the bind, the job, the cleans and
the claim."""
import collections
import json
import os
import threading
import uuid

import jsonschema
import oslo_messaging as messaging
import pytest
from oslo_config import cfg

from cyborg_lite.api import microversion
from cyborg_lite.common import context
from cyborg_lite.notifications import events as notif
from tests.functional.multihost import cluster as cluster_mod

pytestmark = [pytest.mark.slow, pytest.mark.rabbitmq, pytest.mark.postgresql]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
AFU = 'c1b2a3d4e5f60718293a4b5c6d7e8f90'
HISTORY = {'OpenStack-API-Version': 'accelerator '
           + microversion.DEVICE_HISTORY}
V25 = {'OpenStack-API-Version': 'accelerator 2.5'}


class Heard:
    """The notifications a listener got, in arrival order."""

    def __init__(self):
        self.messages = []
        self.lock = threading.Lock()

    def _got(self, priority, publisher_id, event_type, payload):
        with self.lock:
            self.messages.append({'priority': priority,
                                  'publisher_id': publisher_id,
                                  'event_type': event_type,
                                  'payload': payload})

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self._got('INFO', publisher_id, event_type, payload)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        self._got('ERROR', publisher_id, event_type, payload)

    def about(self, *uuids):
        """Those whose payload names one of ``uuids``."""
        wanted = set(uuids)
        with self.lock:
            return [m for m in self.messages
                    if wanted & set(_uuids_in(m['payload']))]


def _uuids_in(payload):
    data = payload['cyborg_lite_object.data']
    return [v for k, v in data.items() if isinstance(v, str) and (
        k in ('uuid', 'claim_uid') or k.endswith('_uuid'))]


@pytest.fixture
def heard(cluster):
    conf = cfg.ConfigOpts()
    conf([], project='notification-listener')
    transport = messaging.get_notification_transport(
        conf, url=cluster.rabbit.url)
    got = Heard()
    listener = messaging.get_notification_listener(
        transport, [messaging.Target(topic=cluster_mod.NOTIFICATION_TOPIC)],
        [got], executor='threading', pool='lifecycle-test')
    listener.start()
    try:
        yield got
    finally:
        listener.stop()
        listener.wait()
        transport.cleanup()


def _schema(name):
    with open(os.path.join(ROOT, 'docs', 'notifications',
                           name + '.json')) as f:
        return json.load(f)


def _conductor_rpc(cluster):
    # NOTE: the process's CONF (oslo.messaging registers its tracing
    # options there only); the URL names the cluster's broker.
    transport = messaging.get_rpc_transport(cfg.CONF, url=cluster.rabbit.url)
    client = messaging.get_rpc_client(
        transport, messaging.Target(topic='cyborg-lite-conductor',
                                    version='1.6'), timeout=60)
    return transport, client


def _k8s_device_name(cluster, host, deployable_uuid):
    slices = cluster.call('GET', '/resource_slices/' + host, 200,
                          headers=V25).json()['resource_slices']
    for slice_ in slices:
        for device in slice_['spec']['devices']:
            attrs = device['attributes']
            if attrs.get('deployableUUID') == {'string': deployable_uuid}:
                return slice_['spec']['pool']['name'], device['name']
    raise LookupError(deployable_uuid)


def _history(cluster, device_uuid):
    return cluster.call('GET', '/devices/%s/history' % device_uuid, 200,
                        headers=HISTORY).json()['history']


def _wait_health(cluster, device_uuid, health):
    cluster.wait_for(lambda: cluster.query(
        'SELECT health FROM devices WHERE uuid = :u', u=device_uuid)[0][0]
        == health, 30, 'device %s %s' % (device_uuid, health))


def test_a_region_life_is_one_notification_per_transition(
        cluster, heard, arq_cleanup):
    region = [r for r in cluster.region_per_card()
              if r.host == cluster.k8s_host][0]
    deps = cluster.call('GET', '/deployables', 200,
                        params={'rp_uuid': region.rp_uuid}
                        ).json()['deployables']
    dep = deps[0]
    device_uuid = dep['parent_id'] if 'parent_id' in dep else None
    device_uuid = device_uuid or cluster.query(
        'SELECT d.uuid FROM devices d JOIN deployables p ON '
        'p.device_id = d.id WHERE p.uuid = :u', u=dep['uuid'])[0][0]
    # The card's provider offers each of its regions (they share its
    # PF); a bind takes the first free one, the first listed.
    siblings = {d['uuid'] for d in deps[1:]}
    before = len(_history(cluster, device_uuid))
    counted = cluster.conductor_samples()

    # Create, bind with programming, unbind (then the clean), delete.
    bitstream = cluster.upload_bitstream('mh-notify', AFU, 'public')
    cluster.create_profile('mh-notify', extra={
        'accel:bitstream_id': bitstream})
    arq = cluster.create_arqs('mh-notify')[0]['uuid']
    arq_cleanup.append(arq)
    instance = cluster.bind(arq, region)
    resolved = cluster.wait_resolved([arq], 60)[arq]
    assert resolved['state'] == 'Bound', resolved
    job = cluster.query(
        'SELECT uuid FROM programming_jobs WHERE arq_id = (SELECT id FROM '
        'accelerator_requests WHERE uuid = :u)', u=arq)[0][0]
    cluster.call('PATCH', '/accelerator_requests', 202, json={arq: [
        {'path': p, 'op': 'remove'} for p in
        ('/hostname', '/device_rp_uuid', '/instance_uuid')]})
    cluster.wait_for(lambda: cluster.arq(arq)['state'] == 'Unbound', 30,
                     'unbound')
    cluster.wait_cleaned()
    cluster.delete_arqs([arq])
    arq_cleanup.remove(arq)

    # A health fault and its repair: the driver reads garbage where the
    # region's function id should be, then the id again.
    path = cluster.afu_id_path(region)
    with open(path) as f:
        loaded = f.read()
    cluster.load_function(region, 'zz42-not-an-id')
    _wait_health(cluster, device_uuid, 'degraded')
    with open(path + '.tmp', 'w') as f:
        f.write(loaded)
    os.replace(path + '.tmp', path)
    _wait_health(cluster, device_uuid, 'healthy')

    # A maintenance.
    cluster.call('POST', '/devices/%s/disable' % device_uuid, 200)
    cluster.call('POST', '/devices/%s/enable' % device_uuid, 200)

    # A Kubernetes claim prepared and unprepared (the kubelet plugin's
    # calls to the conductor).
    pool, name = _k8s_device_name(cluster, region.host, dep['uuid'])
    claim_uid = str(uuid.uuid4())
    transport, rpc = _conductor_rpc(cluster)
    ctxt = context.get_admin_context().to_dict()
    try:
        rpc.call(ctxt, 'prepare_k8s_device', hostname=region.host,
                 request={'claim_uid': claim_uid, 'namespace': 'team-a',
                          'claim_name': 'fpga-claim', 'pool': pool,
                          'device': name, 'admin_access': False,
                          'config': None}, wait=30)
        rpc.call(ctxt, 'release_k8s_device', hostname=region.host,
                 claim_uid=claim_uid, device=name)
    finally:
        transport.cleanup()
    cluster.wait_cleaned()

    expected = [
        ('arq.create', arq), ('arq.bind.start', arq),
        ('programming_job.program.start', job),
        ('programming_job.update', job), ('programming_job.update', job),
        ('programming_job.update', job),
        ('programming_job.program.end', job), ('arq.bind.end', arq),
        ('arq.unbind', arq), ('deployable.clean.start', dep['uuid']),
        ('deployable.clean.end', dep['uuid']), ('arq.delete', arq),
        ('device.health_change', device_uuid),
        ('device.health_change', device_uuid),
        ('device.disable', device_uuid), ('device.enable', device_uuid),
        ('k8s_claim.prepare', claim_uid),
        ('k8s_claim.unprepare', claim_uid),
        ('deployable.clean.start', dep['uuid']),
        ('deployable.clean.end', dep['uuid'])]
    want = collections.Counter(notif.event_type(e) for e, _u in expected)

    def ours():
        # NOTE: a sibling region's clean names the same device.
        return [m for m in heard.about(arq, job, claim_uid, device_uuid,
                                       dep['uuid'])
                if not siblings & set(_uuids_in(m['payload']))]

    def all_heard():
        return collections.Counter(m['event_type'] for m in ours()) == want
    cluster.wait_for(all_heard, 30, 'every notification')
    got = ours()
    for message in got:
        payload = message['payload']
        name = payload['cyborg_lite_object.name']
        event = message['event_type'][len('accelerator.'):]
        assert notif.EVENTS[event][0] == name
        assert message['priority'] == notif.EVENTS[event][1]
        jsonschema.validate(payload, _schema(name))
        assert message['publisher_id'].split(':')[0] in (
            'cyborg-lite-api', 'cyborg-lite-conductor')
    by_event = {m['event_type']: m['payload']['cyborg_lite_object.data']
                for m in got}
    bound = by_event['accelerator.arq.bind.end']
    assert (bound['instance_uuid'], bound['device_uuid'],
            bound['deployable_uuid']) == (instance, device_uuid, dep['uuid'])
    claim = by_event['accelerator.k8s_claim.prepare']
    assert (claim['namespace'], claim['claim_name']) == ('team-a',
                                                         'fpga-claim')
    health = [m['payload']['cyborg_lite_object.data']['health'] for m in got
              if m['event_type'] == 'accelerator.device.health_change']
    assert sorted(health) == ['degraded', 'healthy']

    # The same transitions, in order, in the device's history (those of
    # no device, the ARQ's creation and its deletion once unbound, have
    # no row).
    everything = _history(cluster, device_uuid)[before:]
    rows = [r for r in everything if r['deployable_uuid'] not in siblings]
    assert [r['event'] for r in rows] == [
        e for e, _u in expected if e not in ('arq.create', 'arq.delete')]
    # The tenant had the card's PF, which reaches the siblings: after
    # each release every one of them was wiped too.
    for sibling in siblings:
        assert [r['event'] for r in everything
                if r['deployable_uuid'] == sibling] == [
            'deployable.clean.shared', 'deployable.clean.start',
            'deployable.clean.end'] * 2
    bound_row = rows[[r['event'] for r in rows].index('arq.bind.end')]
    assert bound_row['instance_uuid'] == instance
    claim_row = rows[[r['event'] for r in rows].index('k8s_claim.prepare')]
    assert (claim_row['namespace'], claim_row['claim_name']) == (
        'team-a', 'fpga-claim')

    # The conductors' own metrics ports counted the bind, its job, the
    # cleans (both releases', the siblings' too) and the claim (the
    # unbind is the API's own).
    now = cluster.conductor_samples()

    def counted_since(name, **labels):
        key = (name, tuple(sorted(labels.items())))
        return now[key] - counted[key]
    assert counted_since('cyborg_lite_bind_duration_seconds_count',
                         outcome='bound') == 1
    assert counted_since('cyborg_lite_programming_job_duration_seconds_count',
                         outcome='succeeded') == 1
    assert counted_since('cyborg_lite_cleaning_duration_seconds_count',
                         outcome='available') == 2 * (1 + len(siblings))
    assert counted_since('cyborg_lite_k8s_prepare_duration_seconds_count',
                         outcome='prepared') == 1
