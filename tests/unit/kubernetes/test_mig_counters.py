"""A MIG GPU offered as its placements in the ResourceSlices (KEP-4815,
as NVIDIA's DRA driver counts it): one counter set per GPU, a
``memory-slice-<i>`` counter per memory slice plus its multiprocessors
and memory; each placement consumes its slices. The placements are the
driver's, from the recorded A100-40GB ``nvidia-smi mig -lgip/-lgipp``;
the slices checked against the published schemas and the apiserver's
rules, synced through the real client to the apiserver stand-in, and
allocated by the reference allocator from what it stores."""

from cyborg_lite.drivers import nvidia_mig
from cyborg_lite.drivers import nvidia_mig_made
from cyborg_lite.inventory import views as host_inventory
from cyborg_lite.kubernetes import slices as k8s_slices
from cyborg_lite.kubernetes import view as k8s_view
from tests.unit.drivers.conftest import fixture_path
from tests.unit.kubernetes import allocator
from tests.unit.kubernetes import inventories as inv
from tests.unit.kubernetes import schemas

DRIVER = inv.DRIVER
GPU = '0000:3b:00.0'
SET = 'gpu-0000-3b-00-0'
ANY = {'mig': lambda driver, device: '-mig-' in device['name']}


def _profiles():
    def read(name):
        with open(fixture_path('nvidia', name)) as f:
            return f.read()
    return nvidia_mig.profiles(read('mig_lgip_a100_40gb.txt'),
                               read('mig_lgipp_a100_40gb.txt'))


def _host(instances=(), ours=(), in_use=()):
    """The host view of one A100 whose placements the driver offers;
    ``in_use``: placement names a Nova ARQ holds (never: refused)."""
    records = nvidia_mig_made.placement_deployables(
        GPU, _profiles(), list(instances), set(ours), ['CUSTOM_GPU_NVIDIA'])
    deployables = tuple(host_inventory.DeployableView(
        uuid='u-' + r.name, name='node-1_%s_%s' % (GPU, r.name),
        resource_class='VGPU', local_memory_mb=r.local_memory_mb,
        attributes=inv.stored_attributes(r.attributes),
        attach_handles=(host_inventory.AttachHandleView(
            uuid='h-' + r.name, attach_type='PCI',
            attach_info=r.attach_handles[0].attach_info,
            in_use=r.name in in_use),))
        for r in records)
    return inv.of_one_gpu(GPU, 'NVIDIA A100', deployables)


def _claim(count=1):
    return {'devices': {'requests': [
        {'name': 'r%d' % i, 'exactly': {'deviceClassName': 'mig'}}
        for i in range(count)]}}


def _consumed(obj):
    return {d['name'][len(SET) + 1:]: d['consumesCounters']
            for d in obj['spec']['devices']}


def test_the_gpu_set_and_what_each_placement_consumes():
    devices, counters = k8s_slices.build_slices(_host(), DRIVER)
    for obj in (devices, counters):
        assert schemas.schema_errors(obj) == []
        assert schemas.slice_rule_errors(obj) == []
    one = {'value': '1'}
    [gpu_set] = counters['spec']['sharedCounters']
    assert gpu_set == {'name': SET, 'counters': dict(
        {'memory-slice-%d' % i: one for i in range(8)},
        multiprocessors={'value': '98'}, memory={'value': '40448Mi'})}
    consumed = _consumed(devices)
    assert len(consumed) == 14
    assert consumed['mig-3g20gb-9-4'] == [{'counterSet': SET, 'counters': {
        'memory-slice-4': one, 'memory-slice-5': one,
        'memory-slice-6': one, 'memory-slice-7': one,
        'multiprocessors': {'value': '42'}, 'memory': {'value': '20090Mi'}}}]
    assert set(consumed['mig-1g5gb-19-6'][0]['counters']) == {
        'memory-slice-6', 'multiprocessors', 'memory'}
    # Nova's bind_unsupported is no reason here: Prepare makes it.
    assert not [d for d in devices['spec']['devices'] if d.get('taints')]


def test_nova_is_refused_a_placement_kubernetes_is_not():
    """Placement cannot see where an instance sits: the neutral decision
    (Placement's reserve, Nova's bind) keeps bind_unsupported; a claim's
    hold and the slices lift it."""
    records = nvidia_mig_made.placement_deployables(
        GPU, _profiles(), [], set(), [])
    dep = host_inventory.DeployableView(
        uuid='u', name='n', attributes=tuple(sorted(
            (k, str(v)) for k, v in records[0].attributes.items())))
    device = host_inventory.DeviceView(uuid='d', type='GPU', vendor='v',
                                       identity=GPU, deployables=(dep,))
    assert host_inventory.unavailable_reasons(device, dep) == (
        'bind_unsupported',)
    assert 'bind_unsupported' in host_inventory.refusal(device, dep)
    assert host_inventory.refusal(
        device, dep, host_inventory.kubernetes_lifted(dep)) is None
    assert k8s_view.kubernetes_reasons(device, dep) == ()


def test_without_partitionable_devices_no_placement_is_offered():
    assert k8s_slices.build_slices(_host(), DRIVER,
                                   shared_counters=False) == []


def test_what_someone_else_made_leaves_only_what_still_fits():
    theirs = nvidia_mig.Instance(gi_id=3, profile_id=9, start=0, size=4)
    devices, _counters = k8s_slices.build_slices(_host([theirs]), DRIVER)
    assert sorted(_consumed(devices)) == [
        'mig-1g5gb-19-4', 'mig-1g5gb-19-5', 'mig-1g5gb-19-6',
        'mig-2g10gb-14-4', 'mig-3g20gb-9-4']
    # One this host made for a claim takes nothing away: Kubernetes
    # holds its counters.
    devices, _counters = k8s_slices.build_slices(
        _host([theirs], ours={3}), DRIVER)
    assert len(_consumed(devices)) == 14


def test_the_scheduler_never_allocates_two_placements_that_overlap(
        apiserver, sync):
    assert sync.sync(_host()).created == 2
    stored = sorted(apiserver.slices.values(),
                    key=lambda s: s['metadata']['name'])
    whole = allocator.allocate(_claim(), stored,
                               {'mig': lambda d, dev: dev['name'].endswith(
                                   '-7g40gb-0-0')})
    assert whole == {'r0': [(DRIVER, 'node-1', SET + '-mig-7g40gb-0-0')]}
    # Once the whole GPU is allocated, no placement of it is.
    assert allocator.allocate(_claim(), stored, ANY,
                              allocated=whole['r0']) is None
    # Seven 1g.5gb at most: one per slice 0-6, never two on one.
    seven = allocator.allocate(_claim(7), stored, {
        'mig': lambda d, dev: '-1g5gb-' in dev['name']})
    assert len({key for keys in seven.values() for key in keys}) == 7
    assert allocator.allocate(_claim(8), stored, {
        'mig': lambda d, dev: '-1g5gb-' in dev['name']}) is None
    # A 3g.20gb and a 4g.20gb fill the GPU together.
    three = allocator.allocate(_claim(), stored, {
        'mig': lambda d, dev: '-3g20gb-9-4' in dev['name']})
    four = allocator.allocate(_claim(), stored, {
        'mig': lambda d, dev: '-4g20gb-' in dev['name']},
        allocated=three['r0'])
    assert four is not None
    assert allocator.allocate(_claim(), stored, ANY,
                              allocated=three['r0'] + four['r0']) is None
