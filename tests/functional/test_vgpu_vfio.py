"""vGPU on the vendor-specific VFIO framework through the real services:
the agent's nvidia driver reads an H200 host whose VFs make vGPUs, the
conductor reports to the real Placement and the kube-apiserver stand-in.
Each type's total is what the card can still make, and follows its
creatable_vgpu_types as they shrink and grow. Nova's binds make vGPUs
(tests/functional/placement/test_vgpu_bind.py), so Placement offers every
type; so does Prepare (tests/functional/matrix/test_vgpu_prepare.py), so
the slices offer each type as a device per vGPU the card can make of it,
untainted, the card's counters shrinking and growing with it
(kubernetes/vgpu_counters.py)."""
from tests import waiting
from tests.fixtures.drivers import vgpu_vfio_host
from tests.functional.host_env import make_host_env  # noqa: F401

PF = vgpu_vfio_host.PFS[0]
MOST = {t[0]: t[2] for t in vgpu_vfio_host.H200X_TYPES}


def _vgpu_totals(env):
    """{type trait: VGPU total} of the host's providers; each checked
    offered (nothing reserved)."""
    found = {}
    tree = env.placement.get('/resource_providers?in_tree=%s' % env.root())
    for rp in tree['resource_providers']:
        inventories = env.placement.get(
            '/resource_providers/%s/inventories' % rp['uuid'])['inventories']
        if 'VGPU' not in inventories:
            continue
        traits = env.placement.get(
            '/resource_providers/%s/traits' % rp['uuid'])['traits']
        [trait] = [t for t in traits if t.startswith('CUSTOM_NVIDIA_2335_')]
        vgpu = inventories['VGPU']
        assert vgpu['reserved'] == 0, (trait, vgpu)
        found[trait] = vgpu['total']
    return found


def _candidates(env):
    found = env.placement.get(
        '/allocation_candidates?resources=VGPU:1&in_tree=%s' % env.root())
    return len(found['allocation_requests'])


def _slice_types(env):
    """{type id: devices} in the slices, each checked untainted; the
    card's counter set."""
    found = {}
    for name, taints in env.slice_taints().items():
        assert taints == [], (name, taints)
        type_id = int(name.split('-vgpu-')[1].split('-')[0])
        found[type_id] = found.get(type_id, 0) + 1
    [counters] = [c['counters'] for s in env.apiserver.slices.values()
                  if s['spec']['nodeName'] == env.hostname
                  for c in s['spec'].get('sharedCounters') or []]
    return found, {k: v['value'] for k, v in counters.items()}


def test_what_the_card_can_still_make_is_offered_to_nova_and_kubernetes(
        make_host_env):
    env = make_host_env('vgpu')
    totals = waiting.read_until(lambda: _vgpu_totals(env),
                                lambda found: len(found) == len(MOST),
                                what='a provider per vGPU type')
    assert totals['CUSTOM_NVIDIA_2335_H200X_35C'] == 4
    assert totals['CUSTOM_NVIDIA_2335_H200X_141C'] == 1
    assert totals['CUSTOM_NVIDIA_2335_H200X_4C'] == 32
    assert _candidates(env) == len(MOST)
    waiting.read_until(lambda: _slice_types(env), lambda found: found == (
        MOST, {'card-shares': '160', 'vfs': '32'}),
        what='every type in the slices')

    # Someone else makes a 35C: left alone, counted; the card narrows to
    # its type (equal-size mode), and so do the totals.
    env.host.write(env.host.vf_file(PF, 7, 'current_vgpu_type'), '1426')
    env.scan()
    # (A type the card cannot make any more has no VGPU inventory left.)
    assert _vgpu_totals(env) == {'CUSTOM_NVIDIA_2335_H200X_35C': 3}
    waiting.read_until(lambda: _slice_types(env), lambda found: found == (
        {1426: 4}, {'card-shares': '120', 'vfs': '31'}),
        what='the slices narrowed to 35C, one taken')

    env.host.write(env.host.vf_file(PF, 7, 'current_vgpu_type'), '0')
    env.scan()
    totals = _vgpu_totals(env)
    assert len(totals) == len(MOST)
    assert totals['CUSTOM_NVIDIA_2335_H200X_70C'] == 2
    assert _candidates(env) == len(MOST)
    waiting.read_until(lambda: _slice_types(env), lambda found: found == (
        MOST, {'card-shares': '160', 'vfs': '32'}),
        what='every type in the slices again')
    assert env.host.current == dict.fromkeys(env.host.current, 0)
