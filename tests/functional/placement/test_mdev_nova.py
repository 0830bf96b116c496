"""A vGPU (mdev) ARQ, end to end into Nova's libvirt driver.

An agent with the nvidia driver reads a recorded A10 host whose vGPU
host driver publishes mdev types (tests/fixtures/drivers/nvidia/
vgpu_sys); the conductor publishes a provider per type to the real
Placement; a claim and a bind through the API (the real conductor over
inproc:// RPC) give a Bound ARQ; and Nova's own libvirt code
(``LibvirtDriver._allocate_cyborg_mdevs``, in its venv: tests/nova.py)
reads that ARQ as our API returns it and makes the mdev: of the asked
type, under the parent GPU's PCI address, with the handle's uuid.
"""
import shutil
import uuid

import pytest
import requests

from cyborg_lite.drivers import nvidia
from tests import nova
from tests import waiting
from tests.functional.placement import one_host
from tests.functional.placement.one_host import ACCEL
from tests.functional.placement.one_host import ADMIN
from tests.functional.placement.one_host import MEMBER
from tests.functional.placement.one_host import PLACEMENT
from tests.unit.drivers.conftest import fixture_path

_placement = one_host.placement_get

GPU = '0000:3b:00.0'
PROFILE = [{'name': 'vgpu-a10', 'groups': [
    {'resources:VGPU': '1', 'trait:CUSTOM_GPU_NVIDIA_A10': 'required'}]}]

# Nova's compute manager hands the bound ARQs (as Cyborg's API lists
# them) to the libvirt driver, which makes their mdevs before the guest's
# XML; libvirt's host is a recorder of the node devices Nova creates,
# none of which exists yet.
NOVA_MDEVS = '''
import json, sys
from nova import objects
objects.register_all()
import types
from nova.virt.libvirt import driver as libvirt_driver
class LibvirtError(Exception):
    def get_error_code(self):
        return self.code
# libvirt-python's two names the code reads (libvirt.h: 67 is
# VIR_ERR_NO_NODE_DEVICE); the module is not in Nova's venv.
libvirt_driver.libvirt = types.SimpleNamespace(
    libvirtError=LibvirtError, VIR_ERR_NO_NODE_DEVICE=67)
arqs = json.load(sys.stdin)
made = []
class Device:
    def name(self):
        return 'mdev'
class Host:
    def device_lookup_by_name(self, name):
        error = LibvirtError('Node device not found: ' + name)
        error.code = 67
        raise error
    def device_create(self, conf):
        made.append({'parent': conf.parent,
                     'type': conf.mdev_information.type,
                     'uuid': conf.mdev_information.uuid})
    def device_define(self, conf):
        return Device()
    def device_set_autostart(self, device, autostart):
        pass
driver = libvirt_driver.LibvirtDriver.__new__(libvirt_driver.LibvirtDriver)
driver._host = Host()
driver.pgpu_type_mapping = {}
driver.pgpu_type_default = None
mdevs = driver._allocate_cyborg_mdevs(arqs)
print(json.dumps({'mdevs': mdevs, 'made': made}))
'''


@pytest.fixture
def hostname():
    return 'vgpu-host-%s' % uuid.uuid4().hex[:8]


@pytest.fixture
def cloud(sqlite_db, conf, placement, hostname, tmp_path):
    """Placement, conductor, an agent with nvidia on the mdev host, the
    API."""
    sysfs = tmp_path / 'sys'
    shutil.copytree(fixture_path('nvidia', 'vgpu_sys'), sysfs, symlinks=True)
    tool = tmp_path / 'nvidia-smi'
    tool.write_text('#!/bin/sh\n[ "$1 $2" = "-q -x" ] || exit 64\ncat "%s"\n'
                    % fixture_path('nvidia', 'vgpu_host.xml'))
    tool.chmod(0o755)
    one_host.configure(conf, placement)
    conf.set_override('nvidia_smi_path', str(tool), group='nvidia_driver')
    conf.set_override('sysfs_root', str(sysfs), group='nvidia_driver')
    driver = nvidia.NvidiaDriver(conf)
    driver.name = 'nvidia'
    with one_host.serving(conf, hostname, driver, 'cond-vgpu') as app:
        yield app


def _vgpu_providers(server, hostname):
    """{provider name: (VGPU total, traits, uuid)} of the host."""
    root = _placement(server, '/resource_providers', name=hostname)[
        'resource_providers']
    found = {}
    for rp in (_placement(server, '/resource_providers',
                          in_tree=root[0]['uuid'])['resource_providers']
               if root else []):
        path = '/resource_providers/%s' % rp['uuid']
        inventories = _placement(server, path + '/inventories')['inventories']
        if 'VGPU' in inventories:
            found[rp['name']] = (
                inventories['VGPU']['total'],
                set(_placement(server, path + '/traits')['traits']),
                rp['uuid'])
    return found


def test_nova_makes_the_mdev_our_bound_arq_names(cloud, placement, hostname):
    app = cloud
    offers = waiting.read_until(
        lambda: _vgpu_providers(placement, hostname),
        lambda found: any(traits for _, traits, _ in found.values()),
        timeout=60, what='the vGPU type providers, with traits')
    [(name, (total, traits, rp_uuid))] = [
        item for item in offers.items() if item[0].endswith('nvidia-588')]
    assert total == 6
    # Ours, never Nova's: Nova's scheduler asks OWNER_NOVA only of its own
    # providers (nova/scheduler/request_filter.py owner_nova_filter).
    assert 'OWNER_CYBORG' in traits and 'OWNER_NOVA' not in traits

    app.post_json('/v2/device_profiles', PROFILE,
                  headers=dict(ADMIN, **ACCEL), status=201)
    instance = str(uuid.uuid4())
    resp = requests.put(
        '%s/allocations/%s' % (placement.endpoint, instance),
        headers=PLACEMENT, timeout=30, json={
            'allocations': {rp_uuid: {'resources': {'VGPU': 1}}},
            'project_id': 'tenant-1', 'user_id': 'alice',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    assert resp.status_code == 204, resp.text
    headers = dict(MEMBER, **ACCEL)
    one_host.bind_as_nova(app, headers, 'vgpu-a10', hostname, rp_uuid,
                          instance)
    # As Nova's compute manager reads them: the instance's bound ARQs.
    bound = app.get('/v2/accelerator_requests',
                    {'instance': instance, 'bind_state': 'resolved'},
                    headers=headers).json['arqs']
    assert [a['state'] for a in bound] == ['Bound'], bound
    assert bound[0]['attach_handle_type'] == 'MDEV'

    got = nova.run(NOVA_MDEVS, bound)
    assert got['mdevs'] == [bound[0]['attach_handle_uuid']]
    assert got['made'] == [{'parent': 'pci_0000_3b_00_0',
                            'type': 'nvidia-588',
                            'uuid': bound[0]['attach_handle_uuid']}]
