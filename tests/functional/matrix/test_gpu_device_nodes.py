"""What a container is given for an NVIDIA GPU, where the services meet:
a kubelet speaking the real DRA gRPC prepares a claim of a whole GPU
(tests/fixtures/drivers/gpu_host.py), of a MIG placement made at
Prepare (mig_host.py) or of a vGPU made in a VF (vgpu_vfio_host.py), and
the CDI spec written for it names the GPU's device nodes on the
simulated host and the capability nodes of the instance made, or the
VFIO nodes of the VF; a node the host lacks fails the claim and holds
nothing."""
import os

import pytest

from cyborg_lite.agent.dra import cdi
from tests import waiting
from tests.fixtures.drivers import mig_host
from tests.fixtures.drivers import vgpu_vfio_host
from tests.functional.matrix import claims

pytestmark = pytest.mark.xdist_group('matrix')

GPU = '0000:3b:00.0'            # minor 0
OTHER = '0000:af:00.0'          # minor 1
CONTROL = ['/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools']
H200 = 'gpu-0000-41-00-0'
VGPU_TYPES = 2 + len(vgpu_vfio_host.H200X_TYPES)


def _device(host, key):
    [dep] = [d for d in host.deployables() if host.key_of(d) == key]
    return dep, host.slice_devices()[dep['uuid']]['name']


def _claim(host, device_name):
    return claims.allocated(host, 'gpu-%s' % device_name[-12:],
                            [('gpu', device_name)])


def _spec_path(host, claim):
    return cdi.spec_path(host.conf.kubernetes.cdi_dir,
                         host.conf.kubernetes.driver_name,
                         claim['metadata']['uid'])


def _nodes(host, claim):
    """[(path, hostPath)] of the claim's one device in its CDI spec."""
    [device] = claims.cdi_devices(host, claim)
    return [(n['path'], n.get('hostPath', n['path']))
            for n in device['containerEdits']['deviceNodes']]


def _on_host(gpus, paths):
    return [(p, os.path.join(gpus.dev, p[len('/dev/'):])) for p in paths]


def test_a_whole_gpu_s_claim_gets_its_device_nodes(make_host):
    host = make_host(gpus=True)
    _dep, name = _device(host, OTHER + '/pgpu')
    claim = _claim(host, name)
    assert host.prepare(claim) == ''
    assert _nodes(host, claim) == _on_host(host.gpu_host,
                                           CONTROL + ['/dev/nvidia1'])
    assert host.unprepare(claim) == ''


def test_a_mig_placement_s_claim_gets_its_instance_s_caps(make_host):
    host = make_host(gpus='mig', expected=2 + 2 * 14)
    mig = host.gpu_host
    mig.make_other(GPU, 19, 0)              # GI 1, someone else's
    host.scan()
    _dep, name = _device(host, GPU + '/mig-3g20gb-9-4')
    claim = _claim(host, name)
    assert host.prepare(claim) == ''
    [gi] = [g for g, p, _s in mig.instances(GPU) if p == 9]
    assert _nodes(host, claim) == _on_host(mig, CONTROL + [
        '/dev/nvidia0',
        '/dev/nvidia-caps/nvidia-cap%d' % mig_host.cap_minor(0, gi),
        '/dev/nvidia-caps/nvidia-cap%d' % mig_host.cap_minor(0, gi, 0)])
    assert host.unprepare(claim) == ''


def test_a_node_the_host_lacks_fails_the_claim_and_holds_nothing(
        make_host):
    host = make_host(gpus='mig', expected=2 + 2 * 14)
    mig = host.gpu_host
    host.gpu_host.remove_node('nvidia-uvm')
    dep, name = _device(host, GPU + '/mig-1g5gb-19-6')
    claim = _claim(host, name)
    error = host.prepare(claim)
    assert os.path.join(mig.dev, 'nvidia-uvm') in error, error
    assert not os.path.exists(_spec_path(host, claim))
    # The hold is given back and its clean destroys what Prepare made.
    waiting.read_until(
        lambda: (host.call('GET', '/deployables/' + dep['uuid'],
                           200).json()['device_state'],
                 mig.instances(GPU)),
        lambda found: found == ('available', []), 20,
        what='the hold given back, the instance destroyed')


def test_a_vgpu_claim_gets_the_vfio_nodes_of_its_vf(make_host):
    host = make_host(gpus='vgpu', expected=VGPU_TYPES)
    kernel = host.gpu_host
    claim = _claim(host, H200 + '-vgpu-1426-0')
    assert host.prepare(claim) == ''
    [device] = claims.cdi_devices(host, claim)
    vf = claims.env(device)['CYBORG_LITE_PCI_ADDRESS']
    assert kernel.current[vf] == 1426
    group = kernel.iommu_groups[vf]
    assert _nodes(host, claim) == [
        (p, os.path.join(kernel.dev, p[len('/dev/'):])) for p in (
            '/dev/vfio/devices/' + kernel.cdevs[vf], '/dev/iommu',
            '/dev/vfio/%d' % group, '/dev/vfio/vfio')]
    assert host.unprepare(claim) == ''


def test_a_vfio_node_the_host_lacks_fails_the_vgpu_claim(make_host):
    host = make_host(gpus='vgpu', expected=VGPU_TYPES)
    kernel = host.gpu_host
    kernel.remove_node('iommu')
    claim = _claim(host, H200 + '-vgpu-1427-0')
    error = host.prepare(claim)
    assert os.path.join(kernel.dev, 'iommu') in error, error
    assert not os.path.exists(_spec_path(host, claim))
    # The hold is given back and its clean removes the vGPU made.
    waiting.read_until(lambda: sorted(set(kernel.current.values())),
                       lambda found: found == [0], 20,
                       what='the vGPU removed')
