"""Device health where it meets cleaning, programming, Kubernetes claims,
maintenance and signatures, on the real services (world.py): a fault
written into the fake card's FME registers, as docs/drivers.md says,
while the other feature is at work on the same card. Each test checks
Placement and the ResourceSlices, the device's history and the
notifications.
"""
import collections
import uuid

import pytest

from tests import signing_keys
from tests import waiting
from tests.functional import nova_order
from tests.functional.matrix import heard
from tests.functional.matrix import world

# One worker runs them all: they share the package's services.
pytestmark = pytest.mark.xdist_group('matrix')

CATFATAL = 'catfatal_errors 0x4'
OFFERED = {'region0': 'offered', 'region1': 'offered'}
RESERVED = {'region0': 'reserved', 'region1': 'reserved'}
UNTAINTED = {'region0': [], 'region1': []}


def _by_object(events, *uuids):
    """{uuid: [events naming it]} of (event, data) pairs, each object's
    events in order (the objects' own orders interleave freely)."""
    found = collections.defaultdict(list)
    for event, data in events:
        for uuid in uuids:
            if uuid in heard.uuids_in(data):
                found[uuid].append(event)
    return dict(found)


JOB = ['programming_job.program.start', 'programming_job.update',
       'programming_job.update', 'programming_job.update',
       'programming_job.program.end']


def test_a_fault_on_a_card_whose_regions_are_wiped_and_programmed(
        make_host):
    """Health x cleaning, health x programming, cleaning x programming:
    region0 is wiped after its tenant while region1 is programmed; no job
    may start on the region being wiped; a fault in the middle reserves
    the card everywhere and lets both finish (the wipe empties the
    memory, the job loads its function, in Placement's traits while
    still reserved); the card is offered again only once the fault
    clears."""
    host = make_host(sriov=True)
    device = host.device()['uuid']
    bitstream = host.bitstream()
    function = bitstream['function_id']
    mark = host.mark(device)
    instance, [arq] = host.boot(host.profile())
    tenant = host.bound_region(arq)
    other = 'region1' if tenant == 'region0' else 'region0'
    host.give_tenant_data(tenant)
    host.fake.cleans.hold()
    host.nova.delete(instance)
    host.fake.cleans.wait_reached()
    refused = host.program(bitstream['uuid'], tenant, status=409)
    assert 'cleaning' in refused.json()['error_message'], refused.text
    host.fake.programs.hold()
    job = host.program(bitstream['uuid'], other).json()
    host.fake.programs.wait_reached()
    assert host.views() == ({tenant: 'reserved', other: 'offered'},
                            {tenant: ['cleaning'], other: []})

    host.fme_error('0x4\n')
    host.scan()
    assert host.views() == (RESERVED, {tenant: ['cleaning', 'unhealthy'],
                                       other: ['unhealthy']})
    host.fake.programs.release()
    host.fake.cleans.release()
    assert host.wait_job(job['uuid'])['state'] == 'succeeded'
    host.wait_state(tenant, 'available')
    assert host.memory(tenant) == ''
    assert host.loaded(other) == function
    host.wait_views(RESERVED, {tenant: ['unhealthy'], other: ['unhealthy']})
    assert 'CUSTOM_FUNCTION_ID_' + function.upper() in host.traits(other)

    # The scans the job and the clean end with read the fault still.
    host.settle()
    host.fme_error('0x0\n')
    host.scan()
    assert host.views() == (RESERVED, {tenant: ['recovering'],
                                       other: ['recovering']})
    host.scan()
    host.wait_views(OFFERED, UNTAINTED)
    assert host.offers(required=['CUSTOM_FUNCTION_ID_' + function.upper()]
                       ) == {tenant: 'refused', other: 'offered'}

    rows = host.history_since(mark, device)
    health = [r for r in rows if r[0] == 'device.health_change']
    assert health == [('device.health_change', 'unhealthy'),
                      ('device.health_change', 'recovering'),
                      ('device.health_change', 'healthy')]
    assert [r for r in rows if r[0].startswith('deployable.clean')] == [
        ('deployable.clean.start', 'cleaning'),
        ('deployable.clean.end', 'available')]
    assert [r[0] for r in rows if r[0].startswith('programming_job')] == JOB
    # The fault came while both were under way.
    events = [r[0] for r in rows]
    assert events.index('device.health_change') < min(
        events.index('deployable.clean.end'),
        events.index('programming_job.program.end'))
    tenant_uuid = host.region(tenant)['uuid']
    heard = host.wait_heard(mark, [
        'arq.create', 'arq.bind.start', 'arq.bind.end', 'arq.delete',
        'deployable.clean.start', 'deployable.clean.end'], arq['uuid'],
        tenant_uuid)
    assert heard[-1][1]['device_state'] == 'available'
    assert _by_object(host.heard_since(mark), job['uuid'], device) == {
        job['uuid']: JOB,
        device: ['arq.bind.start', 'arq.bind.end', 'arq.delete',
                 'deployable.clean.start'] + _merged(rows)}


def _merged(rows):
    """The device's events after the clean's start, as the history has
    them (the notifications of one device follow its rows' order)."""
    events = [r[0] for r in rows]
    return events[events.index('deployable.clean.start') + 1:]


def test_a_fault_and_a_maintenance_under_a_prepared_claim(make_host):
    """Health x Kubernetes, health x maintenance, Kubernetes x
    maintenance, cleaning x Kubernetes: a claim holds region0 through a
    maintenance and a fault, each tainting the slices and reserving the
    card in Placement; no other claim is prepared meanwhile; enabling is
    refused while the fault lasts (nothing changes), and after it the
    card comes back only when enabled; the claim's region is wiped when
    it lets go, and offered only after."""
    host = make_host(sriov=True)
    device = host.device()['uuid']
    mark = host.mark(device)
    claim = host.claim('pod', ['region0'])
    assert host.prepare(claim) == ''
    held = {'region0': 'reserved', 'region1': 'offered'}
    # Kubernetes allocated it itself: no taint for the claim.
    assert host.views() == (held, UNTAINTED)

    host.call('POST', '/devices/%s/disable' % device, 200)
    assert host.views() == (RESERVED, {'region0': ['maintaining'],
                                       'region1': ['maintaining']})
    second = host.claim('second', ['region1'])
    assert 'maintaining' in host.prepare(second)

    host.fme_error('0x4\n')
    host.scan()
    assert host.views() == (RESERVED, {
        'region0': ['maintaining', 'unhealthy'],
        'region1': ['maintaining', 'unhealthy']})
    refused = host.call('POST', '/devices/%s/enable' % device, 409)
    assert CATFATAL in refused.text
    assert host.device()['status'] == 'maintaining'
    host.fme_error('0x0\n')
    host.scan(2)
    assert host.device()['health'] == 'healthy'
    assert host.views() == (RESERVED, {'region0': ['maintaining'],
                                       'region1': ['maintaining']})

    host.call('POST', '/devices/%s/enable' % device, 200)
    host.wait_views(held, UNTAINTED)
    assert host.prepare(second) == ''
    host.fake.cleans.hold()
    assert host.unprepare(claim) == ''
    host.fake.cleans.wait_reached()
    assert host.views() == (RESERVED, {'region0': ['cleaning'],
                                       'region1': []})
    host.fake.cleans.release()
    host.wait_views({'region0': 'offered', 'region1': 'reserved'},
                    UNTAINTED)

    assert host.history_since(mark, device) == [
        ('k8s_claim.prepare', 'claimed'),
        ('device.disable', 'maintaining'),
        ('device.health_change', 'unhealthy'),
        ('device.health_change', 'recovering'),
        ('device.health_change', 'healthy'),
        ('device.enable', 'enabled'),
        ('k8s_claim.prepare', 'claimed'),
        ('k8s_claim.unprepare', 'released'),
        ('deployable.clean.start', 'cleaning'),
        ('deployable.clean.end', 'available')]
    uid = claim['metadata']['uid']
    heard = host.wait_heard(mark, [
        'k8s_claim.prepare', 'device.disable', 'device.health_change',
        'device.health_change', 'device.health_change', 'device.enable',
        'k8s_claim.prepare', 'k8s_claim.unprepare',
        'deployable.clean.start', 'deployable.clean.end'], device)
    prepared = [d for e, d in heard if e == 'k8s_claim.prepare']
    assert [d['claim_uid'] for d in prepared] == [
        uid, second['metadata']['uid']]
    assert {d['project_id'] for d in prepared} == {host.project}


def test_what_a_trusted_image_may_do_on_a_card_out_of_service(make_host):
    """Health x signatures, maintenance x signatures, programming x
    maintenance, under the project's enforce policy: a degraded card
    (an advisory, still offered) loads a signed image for a bind and
    refuses an unsigned one for its signature; in a maintenance window
    the operator loads an unsigned image into region1 (the operator's
    own scope lets it) and its function reaches Placement while the card
    is reserved; enabled again, the project's bind for that function does
    not take the unsigned image as loaded and fails on its signature; an
    unhealthy card refuses even the signed one, naming the fault."""
    host = make_host(sriov=True)
    device = host.device()['uuid']
    key = signing_keys.new_key()
    host.trust(key)
    host.enforce()
    image = world.new_image()
    signed = host.bitstream(image, signature=signing_keys.sign(key, image))
    unsigned = host.bitstream()
    mark = host.mark(device)

    host.fme_error('0x1\n', name='nonfatal_errors')
    host.scan()
    assert host.device()['health'] == 'degraded'
    taints = host.slice_device('region0')['taints']
    assert [(t['key'].split('/')[1], t['effect']) for t in taints] == [
        ('degraded', 'None')]
    assert host.offers() == OFFERED
    refused = str(uuid.uuid4())
    with pytest.raises(nova_order.Failed, match='signature'):
        host.nova.boot(host.profile(
            extra={'accel:bitstream_id': unsigned['uuid']}), refused)
    host.nova.delete(refused)
    instance, [arq] = host.boot(host.profile(
        extra={'accel:bitstream_id': signed['uuid']}))
    bound = host.bound_region(arq)
    other = 'region1' if bound == 'region0' else 'region0'
    assert host.loaded(bound) == signed['function_id']

    host.call('POST', '/devices/%s/disable' % device, 200)
    job = host.program(unsigned['uuid'], other,
                       headers=world.OPERATOR).json()
    assert host.wait_job(job['uuid'])['state'] == 'succeeded'
    loaded = unsigned['function_id']
    assert host.loaded(other) == loaded
    waiting.read_until(
        lambda: host.traits(other), lambda traits:
        'CUSTOM_FUNCTION_ID_' + loaded.upper() in traits, 15,
        what='the operator\'s function in Placement')
    assert host.views() == (RESERVED, {
        bound: ['degraded', 'in-use=nova', 'maintaining'],
        other: ['degraded', 'maintaining']})
    host.call('POST', '/devices/%s/enable' % device, 200)
    host.wait_views({bound: 'allocated', other: 'offered'})

    by_function = host.profile(extra={'accel:function_id': loaded})
    refused = str(uuid.uuid4())
    with pytest.raises(nova_order.Failed, match='signature'):
        host.nova.boot(by_function, refused)
    host.nova.delete(refused)
    assert host.loaded(other) == loaded

    # Nova claims the free region just before a fault; its bind comes
    # after: refused naming the fault, and nothing loaded first.
    late = host.profile(extra={'accel:bitstream_id': signed['uuid']})
    instance = host.nova_claim(late, other)
    host.fme_error('0x0\n', name='nonfatal_errors')
    host.fme_error('0x4\n')
    host.scan()
    assert host.offers() == RESERVED
    with pytest.raises(nova_order.NoValidHost):
        host.boot(late)
    late_arq = host.bind_claimed(late, instance, other)
    assert late_arq['state'] == 'BindFailed'
    assert CATFATAL in late_arq['error'], late_arq['error']
    assert host.loaded(other) == loaded

    rows = host.history_since(mark, device)
    assert [r for r in rows if r[0].startswith('device.')] == [
        ('device.health_change', 'degraded'),
        ('device.disable', 'maintaining'),
        ('device.enable', 'enabled'),
        ('device.health_change', 'unhealthy')]
    assert [r[1] for r in rows if r[0] == 'programming_job.program.end'
            ] == ['succeeded', 'succeeded']
    failed = waiting.read_until(
        lambda: [d for e, d in host.heard_since(mark)
                 if e == 'arq.bind.error'], lambda got: len(got) == 3, 15,
        what='three failed binds heard')
    assert ['signature' in d['error'] for d in failed] == [True, True,
                                                           False]
    assert {d['project_id'] for d in failed} == {host.project}
    operator_job = host.heard_since(mark, job['uuid'])
    assert [d['project_id'] for _e, d in operator_job] == [None] * 5
