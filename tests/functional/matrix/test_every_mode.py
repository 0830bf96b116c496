"""One host, every mode (tests/fixtures/drivers/every_mode_host.py): a
whole GPU for passthrough, an H200 whose VFs make vGPUs and an A100 in
MIG mode, health read from the same nvidia-smi, on the real services
(world.py). A guest of Nova's gets the whole GPU and a vGPU, a pod's
claim a MIG placement and a vGPU of the same card, all at once; each is
bound to what it asked for, Placement and the slices show what is left,
and every GPU's health is what its hardware says."""
import uuid

import pytest

from tests import waiting
from tests.fixtures.drivers import every_mode_host
from tests.fixtures.drivers import vgpu_vfio_host
from tests.functional.matrix import world
from tests.functional.matrix import claims

pytestmark = pytest.mark.xdist_group('matrix')

HOST = every_mode_host.EveryModeHost
Q35 = 'CUSTOM_NVIDIA_2335_H200X_35C'
H200 = 'gpu-0000-41-00-0'
PLACEMENT = 'gpu-0000-3b-00-0-mig-3g20gb-9-4'
# Two fake regions, the whole GPU, 14 MIG placements, 9 vGPU types.
EXPECTED = 2 + 1 + 14 + len(vgpu_vfio_host.H200X_TYPES)


def _profile(host):
    """A guest's: the whole GPU and a vGPU of type 35C."""
    name = 'dp-%s' % uuid.uuid4().hex[:8]
    host.call('POST', '/device_profiles', 201, headers=world.OPERATOR,
              json=[{'name': name, 'groups': [
                  {'resources:PGPU': '1'},
                  {'resources:VGPU': '1', 'trait:' + Q35: 'required'}]}])
    return name


def _vgpu_profile(host):
    name = 'dp-%s' % uuid.uuid4().hex[:8]
    host.call('POST', '/device_profiles', 201, headers=world.OPERATOR,
              json=[{'name': name, 'groups': [
                  {'resources:VGPU': '1', 'trait:' + Q35: 'required'}]}])
    return name


def _h200(host):
    """({device name: taints} of the H200's devices, its counters)."""
    devices, counters = host.counter_set(H200)
    return {n: d.get('taints', []) for n, d in devices.items()}, counters


def _env(host, claim):
    return [claims.env(d) for d in claims.cdi_devices(host, claim)]


def _health(host):
    return {d['pci_bus_id']: d['health'] for d in host.devices()
            if d['type'] == 'GPU'}


def test_a_guest_and_a_pod_hold_every_mode_of_one_host_at_once(make_host):
    host = make_host(gpus='every', expected=EXPECTED)
    gpus = host.gpu_host
    gpu_uuids = [d['uuid'] for d in host.devices() if d['type'] == 'GPU']
    mark = host.mark(*gpu_uuids)
    assert _health(host) == dict.fromkeys(
        (HOST.WHOLE, HOST.MIG, HOST.VGPU), 'healthy')

    # Nova: the whole GPU and a 35C vGPU in one guest.
    _instance, arqs = host.boot(_profile(host))
    whole, vgpu = sorted(arqs, key=lambda a: a['device_profile_group_id'])
    assert {a['state'] for a in arqs} == {'Bound'}
    assert world.handle_address(whole) == HOST.WHOLE
    nova_vf = world.handle_address(vgpu)
    assert gpus.vgpu.current[nova_vf] == 1426
    host.hand_to_guest(whole)          # vfio-pci takes the whole GPU
    gpus.vgpu.guest_opens(nova_vf)

    # A pod: a MIG placement and a vGPU of the same H200 (35C, the one
    # type the card lists now).
    waiting.read_until(lambda: _h200(host)[1], lambda c: c == {
        'card-shares': '120', 'vfs': '31'}, 20, what="Nova's vGPU counted")
    claim = claims.allocated(host, 'every-mode', [
        ('mig', PLACEMENT), ('vgpu', H200 + '-vgpu-1426-0')])
    assert host.prepare(claim) == ''
    envs = _env(host, claim)
    [mig_env] = [e for e in envs if 'CYBORG_LITE_MIG_PLACEMENT' in e]
    [vgpu_env] = [e for e in envs if 'CYBORG_LITE_VGPU_TYPE' in e]
    [(gi, profile, start)] = gpus.mig.instances(HOST.MIG)
    assert (profile, start, mig_env['CYBORG_LITE_MIG_GPU_INSTANCE_ID']) == (
        9, 4, str(gi))
    pod_vf = vgpu_env['CYBORG_LITE_PCI_ADDRESS']
    assert pod_vf != nova_vf and gpus.vgpu.current[pod_vf] == 1426

    for _ in range(3):              # the guests and the pod run
        host.scan()
        assert host.offers('PGPU') == {HOST.WHOLE + '/pgpu': 'allocated'}
        # Placement: the pod's claim keeps its VF from Nova, not the
        # type's other two (the card makes no other type now), and Nova
        # cannot bind a MIG placement.
        vgpus = host.offers('VGPU', required=[Q35])
        assert {k: v for k, v in vgpus.items()
                if k.startswith(HOST.VGPU)} == {
            HOST.VGPU + '/vgpu_1426': 'offered'}
        assert {v for k, v in vgpus.items()
                if k.startswith(HOST.MIG)} == {'reserved'}
        devices, counters = _h200(host)
        assert sorted(devices) == [H200 + '-vgpu-1426-%d' % i
                                   for i in range(4)]
        assert not any(devices.values()), devices
        assert counters == {'card-shares': '120', 'vfs': '31'}
        slices = host.slices()
        assert slices[HOST.WHOLE + '/pgpu'] == ['in-use=nova']
        assert slices[HOST.MIG + '/mig-3g20gb-9-4'] == []
        assert _health(host) == dict.fromkeys(
            (HOST.WHOLE, HOST.MIG, HOST.VGPU), 'healthy')
    assert {a['state'] for a in map(
        host.arq, (whole['uuid'], vgpu['uuid']))} == {'Bound'}
    # A second guest gets a third 35C of the card beside the pod's.
    _second, [third] = host.boot(_vgpu_profile(host))
    assert third['state'] == 'Bound', third
    third_vf = world.handle_address(third)
    assert third_vf not in (nova_vf, pod_vf)
    assert gpus.vgpu.current[third_vf] == 1426
    for device in gpu_uuids:
        assert [e for e, _s in host.history_since(mark, device)
                if e.startswith('device.')] == []

    # The hardware's word on health stands beside the holders: a fault
    # on the MIG GPU reads unhealthy, and nothing is let go.
    gpus.set_health(HOST.MIG, 'unhealthy')
    waiting.read_until(lambda: (host.scan(), _health(host))[1],
                       lambda h: h[HOST.MIG] == 'unhealthy', 20,
                       what='the MIG GPU unhealthy')
    assert _health(host)[HOST.VGPU] == 'healthy'
    assert gpus.mig.instances(HOST.MIG) == [(gi, 9, 4)]
    assert gpus.vgpu.current[pod_vf] == gpus.vgpu.current[nova_vf] == 1426


def _mig_gpu(host):
    """(Placement's PGPU view, slice taints) of the MIG GPU's
    deployables, by short name."""
    return ({k: v for k, v in host.offers('PGPU').items()
             if k.startswith(HOST.MIG)},
            {k: v for k, v in host.slices().items()
             if k.startswith(HOST.MIG)})


def test_a_gpu_s_mode_changes_only_once_nothing_holds_it(make_host):
    """MIG mode turned off under a pod's placement: the host goes on
    reporting the held placement as it was, and offers neither the whole
    GPU nor any other placement; once the pod lets go, the clean
    destroys the instance and the whole GPU is offered."""
    host = make_host(gpus='every', expected=EXPECTED)
    gpus = host.gpu_host
    claim = claims.allocated(host, 'mode-held', [('mig', PLACEMENT)])
    assert host.prepare(claim) == ''
    [(gi, _profile, _start)] = gpus.mig.instances(HOST.MIG)

    gpus.mig.set_mig_mode(False)
    for _ in range(2):
        host.scan()
        assert _mig_gpu(host) == ({}, {HOST.MIG + '/mig-3g20gb-9-4': []})
    [held] = [d for d in host.deployables()
              if host.key_of(d) == HOST.MIG + '/mig-3g20gb-9-4']
    assert held['device_state'] == 'allocated'
    assert gpus.mig.instances(HOST.MIG) == [(gi, 9, 4)]

    assert host.unprepare(claim) == ''
    waiting.read_until(lambda: (host.scan(), _mig_gpu(host))[1],
                       lambda found: found == (
                           {HOST.MIG + '/pgpu': 'offered'},
                           {HOST.MIG + '/pgpu': []}), 20,
                       what='the whole GPU offered once cleaned')
    assert gpus.mig.instances(HOST.MIG) == []
