"""The order the slices publish a MIG GPU's placements in, which is the
kube-scheduler's placement policy (its allocator takes the first device
of a slice that fits): kubernetes/mig_counters.ranked, one function the
slice builder and bench/mig_pack's DRA view both use. The placements
are the driver's, from the recorded ``nvidia-smi mig -lgip/-lgipp``."""
import dataclasses
import json
import random
import types

from bench import mig_pack
from cyborg_lite.drivers import nvidia_mig
from cyborg_lite.drivers import nvidia_mig_made
from cyborg_lite.inventory import views as host_inventory
from cyborg_lite.kubernetes import inventory
from cyborg_lite.kubernetes import mig_counters
from cyborg_lite.kubernetes import slices as k8s_slices
from cyborg_lite.kubernetes import view as k8s_view
from tests.unit.kubernetes import inventories as inv

DRIVER = inv.DRIVER
# Addresses in name order, as bench/mig_pack's GPU indexes.
ADDRESSES = ['0000:3b:00.0', '0000:5e:00.0', '0000:86:00.0', '0000:af:00.0']
A100_ORDER = ['mig-1g5gb-19-6', 'mig-1g5gb-19-5', 'mig-1g5gb-19-4',
              'mig-1g5gb-19-3', 'mig-1g5gb-19-2', 'mig-1g5gb-19-1',
              'mig-1g5gb-19-0', 'mig-2g10gb-14-4', 'mig-2g10gb-14-2',
              'mig-2g10gb-14-0', 'mig-3g20gb-9-4', 'mig-3g20gb-9-0',
              'mig-4g20gb-5-0', 'mig-7g40gb-0-0']


def _gpu(address, model, instances=(), held=(), shuffle=None):
    """The host view of one MIG GPU whose placements the driver offers,
    those named in ``held`` held for a claim; ``shuffle``: a Random the
    deployables' order is shuffled with."""
    records = nvidia_mig_made.placement_deployables(
        address, list(mig_pack.gpu_profiles(model).values()),
        list(instances), set(), [])
    if shuffle is not None:
        shuffle.shuffle(records)
    return host_inventory.DeviceView(
        uuid='d-' + address, type='GPU', vendor='0x10de', identity=address,
        pci_address=address, model=model, deployables=tuple(
            host_inventory.DeployableView(
                uuid='u-%s-%s' % (address, r.name),
                name='node-1_%s_%s' % (address, r.name),
                resource_class='VGPU', local_memory_mb=r.local_memory_mb,
                attributes=inv.stored_attributes(r.attributes),
                attach_handles=(host_inventory.AttachHandleView(
                    uuid='h-' + r.name, attach_type='PCI',
                    attach_info=r.attach_handles[0].attach_info,
                    in_use=r.name in held,
                    k8s_claim='uid-1' if r.name in held else None),))
            for r in records))


def _host(gpus, others=(), shuffle=None):
    """node-1 with these (address, model[, instances]) MIG GPUs and
    ``others`` (kubernetes/inventory Devices)."""
    conf = types.SimpleNamespace(node_names={}, informational_taints=True,
                                 unhealthy_taint_effect='NoSchedule')
    views = tuple(_gpu(*gpu, shuffle=shuffle) for gpu in gpus)
    host = k8s_view.k8s_inventory(
        host_inventory.HostInventory('node-1', views), 'node-1', conf)
    return dataclasses.replace(host, devices=host.devices + tuple(others))


def _published(slices):
    """The device names of the slices in order (slice 0 first)."""
    return [d['name'] for obj in slices
            for d in obj['spec'].get('devices') or []]


def _prefix(address):
    """What the names of a GPU's devices start with."""
    return 'gpu-%s-' % address.replace(':', '-').replace('.', '-')


def _of_gpu(names, address):
    return [n[len(_prefix(address)):] for n in names
            if n.startswith(_prefix(address))]


def test_a_gpus_placements_come_in_the_policys_order_the_rest_by_name():
    others = (inv.fpga_card('node-1', 0), inv.gpu('node-1', 0))
    names = _published(k8s_slices.build_slices(
        _host([(ADDRESSES[0], 'a100_40gb')], others), DRIVER))
    assert _of_gpu(names, ADDRESSES[0]) == A100_ORDER
    # Together, where the first of their names sorts among the others'.
    first = names.index('gpu-0000-3b-00-0-mig-1g5gb-19-6')
    assert names[first:first + 14] == [
        'gpu-0000-3b-00-0-' + n for n in A100_ORDER]
    rest = names[:first] + names[first + 14:]
    assert rest == sorted(rest) == [
        'fpga-0000-5e-00-0-region0', 'fpga-0000-5e-00-0-region1',
        'gpu-0000-80-00-0-pgpu']


def test_the_policy_ranks_on_the_gpu_as_offered():
    """Someone else's 1g at slice 1: slice 0 alone is a 1g's best fit
    now, and slices 2-3 before 4-7, where the 3g's placement is."""
    theirs = nvidia_mig.Instance(gi_id=3, profile_id=19, start=1, size=1)
    names = _published(k8s_slices.build_slices(
        _host([(ADDRESSES[0], 'a100_40gb', [theirs])]), DRIVER))
    assert _of_gpu(names, ADDRESSES[0]) == [
        'mig-1g5gb-19-0', 'mig-1g5gb-19-3', 'mig-1g5gb-19-2',
        'mig-1g5gb-19-6', 'mig-1g5gb-19-5', 'mig-1g5gb-19-4',
        'mig-2g10gb-14-2', 'mig-2g10gb-14-4', 'mig-3g20gb-9-4']


def test_a_claims_instance_moves_the_order_to_the_next_best_fit():
    """A claim holds the 3g at slices 4-7: a 1g's best fit is now slice
    3 (where bench/mig_pack's Placement view makes one), so the 1g
    placements that fit come first, best first, and those under the 3g
    after them; the 3g's other placement fits and leads its profile."""
    address, model = ADDRESSES[0], 'a100_40gb'
    names = _of_gpu(_published(k8s_slices.build_slices(
        _host([(address, model, (), ('mig-3g20gb-9-4',))]), DRIVER)),
        address)
    assert names == [
        'mig-1g5gb-19-3', 'mig-1g5gb-19-2', 'mig-1g5gb-19-1',
        'mig-1g5gb-19-0', 'mig-1g5gb-19-6', 'mig-1g5gb-19-5',
        'mig-1g5gb-19-4', 'mig-2g10gb-14-2', 'mig-2g10gb-14-0',
        'mig-2g10gb-14-4', 'mig-3g20gb-9-0', 'mig-3g20gb-9-4',
        'mig-4g20gb-5-0', 'mig-7g40gb-0-0']
    profiles = list(mig_pack.gpu_profiles(model).values())
    [one_g] = [p for p in profiles if p.id == 19]
    assert mig_pack.best_start(one_g, frozenset(range(4)), profiles) == 3


def test_an_unchanged_inventory_gives_the_same_slices_and_no_write(sync):
    gpus = [(ADDRESSES[0], 'a100_40gb'), (ADDRESSES[1], 'h100_80gb')]
    first = k8s_slices.build_slices(_host(gpus), DRIVER)
    for seed in range(3):
        again = k8s_slices.build_slices(
            _host(gpus, shuffle=random.Random(seed)), DRIVER)
        assert json.dumps(again) == json.dumps(first)
    assert sync.sync(_host(gpus)).writes > 0
    assert sync.sync(_host(gpus, shuffle=random.Random(7))).writes == 0


def test_the_order_depends_on_no_order_it_is_given():
    """A device whose name sorts among a GPU's placements' comes after
    them all, however the inventory lists them."""
    gpu = inventory.Device(uuid='g', type='GPU', vendor='v', model='m',
                           identity='0000:3b:00.0')
    other = inventory.Device(uuid='o', type='GPU', vendor='v', model='m',
                             identity='0000:3c:00.0')
    named = {'a-1': (gpu, inventory.Deployable(
                 uuid='1', name='1', resource_class='VGPU',
                 mig_placement=(19, 1, 1))),
             'a-2': (other, inventory.Deployable(
                 uuid='2', name='2', resource_class='PGPU')),
             'a-3': (gpu, inventory.Deployable(
                 uuid='3', name='3', resource_class='VGPU',
                 mig_placement=(19, 0, 1)))}
    for names in (['a-1', 'a-2', 'a-3'], ['a-3', 'a-2', 'a-1']):
        order = mig_counters.publication_order({n: named[n] for n in names})
        assert sorted(names, key=order.get) == ['a-1', 'a-3', 'a-2']


def test_the_bench_measures_the_order_the_slices_carry():
    """Idle, and with a claim's 2g at slices 2-3 of the H100 (third
    GPU) and its 3g at 0-3 of the first A100."""
    fleet = mig_pack.fleet('a100_40gb:2,h100_80gb:2')
    models = [model for model, _ in fleet]
    held = {0: (9, 0, 'mig-3g20gb-9-0'), 2: (14, 2, 'mig-2g20gb-14-2')}
    index = {_prefix(a): i for i, a in enumerate(ADDRESSES)}
    for claimed in ({}, held):
        gpus = [mig_pack.Gpu(model, profiles) for model, profiles in fleet]
        for i, (pid, start, _name) in claimed.items():
            gpus[i].take(gpus[i].profiles[pid], start)
        slices = k8s_slices.build_slices(_host(
            (a, m, (), [claimed[i][2]] if i in claimed else ())
            for i, (a, m) in enumerate(zip(ADDRESSES, models))), DRIVER)
        carried = []
        for name in _published(slices):
            gpu, placement = name.split('-mig-')
            carried.append((index[gpu + '-'],) + nvidia_mig_made.
                           placement_of_name('mig-' + placement))
        assert carried == mig_pack.published_devices(gpus, now=True)
    assert carried != mig_pack.published_devices(gpus)


def test_a_gpus_placements_stay_in_one_slice():
    """14 placements an A100, 25 an H100: 78 in all, cut so no GPU's
    straddles two slices (the scheduler walks them in any order)."""
    models = ['a100_40gb', 'a100_40gb', 'h100_80gb', 'h100_80gb']
    slices = k8s_slices.build_slices(_host(zip(ADDRESSES, models)), DRIVER)
    per_slice = [{n.split('-mig-')[0] for n in _published([obj])}
                 for obj in slices if obj['spec'].get('devices')]
    assert per_slice == [
        {'gpu-0000-3b-00-0', 'gpu-0000-5e-00-0', 'gpu-0000-86-00-0'},
        {'gpu-0000-af-00-0'}]
    assert [len(obj['spec']['devices']) for obj in slices[:2]] == [53, 25]


def test_the_cut_splits_only_a_run_longer_than_a_slice():
    devices = [{'name': 'd%02d' % i} for i in range(10)]
    runs = {'d02': 'a', 'd03': 'a', 'd04': 'a', 'd05': 'b', 'd06': 'b',
            'd07': 'b', 'd08': 'b'}

    def names(chunks):
        return [[d['name'][1:] for d in chunk] for chunk in chunks]

    assert names(k8s_slices.cut(devices, runs, 4)) == [
        ['00', '01'], ['02', '03', '04'], ['05', '06', '07', '08'], ['09']]
    assert names(k8s_slices.cut(devices, runs, 3)) == [
        ['00', '01'], ['02', '03', '04'], ['05', '06', '07'], ['08', '09']]
    assert names(k8s_slices.cut(devices, {}, 4)) == [
        ['00', '01', '02', '03'], ['04', '05', '06', '07'], ['08', '09']]


def test_the_ranking_on_an_idle_gpu_is_the_best_fit_in_turn():
    """Each profile's first published start is where bench/mig_pack's
    Placement view makes it on an idle GPU (the best fit of
    common/mig_placements), and the next where it would be made if that
    one were not offered."""
    for model in ('a100_40gb', 'h100_80gb'):
        profiles = list(mig_pack.gpu_profiles(model).values())
        idle = frozenset(range(nvidia_mig.slice_count(profiles)))
        ranked = mig_counters.ranked(
            (p.id, s, p.size) for p in profiles for s in p.starts)
        assert [pid for pid, _s, _z in ranked] == [
            p.id for p in profiles for _ in p.starts]
        for profile in profiles:
            starts = [s for pid, s, _z in ranked if pid == profile.id]
            for k, start in enumerate(starts):
                left = profile._replace(starts=starts[k:])
                assert start == mig_pack.best_start(left, idle, profiles)
