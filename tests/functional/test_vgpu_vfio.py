"""vGPU on the vendor-specific VFIO framework through the real services:
the agent's nvidia driver reads an H200 host whose VFs make vGPUs, the
conductor reports to the real Placement; what Placement offers per type
shrinks and grows as the card's creatable_vgpu_types does."""
from tests import waiting
from tests.fixtures.drivers import vgpu_vfio_host
from tests.functional.host_env import make_host_env  # noqa: F401

PF = vgpu_vfio_host.PFS[0]
MOST = {t[0]: t[2] for t in vgpu_vfio_host.H200X_TYPES}


def _vgpu_offers(env):
    """{type trait: (VGPU total, reserved)} of the host's providers."""
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
        found[trait] = (inventories['VGPU']['total'],
                        inventories['VGPU']['reserved'])
    return found


def _candidates(env, trait):
    found = env.placement.get(
        '/allocation_candidates?resources=VGPU:1&required=%s&in_tree=%s'
        % (trait, env.root()))
    return len(found['allocation_requests'])


def test_placement_follows_what_the_card_can_still_make(make_host_env):
    env = make_host_env('vgpu')
    offers = waiting.read_until(lambda: _vgpu_offers(env),
                                lambda o: len(o) == len(MOST),
                                what='a provider per vGPU type')
    assert offers['CUSTOM_NVIDIA_2335_H200X_35C'] == (4, 0)
    assert offers['CUSTOM_NVIDIA_2335_H200X_141C'] == (1, 0)
    assert offers['CUSTOM_NVIDIA_2335_H200X_4C'] == (32, 0)
    assert _candidates(env, 'CUSTOM_NVIDIA_2335_H200X_70C') == 1

    # Someone else makes a 35C: left alone, counted; the card narrows to
    # its type (equal-size mode) and Placement offers what is left.
    env.host.write(env.host.vf_file(PF, 7, 'current_vgpu_type'), '1426')
    env.scan()
    offers = _vgpu_offers(env)
    assert offers['CUSTOM_NVIDIA_2335_H200X_35C'][0] == 3
    assert {t: total for t, (total, _) in offers.items()
            if not t.endswith('_35C')} == dict.fromkeys(
        [t for t in offers if not t.endswith('_35C')], 0)
    assert _candidates(env, 'CUSTOM_NVIDIA_2335_H200X_70C') == 0
    assert _candidates(env, 'CUSTOM_NVIDIA_2335_H200X_35C') == 1

    env.host.write(env.host.vf_file(PF, 7, 'current_vgpu_type'), '0')
    env.scan()
    assert _vgpu_offers(env)['CUSTOM_NVIDIA_2335_H200X_70C'] == (2, 0)
    assert _candidates(env, 'CUSTOM_NVIDIA_2335_H200X_70C') == 1
