"""A device handed to a guest is held, not unhealthy (issue 46, finding
1), on the real conductor, Placement and Kubernetes sink, the agent's
real scans over a simulated host (tests/functional/host_env.py).

Nova binds an ARQ; libvirt then detaches its function to vfio-pci, so the
host driver stops reporting it: an SR-IOV region's VF (its card's other
regions stay), or a whole GPU. For many scans the card stays healthy with
no health move in its history and no health notification, the other
regions or GPUs stay offered and bindable in Placement and untainted in
the ResourceSlices; given back, the device is cleaned as usual and
offered again."""
import os

from tests import waiting
from tests.functional import host_env as he
from tests.functional.host_env import make_host_env  # noqa: F401

# Scans a guest keeps its device for: many hysteresis windows.
GUEST_SCANS = 12


def _in_service(env, held, free, identity=None):
    """The schedulers' and the history's view while ``held`` (a
    deployable name) is with a guest and ``free`` is not."""
    device = env.device(identity)
    assert (device.health, device.health_reason) == ('healthy', None)
    assert env.health_moves(identity) == []
    assert env.notified(he.HEALTH_CHANGE) == []
    kept = env.deployable(held, identity)
    assert kept.device_state == 'allocated' and \
        [h.in_use for h in kept.attach_handles] == [True]
    assert env.candidates() == {env.deployable(free).rp_uuid}


def _memory(env, region):
    with open(os.path.join(env.conf.fake_driver.state_dir, 'local_memory',
                           'dfl-port.%s' % region[-1])) as f:
        return f.read()


def test_a_vf_in_a_guest_keeps_its_card_in_service(make_host_env):
    env = make_host_env('fpga')
    region0, region1 = (env.deployable(n).rp_uuid
                        for n in ('region0', 'region1'))
    row = env.deployable('region0').uuid
    assert env.candidates() == {region0, region1}
    arq = env.bind('region0')
    with open(env.new_driver().local_memory_path(he.CARD, 'region0'),
              'w') as f:
        f.write('tenant data')
    address = env.attach(arq)
    assert address == env.host.vf_address(0, 0)

    for scan in range(GUEST_SCANS):
        env.scan()
        # The host driver no longer reports the region: the agent's
        # scan is without it, every time.
        [card] = env.agent.scan()[0]['devices']
        assert [d['name'] for d in card['deployables']] == ['region1']
        _in_service(env, 'region0', 'region1')
        taints = env.slice_taints()
        assert taints == {'fpga-0000-5e-00-0-region0': ['in-use'],
                          'fpga-0000-5e-00-0-region1': []}, scan
    # Notifications are on: the bind was told.
    assert 'accelerator.arq.bind.end' in env.notified()

    # Its sibling is bindable: another instance gets it.
    other = env.bind('region1')
    assert env.candidates() == set()
    env.attach(other)
    env.scan(2)
    assert env.device().health == 'healthy'

    # The guest lets go: the VF back to dfl-pci, the ARQ unbound, the
    # region wiped as usual and offered again.
    env.release(arq, address)
    waiting.read_until(lambda: env.deployable('region0'),
                       lambda d: d.device_state == 'available',
                       what='region0 wiped')
    # The same row all along: kept while held, never made anew.
    assert env.deployable('region0').uuid == row
    assert _memory(env, 'region0') == ''
    # Capacity given back follows (docs/architecture.md).
    waiting.read_until(env.candidates, lambda found: found == {region0},
                       what='region0 offered again')
    waiting.read_until(env.slice_taints, lambda found: found[
        'fpga-0000-5e-00-0-region0'] == [], what='region0 untainted')
    assert env.health_moves() == []
    assert env.notified(he.HEALTH_CHANGE) == []
    assert env.device().health == 'healthy'


def test_a_gpu_in_passthrough_is_held_not_unhealthy(make_host_env):
    env = make_host_env('gpu')
    gpu_a = env.deployable('pgpu', he.GPU_A).rp_uuid
    gpu_b = env.deployable('pgpu', he.GPU_B).rp_uuid
    assert env.candidates() == {gpu_a, gpu_b}
    arq = env.bind('pgpu', he.GPU_B)
    address = env.attach(arq)
    assert address == he.GPU_B

    for _scan in range(GUEST_SCANS):
        env.scan()
        assert [d['identity'] for d in env.agent.scan()[0]['devices']] == \
            [he.GPU_A]
        device = env.device(he.GPU_B)
        assert (device.health, device.health_reason) == ('healthy', None)
        assert env.health_moves(he.GPU_B) == []
        assert env.deployable('pgpu', he.GPU_B).device_state == 'allocated'
        assert env.candidates() == {gpu_a}
        assert not any('unhealthy' in t for taints in
                       env.slice_taints().values() for t in taints)
    assert env.notified(he.HEALTH_CHANGE) == []
    assert env.bind('pgpu', he.GPU_A).state == 'Bound'

    env.release(arq, address)
    waiting.read_until(lambda: env.deployable('pgpu', he.GPU_B),
                       lambda d: d.device_state == 'available',
                       what='GPU B reset')
    assert env.host.reset_log() == [he.GPU_B]
    waiting.read_until(env.candidates, lambda found: found == {gpu_b},
                       what='GPU B offered again')
    assert env.health_moves(he.GPU_B) == []
    assert env.notified(he.HEALTH_CHANGE) == []
