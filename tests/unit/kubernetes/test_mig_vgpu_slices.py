"""A MIG GPU whose VFs make MIG-backed vGPUs, in the ResourceSlices: its
placements consume the GPU's memory-slice counters as on any MIG GPU;
its MIG-backed types are published tainted (containers take MIG
placements; Nova binds the types); and the instance a Nova bind made
takes the placements over its slices out. The deployables are the nvidia
driver's, scanned from the simulated H100 (tests/fixtures/drivers/
mig_vgpu_host.py), the slices checked against the published schemas."""
import pytest

from cyborg_lite.drivers import nvidia
from cyborg_lite.drivers import sysfs
from cyborg_lite.inventory import views as host_inventory
from cyborg_lite.kubernetes import slices as k8s_slices
from tests.fixtures.drivers import mig_vgpu_host
from tests.unit.kubernetes import inventories as inv
from tests.unit.kubernetes import schemas

PF = mig_vgpu_host.PF


@pytest.fixture
def driver(conf, tmp_path):
    host = mig_vgpu_host.MigVgpuHost(tmp_path / 'h100')
    host.configure(conf)
    found = nvidia.NvidiaDriver(conf)
    found.name = 'nvidia'
    found.write_attribute = host.write
    found.host = host
    return found


def _slices(driver):
    """The node's slices as the driver scans the GPU (nothing held)."""
    [gpu] = driver.discover()
    views = tuple(host_inventory.DeployableView(
        uuid='u-' + r.name, name='node-1_%s_%s' % (PF, r.name),
        resource_class='VGPU', num_accelerators=r.num_accelerators,
        local_memory_mb=r.local_memory_mb,
        attributes=inv.stored_attributes(r.attributes),
        attach_handles=tuple(host_inventory.AttachHandleView(
            uuid='h', attach_type='PCI', attach_info=h.attach_info,
            in_use=False) for h in r.attach_handles))
        for r in gpu.deployables)
    found = k8s_slices.build_slices(inv.of_one_gpu(PF, gpu.model, views),
                                    inv.DRIVER)
    for obj in found:
        assert schemas.schema_errors(obj) == []
        assert schemas.slice_rule_errors(obj) == []
    return [d for obj in found for d in obj['spec'].get('devices') or []]


def _placements(devices):
    return sorted('mig-' + d['name'].split('-mig-')[1] for d in devices
                  if '-mig-' in d['name'])


def test_types_are_tainted_and_a_binds_instance_takes_its_placements(
        driver):
    devices = _slices(driver)
    types = [d for d in devices if '-vgpu-' in d['name']]
    assert len(types) == 7
    assert all(d.get('consumesCounters') is None and
               [t['key'] for t in d['taints']] ==
               ['cyborg-lite.openstack.org/bind-unsupported']
               for d in types)
    assert 'mig-7g80gb-0-0' in _placements(devices)
    assert all(d.get('consumesCounters') for d in devices
               if '-mig-' in d['name'])
    vf = driver.host.vfs[0]
    driver.make_instance(PF, 'vgpu_1105', dict(sysfs.pci_attach_info(vf),
                                               vgpu_type='1105'))
    # The 3g at slices 4-7: only placements within 0-3 are left.
    assert _placements(_slices(driver)) == sorted([
        'mig-1g10gb-19-%d' % s for s in range(4)] + [
        'mig-1g10gbme-20-%d' % s for s in range(4)] + [
        'mig-1g20gb-15-0', 'mig-1g20gb-15-2', 'mig-2g20gb-14-0',
        'mig-2g20gb-14-2', 'mig-3g40gb-9-0', 'mig-4g40gb-5-0'])
