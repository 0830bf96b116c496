"""The wipe between tenants where it meets maintenance and signatures, on
the real services (world.py). Cleaning's other meetings are tested with
the other feature: test_passthrough.py (a guest's region), test_health.py
(a fault mid-wipe, a job beside it, a claim's region), test_topology.py
(a wipe on one NUMA node)."""
import uuid

import pytest

from tests import signing_keys
from tests import waiting
from tests.functional import nova_order
from tests.functional.matrix import world

# One worker runs them all: they share the package's services.
pytestmark = pytest.mark.xdist_group('matrix')

OFFERED = {'region0': 'offered', 'region1': 'offered'}
RESERVED = {'region0': 'reserved', 'region1': 'reserved'}
UNTAINTED = {'region0': [], 'region1': []}
JOB = [('programming_job.program.start', 'queued'),
       ('programming_job.update', 'downloading'),
       ('programming_job.update', 'programming'),
       ('programming_job.update', 'verifying'),
       ('programming_job.program.end', 'succeeded')]


def test_between_two_tenants_a_maintenance_and_a_revoked_key(make_host):
    """Cleaning x maintenance, cleaning x signatures: under the project's
    enforce policy the first tenant's VM gets a region loaded with a
    signed image (a bind by function); when it goes, the region is wiped
    (its memory emptied; the function stays, there is no scrub image)
    while the operator puts the card in maintenance: the wipe ends and
    the card stays reserved until it is enabled. The signing key is
    revoked meanwhile: the next tenant's bind for that function does not
    take the loaded image as trusted, and with no trusted copy left it
    fails on the signature, loading nothing."""
    host = make_host(sriov=True)
    device = host.device()['uuid']
    key = signing_keys.new_key()
    key_uuid = host.trust(key)
    host.enforce()
    image = world.new_image()
    signed = host.bitstream(image, signature=signing_keys.sign(key, image))
    function = signed['function_id']
    by_function = host.profile(extra={'accel:function_id': function})
    mark = host.mark(device)
    instance, [arq] = host.boot(by_function)
    bound = host.bound_region(arq)
    other = 'region1' if bound == 'region0' else 'region0'
    assert host.loaded(bound) == function
    host.give_tenant_data(bound)

    host.fake.cleans.hold()
    host.nova.delete(instance)
    host.fake.cleans.wait_reached()
    assert host.views() == ({bound: 'reserved', other: 'offered'},
                            {bound: ['cleaning'], other: []})
    host.call('POST', '/devices/%s/disable' % device, 200)
    assert host.views() == (RESERVED, {bound: ['cleaning', 'maintaining'],
                                       other: ['maintaining']})
    host.revoke(key_uuid)
    host.fake.cleans.release()
    host.wait_state(bound, 'available')
    assert host.memory(bound) == ''
    assert host.loaded(bound) == function
    host.wait_views(RESERVED, {bound: ['maintaining'],
                               other: ['maintaining']})
    host.call('POST', '/devices/%s/enable' % device, 200)
    host.wait_views(OFFERED, UNTAINTED)

    shown = host.call('GET', '/bitstreams/' + signed['uuid'], 200).json()
    assert shown['signature_status'] == 'revoked_key'
    second = str(uuid.uuid4())
    with pytest.raises(nova_order.Failed, match='revoked'):
        host.nova.boot(by_function, second)
    host.nova.delete(second)
    assert host.loaded(bound) == function
    assert host.loaded(other) == world.FIRST_FUNCTION
    host.wait_views(OFFERED, UNTAINTED)

    assert host.history_since(mark, device) == [
        ('arq.bind.start', 'BindStarted'), *JOB, ('arq.bind.end', 'Bound'),
        ('arq.delete', 'Bound'), ('deployable.clean.start', 'cleaning'),
        ('device.disable', 'maintaining'),
        ('deployable.clean.end', 'available'),
        ('device.enable', 'enabled'),
        ('arq.bind.start', 'BindStarted'), ('arq.bind.error', 'BindFailed'),
        ('arq.delete', 'BindFailed')]
    region = host.region(bound)['uuid']
    heard = host.wait_heard(mark, [
        'deployable.clean.start', 'deployable.clean.end'], region)
    assert [d['device_state'] for _e, d in heard] == ['cleaning',
                                                      'available']
    [failed] = waiting.read_until(
        lambda: [d for e, d in host.heard_since(mark, second)
                 if e == 'arq.bind.error'], bool, 15,
        what='the second bind\'s failure heard')
    assert 'revoked' in failed['error']
    assert failed['project_id'] == host.project
