"""The VFIO device nodes the nvidia driver gives a container for the vGPU
VF a Prepare made (drivers/nvidia_vfio_nodes.py), read from the
simulated H200 host's sysfs and /dev (tests/fixtures/drivers/
vgpu_vfio_host.py): the VF's IOMMU group and VFIO cdev, and an error for
anything the host does not have."""
import os

import pytest

from cyborg_lite.common import exception
from cyborg_lite.drivers import nvidia
from cyborg_lite.drivers import nvidia_vfio_nodes
from tests.fixtures.drivers import vgpu_vfio_host

PF = vgpu_vfio_host.PFS[0]
TYPE = 'vgpu_1426'


def _make_host(conf, tmp_path, **kwargs):
    host = vgpu_vfio_host.VgpuVfioHost(tmp_path / 'h200', **kwargs)
    host.configure(conf)
    return host


@pytest.fixture
def host(conf, tmp_path):
    return _make_host(conf, tmp_path)


def _driver(conf, host):
    driver = nvidia.NvidiaDriver(conf)
    driver.name = 'nvidia'
    driver.write_attribute = host.write
    driver.discover()
    return driver


def _handle(vf):
    return dict(domain=vf[:4], bus=vf[5:7], device=vf[8:10],
                function=vf[11], vgpu_type='1426')


def _make(driver, host, index):
    """The Prepare's make_instance on VF ``index``; the VF's address."""
    vf = host.vfs[PF][index]
    driver.make_instance(PF, TYPE, _handle(vf))
    return vf


def _nodes(driver, vf):
    """What the Prepare of the claim whose handle is ``vf`` asks."""
    return driver.device_nodes(PF, TYPE, _handle(vf))


def _expected(host, vf):
    return [('/dev/' + n, os.path.join(host.dev, n))
            for n in host.vfio_nodes(vf)]


def test_the_group_of_a_vf_is_its_iommu_group_link(host):
    vf = host.vfs[PF][2]
    group = host.iommu_groups[vf]
    assert nvidia_vfio_nodes.iommu_group(host.sys, vf) == group
    assert os.readlink(os.path.join(host.sys, 'bus', 'pci', 'devices', vf,
                                    'iommu_group')) == \
        '../../../kernel/iommu_groups/%d' % group
    assert nvidia_vfio_nodes.cdev(host.sys, vf) == 'vfio2'


def test_each_prepare_gets_the_nodes_of_its_claim_s_vf(conf, host):
    driver = _driver(conf, host)
    first = _make(driver, host, 3)
    nodes = _nodes(driver, first)
    group = host.iommu_groups[first]
    assert nodes == [
        ('/dev/vfio/devices/vfio3', os.path.join(host.dev, 'vfio', 'devices',
                                                 'vfio3')),
        ('/dev/iommu', os.path.join(host.dev, 'iommu')),
        ('/dev/vfio/%d' % group, os.path.join(host.dev, 'vfio', str(group))),
        ('/dev/vfio/vfio', os.path.join(host.dev, 'vfio', 'vfio'))]
    # A second of the same type on the card: its own VF's, not the first's.
    second = _make(driver, host, 5)
    assert _nodes(driver, second) == _expected(host, second)
    assert _nodes(driver, first) == nodes
    # No handle named: which VF is unknown, never a guess.
    with pytest.raises(exception.DriverError, match='no VF of vgpu_1426 '
                       'of GPU %s was named' % PF):
        driver.device_nodes(PF, TYPE)


def test_a_host_without_cdevs_gives_the_group_s_two(conf, tmp_path):
    host = _make_host(conf, tmp_path, cdev=False)
    driver = _driver(conf, host)
    vf = _make(driver, host, 0)
    assert [p for p, _h in _nodes(driver, vf)] == [
        '/dev/vfio/%d' % host.iommu_groups[vf], '/dev/vfio/vfio']


def test_a_host_without_the_group_interface_gives_the_cdev_s(conf, host):
    vf = host.vfs[PF][4]
    host.remove_node('vfio/vfio')
    host.remove_node('vfio/%d' % host.iommu_groups[vf])
    driver = _driver(conf, host)
    _make(driver, host, 4)
    assert [p for p, _h in _nodes(driver, vf)] == [
        '/dev/vfio/devices/vfio4', '/dev/iommu']


@pytest.mark.parametrize('cdev,missing', [
    (True, 'iommu'), (True, 'vfio/devices/vfio6'), (False, 'vfio/vfio'),
    (False, 'vfio/46')])
def test_a_node_the_host_lacks_fails_with_its_path(conf, tmp_path, cdev,
                                                   missing):
    host = _make_host(conf, tmp_path, cdev=cdev)
    assert host.iommu_groups[host.vfs[PF][5]] == 46     # PF 40, VF0 41
    host.remove_node(missing)
    driver = _driver(conf, host)
    vf = _make(driver, host, 6 if cdev else 5)
    with pytest.raises(exception.DriverError, match=os.path.join(
            host.dev, missing)):
        _nodes(driver, vf)


def test_a_vf_without_iommu_group_fails(conf, host):
    vf = host.vfs[PF][2]
    os.unlink(os.path.join(host.function_dir(vf), 'iommu_group'))
    driver = _driver(conf, host)
    _make(driver, host, 2)
    with pytest.raises(exception.DriverError, match='PCI %s has no IOMMU '
                       'group' % vf):
        _nodes(driver, vf)
