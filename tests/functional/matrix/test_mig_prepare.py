"""MIG placements made at Kubernetes' Prepare, where the services meet:
the agent scans A100s in MIG mode (tests/fixtures/drivers/mig_host.py,
its nvidia-smi refusing an occupied placement as the real one does), the
conductor publishes every placement to the apiserver stand-in, a kubelet
speaking the real DRA gRPC prepares a claim allocated one of them, and
the agent makes the GPU instance at that placement; unprepare and the
clean destroy it, and only it."""
import os

from cyborg_lite.agent.dra import cdi
from tests import waiting
from tests.functional.matrix import claims

GPU = '0000:3b:00.0'
# Two fake regions, and 14 placements on each of the two GPUs.
EXPECTED = 2 + 2 * 14


def _device(host, placement, gpu=GPU):
    """The slices' device name of ``placement`` (its deployable's short
    name) on ``gpu``."""
    [dep] = [d for d in host.deployables()
             if host.key_of(d) == '%s/%s' % (gpu, placement)]
    return dep, host.slice_devices()[dep['uuid']]['name']


def _claim(host, device_name):
    return claims.allocated(host, 'mig-%s' % device_name[-12:],
                            [('gpu', device_name)])


def _env(host, claim):
    [device] = claims.cdi_devices(host, claim)
    return claims.env(device)


def test_prepare_makes_the_placement_unprepare_destroys_only_it(make_host):
    host = make_host(gpus='mig', expected=EXPECTED)
    mig = host.gpu_host
    theirs = mig.make_other(GPU, 19, 0)     # someone else's, slice 0
    host.scan()
    dep, name = _device(host, 'mig-3g20gb-9-4')
    claim = _claim(host, name)

    assert host.prepare(claim) == ''
    [(gi, profile, start)] = [i for i in mig.instances(GPU)
                              if i[0] != theirs]
    assert (profile, start) == (9, 4)
    assert mig.log()[-1] == 'create %s 9:4 gi=%d' % (GPU, gi)
    env = _env(host, claim)
    assert (env['CYBORG_LITE_MIG_PLACEMENT'],
            env['CYBORG_LITE_MIG_GPU_INSTANCE_ID'],
            env['CYBORG_LITE_DEPLOYABLE_UUID']) == ('9:4', str(gi),
                                                     dep['uuid'])
    # The kubelet asks again: the same answer, nothing made twice.
    assert host.prepare(claim) == ''
    assert len([line for line in mig.log() if 'create' in line]) == 2

    assert host.unprepare(claim) == ''
    claims.wait_available(host, dep)
    assert mig.instances(GPU) == [(theirs, 19, 0)]
    assert mig.log()[-2:] == ['-dci %s gi=%d' % (GPU, gi),
                              '-dgi %s gi=%d' % (GPU, gi)]


def test_a_placement_another_instance_took_fails_the_claim_holds_nothing(
        make_host):
    """The scheduler allocated a placement before the slices showed an
    instance someone made over it: Prepare fails with nvidia-smi's
    refusal, nothing is made, the hold is given back, and the placement
    is tainted (its wipe waits until the host can make it again)."""
    host = make_host(gpus='mig', expected=EXPECTED)
    mig = host.gpu_host
    dep, name = _device(host, 'mig-2g10gb-14-2')
    theirs = mig.make_other(GPU, 19, 3)          # slice 3: not scanned yet
    claim = _claim(host, name)
    error = host.prepare(claim)
    assert 'slices are taken' in error, error
    assert mig.instances(GPU) == [(theirs, 19, 3)]
    # The hold is given back (its wipe waits until the placement can be
    # made again), and the placement is no longer offered.
    waiting.read_until(
        lambda: (host.call('GET', '/deployables/' + dep['uuid'],
                           200).json()['device_state'],
                 [t['effect'] for t in host.slice_devices()[dep['uuid']].get(
                     'taints', [])]),
        lambda found: found == ('pending_cleaning', ['NoSchedule']), 20,
        what='the hold given back, the placement tainted')
    assert mig.instances(GPU) == [(theirs, 19, 3)]
    assert not os.path.exists(cdi.spec_path(
        host.conf.kubernetes.cdi_dir, host.conf.kubernetes.driver_name,
        claim['metadata']['uid']))


def _one_g_order(host, gpu=GPU):
    """The starts of ``gpu``'s 1g placements in the order the slices
    publish them (the kube-scheduler takes the first that fits)."""
    prefix = 'gpu-%s-mig-1g5gb-19-' % gpu.replace(':', '-').replace('.', '-')
    return [int(d['name'][len(prefix):])
            for obj in list(host.services.apiserver.slices.values())
            if obj['spec'].get('nodeName') == host.host
            for d in obj['spec'].get('devices') or []
            if d['name'].startswith(prefix)]


def test_a_claims_instance_moves_the_gpus_order_to_the_next_best_fit(
        make_host):
    """A claim's 3g at slices 4-7: the GPU's 1g placements are published
    best fit on what is left (slice 3 first, where the best fit makes
    the next), and back in the idle GPU's order once it is destroyed."""
    host = make_host(gpus='mig', expected=EXPECTED)
    assert _one_g_order(host) == [6, 5, 4, 3, 2, 1, 0]
    dep, name = _device(host, 'mig-3g20gb-9-4')
    claim = _claim(host, name)
    assert host.prepare(claim) == ''
    waiting.read_until(lambda: _one_g_order(host),
                       lambda order: order == [3, 2, 1, 0, 6, 5, 4], 20,
                       what='1g placements best fit beside the 3g')
    assert host.unprepare(claim) == ''
    claims.wait_available(host, dep)
    waiting.read_until(lambda: _one_g_order(host),
                       lambda order: order == [6, 5, 4, 3, 2, 1, 0], 20,
                       what='the idle order again')
