"""Nova's side of a vGPU made at bind, for the tests that drive it: the
scheduler's view of a host's vGPU types in the real Placement, its
allocation, its delete, and its libvirt driver plugging the VF a bound
ARQ names."""
import contextlib
import uuid

import requests

from cyborg_lite.drivers import nvidia
from tests.functional.placement import one_host

# A member of the project, as Nova's calls carry it.
HEADERS = dict(one_host.MEMBER, **one_host.ACCEL)
# Nova's libvirt driver plugging a Cyborg PCI ARQ into the guest
# (LibvirtDriver._guest_add_accel_pci_devices), the ARQ as our API gives
# it; the <hostdev> it writes.
NOVA_HOSTDEV = """
import json, sys
from nova.virt.libvirt import driver as libvirt_driver
arqs = json.load(sys.stdin)
class Guest:
    devices = []
    def add_device(self, dev):
        self.devices.append(dev.to_xml())
guest = Guest()
libvirt_driver.LibvirtDriver._guest_add_accel_pci_devices(
    object.__new__(libvirt_driver.LibvirtDriver), guest, arqs)
print(json.dumps(guest.devices))
"""


@contextlib.contextmanager
def serving(conf, placement, hostname, kernel, traits, conductor_host):
    """The API's webtest app while a conductor and ``hostname``'s agent
    with the nvidia driver on the simulated ``kernel`` run, with a device
    profile of one VGPU of each of ``traits`` (named as the trait, in
    lower case)."""
    one_host.configure(conf, placement)
    kernel.configure(conf)
    driver = nvidia.NvidiaDriver(conf)
    driver.name = 'nvidia'
    driver.write_attribute = kernel.write
    with one_host.serving(conf, hostname, driver, conductor_host) as app:
        for trait in traits:
            app.post_json('/v2/device_profiles', [{
                'name': trait.lower(), 'groups': [{
                    'resources:VGPU': '1',
                    'trait:%s' % trait: 'required'}]}],
                headers=dict(one_host.ADMIN, **one_host.ACCEL), status=201)
        yield app


def offers(placement, hostname, prefix):
    """{type trait (starting with ``prefix``): (VGPU capacity left,
    used)} of the host's providers that offer any (total less
    reserved)."""
    get = one_host.placement_get
    roots = get(placement, '/resource_providers', name=hostname)[
        'resource_providers']
    found = {}
    for rp in get(placement, '/resource_providers', in_tree=roots[0][
            'uuid'])['resource_providers'] if roots else ():
        path = '/resource_providers/%s' % rp['uuid']
        vgpu = get(placement, path + '/inventories')['inventories'].get(
            'VGPU')
        if not vgpu or vgpu['total'] == vgpu['reserved']:
            continue
        used = get(placement, path + '/usages')['usages'].get('VGPU', 0)
        [trait] = [t for t in get(placement, path + '/traits')['traits']
                   if t.startswith(prefix)]
        found[trait] = (vgpu['total'] - vgpu['reserved'] - used, used)
    return found


def allocate(placement, hostname, trait):
    """The scheduler: a candidate of the type on the host, allocated to
    a new instance; (instance, provider)."""
    [root] = one_host.placement_get(placement, '/resource_providers',
                                    name=hostname)['resource_providers']
    candidates = one_host.placement_get(
        placement, '/allocation_candidates', resources='VGPU:1',
        required=trait, in_tree=root['uuid'])['allocation_requests']
    assert candidates, 'no candidate of %s' % trait
    [rp] = candidates[0]['allocations']
    instance = str(uuid.uuid4())
    resp = requests.put(
        '%s/allocations/%s' % (placement.endpoint, instance),
        headers=one_host.PLACEMENT, timeout=30, json={
            'allocations': candidates[0]['allocations'],
            'project_id': 'tenant-1', 'user_id': 'alice',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    assert resp.status_code == 204, resp.text
    return instance, rp


def delete(app, placement, arq):
    """Nova's delete: the instance's ARQs, then its allocation."""
    app.delete('/v2/accelerator_requests?instance=%s'
               % arq['instance_uuid'], headers=HEADERS, status=204)
    requests.delete('%s/allocations/%s' % (placement.endpoint,
                                           arq['instance_uuid']),
                    headers=one_host.PLACEMENT, timeout=30)


def vf_of(info):
    return '%(domain)s:%(bus)s:%(device)s.%(function)s' % info
