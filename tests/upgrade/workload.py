"""What the rolling upgrade keeps and what it does at every step.

Each agent host has three cards (three providers in Placement; a bind or
a claim of a card's region holds the card's PF):

* card 0: an ARQ bound before the upgrade, kept through it (``kept``);
* card 1: each step's work, on every host: program a region, bind an
  ARQ, unbind it, wait for the clean (``exercise``);
* card 2: on the first host a region programmed before the upgrade, on
  the Kubernetes host a claim prepared before it (through the
  conductor's RPC, as the kubelet plugin calls it), both kept.

``verify_kept`` says nothing of those was lost: the same ARQs Bound to
the same handles, the region still running what it was loaded with, the
claim still holding its device, no handle held twice.
"""
import threading
import uuid

import oslo_messaging as messaging
import requests
from oslo_config import cfg

from cyborg_lite.common import context
from tests.functional.multihost import cluster as multihost
from tests.unit.bitstreams import builders

V24 = {'OpenStack-API-Version': 'accelerator 2.4'}
V25 = {'OpenStack-API-Version': 'accelerator 2.5'}
ENDED = ('succeeded', 'failed', 'cancelled')
KEPT_AFU = '7a6e0000-1b2c-4d5e-8f90-a1b2c3d4e5f6'
# Each step programs the other of these two, so every step loads the
# region anew.
STEP_AFUS = ('7a6e0001-1b2c-4d5e-8f90-a1b2c3d4e5f6',
             '7a6e0002-1b2c-4d5e-8f90-a1b2c3d4e5f6')
ARQ_KEPT = ('uuid', 'state', 'hostname', 'device_rp_uuid',
            'instance_uuid', 'attach_handle_uuid', 'attach_handle_info')


class Workload:

    def __init__(self, cluster):
        self.cluster = cluster
        self.cards = {}
        for region in cluster.region_per_card():
            self.cards.setdefault(region.host, []).append(region)
        self.kept_arqs, self.step = {}, 0
        self.claim = None

    # --- before the upgrade ----------------------------------------------

    def seed(self):
        c = self.cluster
        c.create_profile('upgrade')
        self.kept_bitstream = c.upload_bitstream('upgrade-kept', KEPT_AFU)
        self.step_bitstreams = [
            (c.upload_bitstream('upgrade-step-%d' % i, afu), afu)
            for i, afu in enumerate(STEP_AFUS)]
        hosts = sorted(self.cards)
        self.kept_arqs = dict(zip(hosts, self._bind(
            [self.cards[host][0] for host in hosts])))
        self.kept_region = self._first_deployable(
            self.cards[c.agent_hosts[0]][2])
        self._program([self.kept_region], self.kept_bitstream, KEPT_AFU)
        self.claim = self._prepare_claim(self.cards[c.k8s_host][2])

    # --- at every step ---------------------------------------------------

    def exercise(self):
        """Program, bind, unbind and clean on every agent (card 1), the
        hosts side by side."""
        c = self.cluster
        bitstream, afu = self.step_bitstreams[self.step % 2]
        self.step += 1
        cards = [self.cards[host][1] for host in c.agent_hosts]
        self._program([self._first_deployable(card) for card in cards],
                      bitstream, afu)
        arqs = self._bind(cards)
        c.delete_arqs([arq['uuid'] for arq in arqs])
        c.wait_cleaned()
        for card in cards:
            self._wait_offered(card)

    def verify_kept(self):
        c = self.cluster
        for host, kept in self.kept_arqs.items():
            now = c.arq(kept['uuid'])
            assert {k: now[k] for k in ARQ_KEPT} == kept, (host, now, kept)
        assert c.handle_double_use() == []
        assert self._hardware(self.kept_region) == builders.hex32(KEPT_AFU)
        assert c.call('GET', '/deployables/' + self.kept_region['uuid'],
                      200).json()['function_id'] == builders.hex32(KEPT_AFU)
        held = c.query('SELECT device_name FROM k8s_claim_devices WHERE '
                       'claim_uid = :u', u=self.claim['claim_uid'])
        assert [r[0] for r in held] == [self.claim['device']], held

    # --- after the upgrade -------------------------------------------------

    def release_kept(self):
        """Unbind the kept ARQs and release the claim on the new code:
        what the old release held frees and cleans on the new."""
        c = self.cluster
        c.delete_arqs([a['uuid'] for a in self.kept_arqs.values()])
        conductor_rpc(c, 'release_k8s_device', hostname=c.k8s_host,
                  claim_uid=self.claim['claim_uid'],
                  device=self.claim['device'])
        c.wait_cleaned()
        assert c.query('SELECT claim_uid FROM k8s_claim_devices') == []
        assert c.wait_for_free_regions(60), c.reserved_regions()

    # --- helpers -----------------------------------------------------------

    def _bind(self, cards):
        """Bind one new ARQ to each of ``cards``; [the Bound ARQs]."""
        c = self.cluster
        arqs = c.create_arqs('upgrade', len(cards))
        for arq, card in zip(arqs, cards):
            c.bind(arq['uuid'], card)
        resolved = c.wait_resolved([arq['uuid'] for arq in arqs], 60)
        bound = []
        for arq, card in zip(arqs, cards):
            now = resolved[arq['uuid']]
            assert now['state'] == 'Bound', now
            assert now['device_rp_uuid'] == card.rp_uuid, now
            bound.append({k: now[k] for k in ARQ_KEPT})
        return bound

    def _first_deployable(self, card):
        deps = self.cluster.call('GET', '/deployables', 200, params={
            'rp_uuid': card.rp_uuid}).json()['deployables']
        return min(deps, key=lambda d: d['name'])

    def _hardware(self, deployable):
        """What the deployable's region runs, read from its agent's
        simulated tree (the name says the host and the region)."""
        host = deployable['name'].split('_')[0]
        with open(self.cluster.afu_id_path(multihost.Region(
                host, deployable['rp_uuid'], deployable['name']))) as f:
            return f.read().strip()

    def _program(self, deployables, bitstream_uuid, afu):
        """Program each of ``deployables`` with the bitstream (whose image
        loads ``afu``); every job succeeds and the hardware runs it."""
        c = self.cluster
        jobs = [c.call('POST', '/programs', 202, headers=V24, json={
            'deployable_uuid': deployable['uuid'],
            'bitstream_uuid': bitstream_uuid}).json()['uuid']
            for deployable in deployables]
        for job_uuid in jobs:
            ended = self._ended(job_uuid)
            assert (ended['state'], ended['error']) == ('succeeded',
                                                        None), ended
        for deployable in deployables:
            assert self._hardware(deployable) == builders.hex32(afu)

    def _ended(self, job_uuid):
        def ended():
            job = self.cluster.job(job_uuid)
            return job if job['state'] in ENDED else None
        return self.cluster.wait_for(ended, 60, 'job %s ending' % job_uuid)

    def _wait_offered(self, card):
        def offered():
            inv = self.cluster.placement_get(
                '/resource_providers/%s/inventories' % card.rp_uuid)
            return inv['inventories']['FPGA']['reserved'] == 0
        self.cluster.wait_for(offered, 60, '%s offered again' % card.name)

    def _k8s_device(self, host, deployable_uuid):
        slices = self.cluster.call('GET', '/resource_slices/' + host, 200,
                                   headers=V25).json()['resource_slices']
        for slice_ in slices:
            for device in slice_['spec']['devices']:
                if device['attributes'].get('deployableUUID') == {
                        'string': deployable_uuid}:
                    return slice_['spec']['pool']['name'], device['name']
        raise LookupError(deployable_uuid)

    def _prepare_claim(self, card):
        deployable = self._first_deployable(card)
        pool, device = self._k8s_device(card.host, deployable['uuid'])
        claim = {'claim_uid': str(uuid.uuid4()), 'namespace': 'team-a',
                 'claim_name': 'fpga-claim', 'pool': pool, 'device': device,
                 'admin_access': False, 'config': None}
        conductor_rpc(self.cluster, 'prepare_k8s_device',
                      hostname=card.host, request=claim, wait=30)
        return claim


def conductor_rpc(cluster, method, version='1.6', **kwargs):
    """A call to the conductors' topic at ``version``, as the kubelet
    plugin (1.6) or an agent makes it (rpc/conductor_client.py)."""
    transport = messaging.get_rpc_transport(cfg.CONF, url=cluster.rabbit.url)
    client = messaging.get_rpc_client(
        transport, messaging.Target(topic='cyborg-lite-conductor',
                                    version=version), timeout=60)
    try:
        return client.call(context.get_admin_context().to_dict(),
                           method, **kwargs)
    finally:
        transport.cleanup()


class ApiLoop:
    """A client hitting the API throughout, counting statuses by step:
    GETs of the lists an operator and Nova read."""

    PATHS = ('/accelerator_requests', '/deployables', '/device_profiles')

    def __init__(self, cluster):
        self.cluster = cluster
        self.phase = 'old'
        self.seen = []  # (phase, path, status or exception name)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(30)

    def _run(self):
        session = requests.Session()
        i = 0
        while not self._stop.is_set():
            path = self.PATHS[i % len(self.PATHS)]
            i += 1
            try:
                status = session.get(
                    self.cluster.api + path, timeout=30,
                    headers={'OpenStack-API-Version': 'accelerator 2.3'}
                ).status_code
            except requests.ConnectionError as exc:
                status = type(exc).__name__
            self.seen.append((self.phase, path, status))
            self._stop.wait(0.1)
        session.close()

    def server_errors(self):
        return [s for s in self.seen
                if isinstance(s[2], int) and s[2] >= 500]

    def refused_outside(self, phase):
        """Requests that found no API, but in ``phase`` (the API's own
        restart: one API process here, where a cloud has several behind
        a load balancer)."""
        return [s for s in self.seen
                if not isinstance(s[2], int) and s[0] != phase]

    def answered(self, phase):
        return [s for s in self.seen if s[0] == phase and s[2] == 200]
