"""vGPU types of a vendor-VFIO card in the ResourceSlices (KEP-4815): each
type as many devices as the card could make of it, all consuming the
card's ``vfs`` and ``card-shares``. The deployables are the nvidia
driver's, scanned from the simulated H200 host (tests/fixtures/drivers/
vgpu_vfio_host.py, its kernel acting on writes); the slices checked
against the published schemas and the apiserver's rules, synced through
the real client to the apiserver stand-in, and allocated by the
reference allocator from what it stores."""
import dataclasses

import pytest

from cyborg_lite.drivers import nvidia
from cyborg_lite.inventory import views as host_inventory
from cyborg_lite.kubernetes import slices as k8s_slices
from tests.fixtures.drivers import vgpu_vfio_host
from tests.unit.kubernetes import allocator
from tests.unit.kubernetes import inventories as inv
from tests.unit.kubernetes import schemas

DRIVER = inv.DRIVER
PF = vgpu_vfio_host.PFS[0]
SET = 'gpu-0000-41-00-0'
MOST = {t[0]: t[2] for t in vgpu_vfio_host.H200X_TYPES}
# The least common multiple of the H200's Max Instances (32, 20, 16,
# 10, 8, 5, 4, 2, 1): a type takes 160 / its Max Instances.
SHARES = 160


def _kernel(tmp_path, num_vfs=vgpu_vfio_host.TOTAL_VFS):
    return vgpu_vfio_host.VgpuVfioHost(tmp_path / 'h200', num_vfs=num_vfs)


@pytest.fixture
def kernel(tmp_path):
    return _kernel(tmp_path)


def _views(conf, kernel, k8s=(), nova=()):
    """The card's deployables as the driver scans them and the database
    gives them back; ``k8s`` and ``nova``: (type id, VF index) whose
    handle a claim or an ARQ holds."""
    kernel.configure(conf)
    driver = nvidia.NvidiaDriver(conf)
    [gpu] = driver.discover()

    def handle(dep, h):
        info = h.attach_info
        held = [(int(info['vgpu_type']), i) for i, vf in enumerate(
            kernel.vfs[PF]) if vf.endswith('%s.%s' % (info['device'],
                                                      info['function']))]
        return host_inventory.AttachHandleView(
            uuid='h', attach_type='PCI', attach_info=info,
            in_use=bool(set(held) & set(k8s) | set(held) & set(nova)),
            k8s_claim='uid' if set(held) & set(k8s) else None)
    return tuple(host_inventory.DeployableView(
        uuid='u-' + r.name, name='node-1_%s_%s' % (PF, r.name),
        resource_class='VGPU', num_accelerators=r.num_accelerators,
        attributes=inv.stored_attributes(r.attributes),
        attach_handles=tuple(handle(r, h) for h in r.attach_handles))
        for r in gpu.deployables)


def _k8s(deployables):
    return inv.of_one_gpu(PF, 'NVIDIA H200', deployables)


def _host(conf, kernel, k8s=(), nova=()):
    """The Kubernetes view of the card as the driver scans it."""
    return _k8s(_views(conf, kernel, k8s, nova))


def _write(kernel, index, text):
    kernel.write(kernel.vf_file(PF, index, 'current_vgpu_type'), text)


def _make(conf, kernel, index, type_id):
    """This host's driver makes a vGPU (a bind's or a Prepare's)."""
    kernel.configure(conf)
    driver = nvidia.NvidiaDriver(conf)
    driver.write_attribute = kernel.write
    vf = kernel.vfs[PF][index]
    driver.make_instance(PF, 'vgpu_%d' % type_id, dict(
        domain=vf[:4], bus=vf[5:7], device=vf[8:10], function=vf[11],
        vgpu_type=str(type_id)))


def _slices(inventory, **options):
    found = k8s_slices.build_slices(inventory, DRIVER, **options)
    for obj in found:
        assert schemas.schema_errors(obj) == []
        assert schemas.slice_rule_errors(obj) == []
    return found


def _devices(found):
    """{device name less the set's: its consumption} of the slices."""
    return {d['name'][len(SET) + 1:]: d.get('consumesCounters')
            for obj in found for d in obj['spec'].get('devices') or []}


def _counters(found):
    [card] = [s for obj in found
              for s in obj['spec'].get('sharedCounters') or []]
    assert card['name'] == SET
    return {c: v['value'] for c, v in card['counters'].items()}


def _per_type(devices):
    count = {}
    for name in devices:
        type_id = int(name.split('-')[1])
        count[type_id] = count.get(type_id, 0) + 1
    return count


def _claim(count=1):
    return {'devices': {'requests': [
        {'name': 'r', 'exactly': {'deviceClassName': 'vgpu',
                                  'count': count}}]}}


def _of(type_id):
    return {'vgpu': lambda d, dev: '-vgpu-%d-' % type_id in dev['name']}


ANY = {'vgpu': lambda d, dev: '-vgpu-' in dev['name']}


def test_every_type_as_many_devices_as_it_can_make_consuming_the_card(
        conf, kernel):
    found = _slices(_host(conf, kernel))
    devices = _devices(found)
    assert _per_type(devices) == MOST
    assert len(devices) == sum(MOST.values())
    assert _counters(found) == {'card-shares': str(SHARES), 'vfs': '32'}
    assert devices['vgpu-1426-3'] == [{'counterSet': SET, 'counters': {
        'card-shares': {'value': '40'}, 'vfs': {'value': '1'}}}]
    assert devices['vgpu-1420-31'][0]['counters']['card-shares'] == {
        'value': '5'}
    assert devices['vgpu-1428-0'][0]['counters']['card-shares'] == {
        'value': str(SHARES)}
    # Prepare makes them: no bind-unsupported taint, nor any other.
    assert not [d for obj in found for d in obj['spec'].get('devices', [])
                if d.get('taints')]


def test_the_slices_shrink_and_grow_as_creatable_vgpu_types_does(
        conf, kernel):
    """A type someone else writes is left alone and counted: only that
    type is listed now, with what the card has left; its 0 gives every
    type back."""
    _write(kernel, 5, '1426')
    found = _slices(_host(conf, kernel))
    assert _per_type(_devices(found)) == {1426: 4}
    assert _counters(found) == {'card-shares': str(SHARES - 40),
                                'vfs': '31'}
    _write(kernel, 6, '1426')
    assert _counters(_slices(_host(conf, kernel))) == {
        'card-shares': str(SHARES - 80), 'vfs': '30'}
    for index in (7, 8):
        _write(kernel, index, '1426')
    # The card is full (only the header in every free VF): none offered.
    assert _slices(_host(conf, kernel)) == []
    for index in (5, 6, 7, 8):
        _write(kernel, index, '0')
    found = _slices(_host(conf, kernel))
    assert _per_type(_devices(found)) == MOST
    assert _counters(found) == {'card-shares': str(SHARES), 'vfs': '32'}


def test_a_claim_s_vgpu_is_held_by_its_device_nova_s_out_of_the_counters(
        conf, tmp_path, kernel):
    conf.set_override('vgpu_state_file', str(tmp_path / 'made.json'),
                      group='nvidia_driver')
    _make(conf, kernel, 0, 1426)
    # A claim's: its allocated device consumes it, the totals keep it.
    found = _slices(_host(conf, kernel, k8s=[(1426, 0)]))
    assert _counters(found) == {'card-shares': str(SHARES), 'vfs': '32'}
    assert _per_type(_devices(found)) == {1426: 4}
    # Nova's: out of the totals, no in-use taint (the counters hold it).
    found = _slices(_host(conf, kernel, nova=[(1426, 0)]))
    assert _counters(found) == {'card-shares': str(SHARES - 40),
                                'vfs': '31'}
    assert not [d for obj in found for d in obj['spec'].get('devices', [])
                if d.get('taints')]
    # Nova's hold before its make counts too.
    _write(kernel, 0, '0')
    conf.clear_override('vgpu_state_file', group='nvidia_driver')
    assert _counters(_slices(_host(conf, kernel, nova=[(1426, 0)]))) == {
        'card-shares': str(SHARES - 40), 'vfs': '31'}


def test_without_partitionable_devices_no_type_is_offered(conf, kernel):
    assert k8s_slices.build_slices(_host(conf, kernel), DRIVER,
                                   shared_counters=False) == []


def _stored(apiserver, sync, inventory):
    sync.sync(inventory)
    return sorted(apiserver.slices.values(),
                  key=lambda s: s['metadata']['name'])


def test_the_scheduler_never_allocates_more_than_the_card_makes(
        conf, kernel, apiserver, sync):
    stored = _stored(apiserver, sync, _host(conf, kernel))
    four = allocator.allocate(_claim(4), stored, _of(1426))
    assert len(four['r']) == 4
    # The card's shares are spent: nothing more, of any type.
    assert allocator.allocate(_claim(), stored, ANY,
                              allocated=four['r']) is None
    # Two 70C fill it as well; one 70C leaves room for two 35C.
    two = allocator.allocate(_claim(2), stored, _of(1427))
    assert allocator.allocate(_claim(), stored, ANY,
                              allocated=two['r']) is None
    one = allocator.allocate(_claim(), stored, _of(1427))
    assert len(allocator.allocate(_claim(2), stored, _of(1426),
                                  allocated=one['r'])['r']) == 2
    assert allocator.allocate(_claim(3), stored, _of(1426),
                              allocated=one['r']) is None


def test_someone_else_s_vgpus_leave_only_what_the_card_can_still_make(
        conf, kernel, apiserver, sync):
    for index in (3, 9):
        _write(kernel, index, '1426')
    stored = _stored(apiserver, sync, _host(conf, kernel))
    # Four devices of 35C are published; the card makes two more.
    assert len(allocator.allocate(_claim(2), stored, _of(1426))['r']) == 2
    assert allocator.allocate(_claim(3), stored, _of(1426)) is None


def test_never_more_vgpus_than_the_card_has_vfs(conf, tmp_path, apiserver,
                                                sync):
    """Eight VFs enabled: eight 4C devices; with two of them made by
    someone else, six more, though the shares would allow 30."""
    kernel = _kernel(tmp_path, num_vfs=8)
    for index in (0, 1):
        _write(kernel, index, '1420')
    inventory = _host(conf, kernel)
    stored = _stored(apiserver, sync, inventory)
    assert _per_type(_devices(_slices(inventory))) == {1420: 8}
    assert len(allocator.allocate(_claim(6), stored, _of(1420))['r']) == 6
    assert allocator.allocate(_claim(7), stored, _of(1420)) is None


def test_an_earlier_agent_s_types_stay_tainted(conf, kernel):
    """An agent of the release before reports no ``gpu_vfs``: its Prepare
    does not make vGPUs, so each type stays one device, tainted
    bind-unsupported, consuming nothing."""
    found = _slices(_k8s(tuple(
        dataclasses.replace(d, attributes=tuple(
            (k, v) for k, v in d.attributes
            if k not in ('gpu_vfs', 'vgpu_max_instances')))
        for d in _views(conf, kernel))))
    devices = [d for obj in found for d in obj['spec'].get('devices', [])]
    assert len(devices) == len(MOST)
    assert [[t['key'].split('/')[1] for t in d['taints']]
            for d in devices] == [['bind-unsupported']] * len(MOST)
    assert not [d for d in devices if d.get('consumesCounters')]
