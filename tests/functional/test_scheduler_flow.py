"""The scheduler flow end to end, with this test as the Nova-like scheduler.

The all-in-one runs as a subprocess (real Placement, API, conductor, an
agent with the fake driver: 2 cards x 2 regions of 4096 MiB, each card's
regions reached through its PF, so each card is one accelerator). The test
talks to it only over HTTP, as Nova does: device profile → allocation
candidates → allocation → ARQs → bind → Bound → unbind → delete → the
region wiped (cleaning) and offered again.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import uuid

import pytest
import requests

from tests import fork_server
from tests import servers
from tests import waiting
from tests.functional import nova_order

pytestmark = pytest.mark.xdist_group('all_in_one')

REGION_TYPE = '9346116d5a7d4b3a9b1b8e5b5d7a1c2e'
ACCEL = {'OpenStack-API-Version': 'accelerator 2.3',
         'Content-Type': 'application/json'}
PLACEMENT = {'X-Auth-Token': 'admin',
             'OpenStack-API-Version': 'placement 1.39',
             'Content-Type': 'application/json'}


class AllInOne:
    def __init__(self, state_dir, *extra_args):
        self.api_port = servers.free_port()
        self.placement_port = servers.free_port()
        self.api = 'http://127.0.0.1:%d/v2' % self.api_port
        self.placement = 'http://127.0.0.1:%d' % self.placement_port
        self.log = open(os.path.join(state_dir, 'aio.log'), 'w+')
        self.proc = fork_server.popen(
            [sys.executable, '-m', 'cyborg_lite.cmd.all_in_one',
             '--state-dir', state_dir, '--api-port', str(self.api_port),
             '--placement-port', str(self.placement_port)]
            + list(extra_args), stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout=90, cards=2):
        servers.wait_for_port(self.api_port, timeout, proc=self.proc)
        # NOTE: a provider is listed before its inventory is written;
        # ready is when every card offers its FPGA.
        if not waiting.until(lambda: self._fpgas_offered() == cards,
                             timeout, interval=0.2):
            raise TimeoutError('cards never reached Placement:\n' +
                               self.read_log())

    def _fpgas_offered(self):
        rps = requests.get(self.placement + '/resource_providers',
                           headers=PLACEMENT).json()['resource_providers']
        return sum(
            requests.get(self.placement + '/resource_providers/%s/inventories'
                         % r['uuid'], headers=PLACEMENT).json()[
                'inventories'].get('FPGA', {}).get('total', 0)
            for r in rps)

    def read_log(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-5000:]

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        try:
            # As tests/functional/all_in_one/process.py: a loaded machine
            # may take more than 30 s to drain the services' threads.
            return self.proc.wait(60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.log.close()


def running(state_dir, *extra_args):
    """An AllInOne, yielded once ready; it must exit 0 when stopped."""
    server = AllInOne(str(state_dir), *extra_args)
    try:
        server.wait_ready()
        yield server
    finally:
        assert server.stop() == 0


@pytest.fixture(scope='module')
def aio(tmp_path_factory):
    yield from running(tmp_path_factory.mktemp('aio'))


def _profile(aio, name, memory_mb, extra=None):
    group = {'resources:FPGA': '1',
             'resources:CUSTOM_FPGA_LOCAL_MEMORY_MB': str(memory_mb),
             'trait:CUSTOM_FPGA_REGION_%s' % REGION_TYPE.upper(): 'required'}
    group.update(extra or {})
    resp = requests.post(aio.api + '/device_profiles', headers=ACCEL,
                         json=[{'name': name, 'groups': [group]}])
    assert resp.status_code == 201, resp.text
    return requests.get(aio.api + '/device_profiles/' + name,
                        headers=ACCEL).json()['device_profile']


def _candidates(aio, profile):
    """Placement query with granular groups, as Nova builds it."""
    params = {}
    for i, group in enumerate(profile['groups'], start=1):
        resources = ['%s:%s' % (k.split(':', 1)[1], v)
                     for k, v in sorted(group.items())
                     if k.startswith('resources:')]
        required = [k.split(':', 1)[1] for k, v in sorted(group.items())
                    if k.startswith('trait:') and v == 'required']
        params['resources%d' % i] = ','.join(resources)
        if required:
            params['required%d' % i] = ','.join(required)
    resp = requests.get(aio.placement + '/allocation_candidates',
                        headers=PLACEMENT, params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()['allocation_requests']


def _create_arqs(aio, profile_name):
    resp = requests.post(aio.api + '/accelerator_requests', headers=ACCEL,
                         json={'device_profile_name': profile_name})
    assert resp.status_code == 201, resp.text
    return resp.json()['arqs']


def _bind(aio, arq_uuid, rp_uuid, instance):
    patch = {arq_uuid: [
        {'path': '/hostname', 'op': 'add', 'value': 'aio-host'},
        {'path': '/device_rp_uuid', 'op': 'add', 'value': rp_uuid},
        {'path': '/instance_uuid', 'op': 'add', 'value': instance}]}
    resp = requests.patch(aio.api + '/accelerator_requests', headers=ACCEL,
                          json=patch)
    assert resp.status_code == 202, resp.text


def _arq(aio, arq_uuid):
    return requests.get(aio.api + '/accelerator_requests/' + arq_uuid,
                        headers=ACCEL).json()


def _wait_resolved(aio, arq_uuid, timeout=30):
    return waiting.read_until(
        lambda: _arq(aio, arq_uuid),
        lambda arq: arq['state'] in ('Bound', 'BindFailed'), timeout,
        interval=0.1, what='ARQ %s resolved' % arq_uuid)


def _region_rp(candidate):
    (rp_uuid,) = candidate['mappings']['1']
    return rp_uuid


def test_schedule_bind_unbind_delete(aio):
    profile = _profile(aio, 'fpga-4g', 4096)
    candidates = _candidates(aio, profile)
    assert len(candidates) == 2   # every card fits
    instance = str(uuid.uuid4())
    nova_order.Nova(aio.api, aio.placement, None).claim(instance,
                                                        candidates[0])
    rp_uuid = _region_rp(candidates[0])

    (arq,) = _create_arqs(aio, 'fpga-4g')
    assert arq['state'] == 'Initial'
    _bind(aio, arq['uuid'], rp_uuid, instance)
    bound = _wait_resolved(aio, arq['uuid'])
    assert bound['state'] == 'Bound', bound
    assert bound['device_rp_uuid'] == rp_uuid
    assert bound['instance_uuid'] == instance
    assert bound['attach_handle_type'] == 'PCI'
    assert set(bound['attach_handle_info']) >= {'domain', 'bus', 'device',
                                                'function'}
    listed = requests.get(aio.api + '/accelerator_requests',
                          headers=ACCEL, params={'instance': instance})
    assert [a['uuid'] for a in listed.json()['arqs']] == [arq['uuid']]

    unbind = {arq['uuid']: [{'path': p, 'op': 'remove'} for p in
                            ('/hostname', '/device_rp_uuid',
                             '/instance_uuid')]}
    resp = requests.patch(aio.api + '/accelerator_requests', headers=ACCEL,
                          json=unbind)
    assert resp.status_code == 202, resp.text
    _wait_state(aio, arq['uuid'], 'Unbound')
    resp = requests.delete(aio.api + '/accelerator_requests',
                           headers=ACCEL, params={'instance': instance})
    assert resp.status_code == 204, resp.text
    requests.delete(aio.placement + '/allocations/' + instance,
                    headers=PLACEMENT)

    # The region is wiped for the next tenant, then offered again.
    _wait_cleaned(aio, rp_uuid)
    # The handle is free again: a new ARQ binds to the same region.
    (again,) = _create_arqs(aio, 'fpga-4g')
    other = str(uuid.uuid4())
    _bind(aio, again['uuid'], rp_uuid, other)
    assert _wait_resolved(aio, again['uuid'])['state'] == 'Bound'
    requests.delete(aio.api + '/accelerator_requests', headers=ACCEL,
                    params={'instance': other})


def _wait_cleaned(aio, rp_uuid, timeout=30):
    """The regions the provider offers are available again, and Placement
    offers it (reserved back to 0)."""
    v25 = dict(ACCEL, **{'OpenStack-API-Version': 'accelerator 2.5'})
    waiting.read_until(
        lambda: requests.get(aio.api + '/deployables', headers=v25,
                             params={'rp_uuid': rp_uuid}
                             ).json()['deployables'],
        lambda deps: all(d['device_state'] == 'available' for d in deps),
        timeout, interval=0.1, what='regions of %s cleaned' % rp_uuid)
    waiting.read_until(
        lambda: requests.get(
            aio.placement + '/resource_providers/%s/inventories' % rp_uuid,
            headers=PLACEMENT).json()['inventories'],
        lambda inv: all(i['reserved'] == 0 for i in inv.values()), timeout,
        interval=0.1, what='region %s offered again' % rp_uuid)


def _wait_state(aio, arq_uuid, state, timeout=30):
    return waiting.read_until(
        lambda: _arq(aio, arq_uuid), lambda arq: arq['state'] == state,
        timeout, interval=0.1, what='ARQ %s %s' % (arq_uuid, state))


def test_request_no_host_can_satisfy_gets_no_candidates(aio):
    profile = _profile(aio, 'fpga-8g', 8192)
    assert _candidates(aio, profile) == []


def test_two_concurrent_binds_to_one_region_one_wins(aio):
    profile = _profile(aio, 'fpga-race', 4096)
    rp_uuid = _region_rp(_candidates(aio, profile)[-1])
    arqs = _create_arqs(aio, 'fpga-race') + _create_arqs(aio, 'fpga-race')
    instances = [str(uuid.uuid4()) for _ in arqs]
    threads = [threading.Thread(target=_bind,
                                args=(aio, a['uuid'], rp_uuid, i))
               for a, i in zip(arqs, instances)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    states = sorted(_wait_resolved(aio, a['uuid'])['state'] for a in arqs)
    assert states == ['BindFailed', 'Bound']
    for instance in instances:
        resp = requests.delete(aio.api + '/accelerator_requests',
                               headers=ACCEL, params={'instance': instance})
        assert resp.status_code == 204, resp.text
    _wait_cleaned(aio, rp_uuid)


def test_unknown_profile_is_a_json_404(aio):
    resp = requests.post(aio.api + '/accelerator_requests', headers=ACCEL,
                         json={'device_profile_name': 'nope'})
    assert resp.status_code == 404
    assert 'nope' in json.dumps(resp.json())
