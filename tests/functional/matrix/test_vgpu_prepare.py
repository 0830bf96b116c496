"""vGPUs made at Kubernetes' Prepare, where the services meet: the agent
scans an H200 whose VFs make vGPUs (tests/fixtures/drivers/
vgpu_vfio_host.py, its kernel acting on writes), the conductor publishes
each type as devices consuming the card's counters to the apiserver
stand-in, a kubelet speaking the real DRA gRPC prepares claims allocated
some, and the agent writes the type into a free VF (the Nova bind's code:
the VF read again first) and names that VF to the container; unprepare
and the clean write 0 into it, and never into a VF someone else made."""

from tests import waiting
from tests.fixtures.drivers import vgpu_vfio_host
from tests.functional.matrix import claims

PF = vgpu_vfio_host.PFS[0]
SET = 'gpu-0000-41-00-0'
# Two fake regions, and the H200's nine vGPU types.
EXPECTED = 2 + len(vgpu_vfio_host.H200X_TYPES)


def _card(host):
    """({type id: devices} in the host's slices, the card's counters)."""
    devices, counters = host.counter_set(SET)
    types = {}
    for name, device in devices.items():
        if name.startswith(SET + '-vgpu-'):
            assert not device.get('taints'), device
            type_id = int(name.split('-')[-2])
            types[type_id] = types.get(type_id, 0) + 1
    return types, counters


def _wait_card(host, expected, what):
    return waiting.read_until(lambda: _card(host),
                              lambda found: found == expected, 20, what=what)


def _type_deployable(host, type_id):
    [dep] = [d for d in host.deployables()
             if host.key_of(d) == '%s/vgpu_%d' % (PF, type_id)]
    return dep


def _claim(host, *device_names):
    return claims.allocated(
        host, 'vgpu-%s' % device_names[0][-8:],
        [('gpu%d' % i, name) for i, name in enumerate(device_names)])


def _env(host, claim):
    [device] = claims.cdi_devices(host, claim)
    return claims.env(device)


def _made(kernel, type_id):
    return sorted(vf for vf, t in kernel.current.items() if t == type_id)


def test_prepare_writes_the_type_into_a_free_vf_unprepare_writes_0(
        make_host):
    host = make_host(gpus='vgpu', expected=EXPECTED)
    kernel = host.gpu_host
    # Someone else's 35C: left alone, and counted out of the card.
    kernel.write(kernel.vf_file(PF, 0, 'current_vgpu_type'), '1426')
    [theirs] = _made(kernel, 1426)
    host.scan()
    _wait_card(host, ({1426: 4}, {'card-shares': '120', 'vfs': '31'}),
               'the card narrowed to 35C, one of them taken')
    dep = _type_deployable(host, 1426)

    claim = _claim(host, SET + '-vgpu-1426-2')
    assert host.prepare(claim) == ''
    [vf] = [v for v in _made(kernel, 1426) if v != theirs]
    env = _env(host, claim)
    assert (env['CYBORG_LITE_PCI_ADDRESS'], env['CYBORG_LITE_VGPU_TYPE'],
            env['CYBORG_LITE_DEPLOYABLE_UUID']) == (vf, '1426', dep['uuid'])
    # The kubelet asks again: the same VF, nothing written twice.
    assert host.prepare(claim) == ''
    assert _env(host, claim) == env
    assert _made(kernel, 1426) == sorted([theirs, vf])
    # The claim's vGPU is its allocated device's to count: the card's
    # totals keep it, the card still lists 35C only.
    _wait_card(host, ({1426: 4}, {'card-shares': '120', 'vfs': '31'}),
               'the totals as before the claim')

    # A second claim of the type takes another free VF.
    other = _claim(host, SET + '-vgpu-1426-0')
    assert host.prepare(other) == ''
    [second] = [v for v in _made(kernel, 1426) if v not in (theirs, vf)]
    assert _env(host, other)['CYBORG_LITE_PCI_ADDRESS'] == second

    # The first claim's Unprepare empties its VF before it answers; the
    # type waits for no wipe, the second claim's vGPU is untouched.
    assert host.unprepare(claim) == ''
    assert _made(kernel, 1426) == sorted([theirs, second])
    assert host.call('GET', '/deployables/' + dep['uuid'], 200).json()[
        'device_state'] == 'allocated'
    assert host.unprepare(other) == ''
    claims.wait_available(host, dep)
    assert _made(kernel, 1426) == [theirs]
    assert kernel.read(kernel.vf_file(PF, kernel.vfs[PF].index(vf),
                                      'current_vgpu_type')) == '0\n'
    kernel.write(kernel.vf_file(PF, 0, 'current_vgpu_type'), '0')
    host.scan()
    _wait_card(host, ({t[0]: t[2] for t in vgpu_vfio_host.H200X_TYPES},
                      {'card-shares': '160', 'vfs': '32'}),
               'every type offered again')


def test_a_type_the_card_no_longer_lists_fails_the_claim_holds_nothing(
        make_host):
    """The scheduler allocated a 70C before the slices showed the 35C
    someone made since: Prepare reads the VF again, writes nothing, the
    claim fails and holds nothing; the slices narrow to 35C."""
    host = make_host(gpus='vgpu', expected=EXPECTED)
    kernel = host.gpu_host
    dep = _type_deployable(host, 1427)
    kernel.write(kernel.vf_file(PF, 3, 'current_vgpu_type'), '1426')
    claim = _claim(host, SET + '-vgpu-1427-1')
    error = host.prepare(claim)
    assert 'not among those it can make now' in error, error
    assert _made(kernel, 1427) == []
    _wait_card(host, ({1426: 4}, {'card-shares': '120', 'vfs': '31'}),
               'the slices as the card is')
    waiting.read_until(
        lambda: host.call('GET', '/deployables/' + dep['uuid'],
                          200).json()['device_state'],
        lambda state: state in ('available', 'pending_cleaning'), 20,
        what='the hold given back')
    assert host.call('GET', '/deployables/' + dep['uuid'], 200).json()[
        'num_accelerators'] == 0


def test_two_vgpus_of_a_type_in_one_claim_are_two_vfs(make_host):
    """Two devices of one type for one claim: each its own VF, named to
    the container as its own device; asked again, the same two; the
    Unprepare empties both."""
    host = make_host(gpus='vgpu', expected=EXPECTED)
    kernel = host.gpu_host
    dep = _type_deployable(host, 1426)
    claim = _claim(host, SET + '-vgpu-1426-0', SET + '-vgpu-1426-1')
    assert host.prepare(claim) == ''
    made = _made(kernel, 1426)
    addresses = sorted(claims.env(d)['CYBORG_LITE_PCI_ADDRESS']
                       for d in claims.cdi_devices(host, claim))
    assert len(made) == 2 and addresses == made
    assert host.prepare(claim) == ''
    assert _made(kernel, 1426) == made
    assert host.unprepare(claim) == ''
    assert _made(kernel, 1426) == []
    claims.wait_available(host, dep)


def test_the_slices_narrow_to_the_type_a_prepare_made(make_host):
    """Equal-size mode: once Prepare made a 70C the card lists 70C only;
    the agent reports it at once. The claim's own vGPU stays in the
    card's totals (its allocated device consumes it)."""
    host = make_host(gpus='vgpu', expected=EXPECTED)
    claim = _claim(host, SET + '-vgpu-1427-0')
    assert host.prepare(claim) == ''
    assert len(_made(host.gpu_host, 1427)) == 1
    _wait_card(host, ({1427: 2}, {'card-shares': '160', 'vfs': '32'}),
               'the card narrowed to 70C')
    assert host.unprepare(claim) == ''
    claims.wait_available(host, _type_deployable(host, 1427))
    assert _made(host.gpu_host, 1427) == []
