"""Device health end to end on the all-in-one (a subprocess: its real
Placement, API, conductor and agent with the fake driver), publishing to
the kube-apiserver stand-in (strict schemas) and serving the kubelet
plugin, which this test plays over the real sockets.

A VF handed to a guest by the simulated host's documented command
(docs/drivers.md, "The simulated host") leaves the card in service.

A fault written into the fake driver's tree, as docs/drivers.md tells a
person to: within two agent scans (the agent logs the move "after 2
readings") the device is unhealthy in the API, reserved in Placement (no
allocation candidate), tainted in its ResourceSlice, and a bind and a
prepare are refused naming the reason; the fault cleared, it is healthy
and offered again, by the same process (no restart)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid

import pytest
import requests

from cyborg_lite.api import microversion
from tests import fork_server
from tests import prometheus_text
from tests import servers
from tests import waiting
from tests.functional import nova_order
from tests.functional import test_scheduler_flow as flow
from tests.functional.kubernetes import kubelet as kubelet_mod
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import resource_claims as rc

pytestmark = pytest.mark.xdist_group('all_in_one')

HOST = 'aio-host'
CATFATAL = 'catfatal_errors 0x4'
HEALTH = dict(flow.ACCEL, **{'OpenStack-API-Version':
                             'accelerator ' + microversion.DEVICE_HEALTH})
REGION0 = 'fpga-0000-5e-00-0-region0'
MOVE = re.compile(r'Health of fake 0000:5e:00\.0: (\w+) -> (\w+) after '
                  r'(\d+) readings \((.*)\)$', re.M)


class HealthAllInOne(flow.AllInOne):
    """The all-in-one of test_scheduler_flow, one card, with a config
    file."""

    def __init__(self, state_dir, config_file):
        self.api_port = servers.free_port()
        self.placement_port = servers.free_port()
        self.api = 'http://127.0.0.1:%d/v2' % self.api_port
        self.placement = 'http://127.0.0.1:%d' % self.placement_port
        self.state_dir = state_dir
        self.log = open(os.path.join(state_dir, 'aio.log'), 'w+')
        self.proc = fork_server.popen(
            [sys.executable, '-m', 'cyborg_lite.cmd.all_in_one',
             '--state-dir', state_dir, '--api-port', str(self.api_port),
             '--placement-port', str(self.placement_port), '--cards', '1',
             '--config-file', config_file],
            stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout=90):
        servers.wait_for_port(self.api_port, timeout, proc=self.proc)
        # Two FPGAs: [fake_driver]sriov gives each region its own VF.
        if not waiting.until(lambda: self._fpgas_offered() == 2, timeout,
                             interval=0.2):
            raise TimeoutError('regions never reached Placement:\n' +
                               self.read_log())

    def fault(self, text):
        path = os.path.join(self.state_dir, 'fake_fpga', 'sys', 'class',
                            'fpga_region', 'region0', 'dfl-fme.0', 'errors',
                            'catfatal_errors')
        with open(path, 'w') as f:
            f.write(text)

    def device(self):
        [device] = requests.get(self.api + '/devices',
                                headers=HEALTH).json()['devices']
        return device

    def moves(self):
        return MOVE.findall(self.read_log_all())

    def read_log_all(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()


def _config(path, kubeconfig, short_dir):
    sections = {
        'agent': {'report_interval': 1},
        'health': {'readings_to_fault': 2, 'readings_to_clear': 2},
        'fake_driver': {'sriov': 'true'},
        'conductor': {'inventory_sinks': 'placement,kubernetes'},
        'kubernetes': {'enabled': 'true', 'hosts': HOST,
                       'kubeconfig': kubeconfig,
                       'kubelet_registry_dir': short_dir + '/reg',
                       'kubelet_plugins_dir': short_dir + '/plugins',
                       'cdi_dir': short_dir + '/cdi',
                       'plugin_state_dir': short_dir + '/state'},
    }
    with open(path, 'w') as f:
        for section, values in sections.items():
            f.write('[%s]\n' % section)
            for key, value in values.items():
                f.write('%s = %s\n' % (key, value))


def _kubeconfig(path, url):
    with open(path, 'w') as f:
        json.dump({
            'apiVersion': 'v1', 'kind': 'Config',
            'current-context': 'stand-in',
            'clusters': [{'name': 'stand-in', 'cluster': {'server': url}}],
            'users': [{'name': 'cyborg', 'user': {'token': 'unused'}}],
            'contexts': [{'name': 'stand-in', 'context': {
                'cluster': 'stand-in', 'user': 'cyborg'}}]}, f)


@pytest.fixture(scope='module')
def world(tmp_path_factory):
    state = str(tmp_path_factory.mktemp('aio-health'))
    short_dir = tempfile.mkdtemp(prefix='dra', dir='/tmp')
    apiserver = fake_apiserver.FakeKubeApiServer().start()
    apiserver.add_node(HOST)
    kubeconfig = os.path.join(state, 'kubeconfig')
    _kubeconfig(kubeconfig, apiserver.url)
    config = os.path.join(state, 'health.conf')
    _config(config, kubeconfig, short_dir)
    os.makedirs(os.path.join(state, 'aio'))
    aio = HealthAllInOne(os.path.join(state, 'aio'), config)
    kubelet = None
    try:
        aio.wait_ready()
        waiting.read_until(lambda: _devices(apiserver),
                           lambda devices: len(devices) == 2, 60,
                           what='slices in the apiserver stand-in')
        assert waiting.until(lambda: os.path.isdir(short_dir + '/reg') and
                             os.listdir(short_dir + '/reg'), 30)
        kubelet = kubelet_mod.TestKubelet(short_dir + '/reg')
        kubelet.register()
        yield aio, apiserver, kubelet
    finally:
        if kubelet is not None:
            kubelet.close()
        try:
            assert aio.stop() == 0
        finally:
            apiserver.stop()
            shutil.rmtree(short_dir, ignore_errors=True)


def _devices(apiserver):
    """{device name: taints} of the host's slices in the apiserver."""
    return {d['name']: d.get('taints', [])
            for s in apiserver.slices.values()
            if s['spec']['nodeName'] == HOST
            for d in s['spec'].get('devices', [])}


def _prepare(apiserver, kubelet, name):
    claim = rc.allocated_claim(name, [('fpga', REGION0)],
                               namespace='team-a', pool=HOST)
    apiserver.put_claim(claim)
    response = kubelet.prepare('v1', [rc.ref(claim)])
    return response.claims[claim['metadata']['uid']].error


def test_a_fault_and_its_clearing_end_to_end(world):
    aio, apiserver, kubelet = world
    pid = aio.proc.pid
    profile = flow._profile(aio, 'fpga-health', 4096)
    assert len(flow._candidates(aio, profile)) == 2
    assert aio.device()['health'] == 'healthy'

    aio.fault('0x4\n')
    device = waiting.read_until(
        aio.device, lambda d: d['health'] == 'unhealthy', 30,
        interval=0.2, what='the device unhealthy in the API')
    assert device['health_reason'] == CATFATAL
    assert device['unavailable_reasons'] == ['unhealthy']
    # Two scans: the agent's own account of the move.
    assert ('healthy', 'unhealthy', '2', CATFATAL) in aio.moves()

    # Placement: nothing offered. (The API reads the database, which has
    # it a moment before the report's publish ends; tests/functional/
    # placement/test_health.py checks that the report returns after.)
    waiting.read_until(lambda: flow._candidates(aio, profile),
                       lambda found: found == [], 10,
                       what='no allocation candidate')
    # Kubernetes: every region tainted, the slice valid in the stand-in.
    taint = {'key': 'cyborg-lite.openstack.org/unhealthy',
             'value': 'catfatal_errors', 'effect': 'NoSchedule'}
    devices = waiting.read_until(
        lambda: _devices(apiserver),
        lambda found: all(any(t['key'] == taint['key'] for t in ts)
                          for ts in found.values()), 30,
        what='tainted slices')
    for taints in devices.values():
        assert {k: v for t in taints if t['key'] == taint['key']
                for k, v in t.items() if k != 'timeAdded'} == taint
    assert apiserver.refused == []

    # A bind on what was offered before is refused, naming why.
    rp_uuid = requests.get(aio.api + '/deployables', headers=HEALTH).json()[
        'deployables'][0]['rp_uuid']
    (arq,) = flow._create_arqs(aio, 'fpga-health')
    flow._bind(aio, arq['uuid'], rp_uuid, str(uuid.uuid4()))
    failed = flow._wait_resolved(aio, arq['uuid'])
    assert failed['state'] == 'BindFailed'
    assert 'unhealthy' in failed['error'] and CATFATAL in failed['error']
    # So is a prepare.
    error = _prepare(apiserver, kubelet, 'during')
    assert 'unhealthy' in error and CATFATAL in error
    # And enable cannot make it available.
    resp = requests.post(aio.api + '/devices/%s/enable' % device['uuid'],
                         headers=HEALTH)
    assert resp.status_code == 409 and CATFATAL in resp.text

    aio.fault('0x0\n')
    device = waiting.read_until(
        aio.device, lambda d: d['health'] == 'healthy', 30, interval=0.2,
        what='the device healthy again')
    assert device['health_reason'] is None
    moves = aio.moves()
    assert moves[-2:] == [
        ('unhealthy', 'recovering', '2', CATFATAL + ' (cleared)'),
        ('recovering', 'healthy', '2', 'all signals clear')]
    waiting.read_until(lambda: flow._candidates(aio, profile),
                       lambda found: len(found) == 2, 10,
                       what='both regions offered again')
    waiting.read_until(lambda: _devices(apiserver),
                       lambda found: not any(found.values()), 30,
                       what='untainted slices')
    assert _prepare(apiserver, kubelet, 'after') == ''
    # The same process all along.
    assert aio.proc.pid == pid and aio.proc.poll() is None


def _scans(aio):
    """How many scans the all-in-one's agent has made (its metric)."""
    text = requests.get('http://127.0.0.1:%d/metrics' % aio.api_port,
                        timeout=30).text
    return sum(value for labels, value in prometheus_text.samples(
        text, 'cyborg_lite_agent_scan_duration_seconds_count'))


def _fake_host(aio, *args):
    """The documented command (docs/drivers.md) on the all-in-one's
    simulated host."""
    fork_server.run([sys.executable, '-m', 'cyborg_lite.drivers.fake_host',
                     '--state-dir', os.path.join(aio.state_dir, 'fake_fpga')]
                    + list(args), check=True, timeout=60)


def test_a_vf_in_a_guest_keeps_the_card_in_service(world):
    """Nova boots an instance on region0; libvirt hands its VF to
    vfio-pci (fake_host bind-vfio); for ten agent scans the card stays
    healthy, with no health move in its history, region1 offered in
    Placement and untainted; deleted, the VF given back, region0 is wiped
    and offered again."""
    aio, apiserver, kubelet = world
    flow._profile(aio, 'fpga-guest', 4096)
    nova = nova_order.Nova(aio.api, aio.placement, lambda rp: HOST)
    groups = nova.request_groups('fpga-guest')
    # The claim the test before prepared lets go of region0.
    claim = apiserver.claims.get(('team-a', 'after'))
    if claim is not None:
        assert kubelet.unprepare('v1', [rc.ref(claim)]).claims[
            claim['metadata']['uid']].error == ''
    waiting.read_until(lambda: nova.candidates(groups),
                       lambda found: len(found) == 2, 30,
                       what='both regions offered')
    device = aio.device()
    history = dict(HEALTH, **{'OpenStack-API-Version': 'accelerator 2.9'})
    before = requests.get(aio.api + '/devices/%s/history' % device['uuid'],
                          headers=history).json()['history']
    instance, [arq] = nova.boot('fpga-guest')
    held = arq['device_rp_uuid']
    info = arq['attach_handle_info']
    address = '%(domain)s:%(bus)s:%(device)s.%(function)s' % info
    _fake_host(aio, 'bind-vfio', address)

    scans = _scans(aio)
    waiting.read_until(lambda: _scans(aio), lambda n: n >= scans + 10, 60,
                       what='ten agent scans')
    device = aio.device()
    assert (device['health'], device['unavailable_reasons']) == (
        'healthy', [])
    rows = requests.get(aio.api + '/devices/%s/history' % device['uuid'],
                        headers=history).json()['history']
    assert [r['event'] for r in rows[len(before):]
            if r['event'] == 'device.health_change'] == []
    offered = nova_order.offered_providers(nova.candidates(groups))
    assert held not in offered and len(offered) == 1
    taints = _devices(apiserver)
    assert not any(t['key'].endswith('/unhealthy')
                   for ts in taints.values() for t in ts)
    assert [name for name, ts in taints.items() if not ts] != []

    _fake_host(aio, 'unbind-vfio', address)
    scans = _scans(aio)
    waiting.read_until(lambda: _scans(aio), lambda n: n >= scans + 1, 30,
                       what='a scan with the VF back')
    nova.delete(instance)
    flow._wait_cleaned(aio, held)
    assert aio.device()['health'] == 'healthy'
