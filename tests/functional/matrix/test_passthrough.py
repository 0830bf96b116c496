"""Passthrough where it meets every other feature, on the real services
(world.py): Nova binds a region and libvirt hands its PCI function to
vfio-pci (the fake host's kernel action), then a fault, a wipe, a
programming, a maintenance, a Kubernetes claim or a NUMA placement
happens to the same card.

``pci``: a card without SR-IOV, its regions behind its PF, which the
guest gets whole; ``vf``: a card with SR-IOV ([fake_driver]sriov), a VF
per region, the guest gets its region's. Each test checks Placement and
the ResourceSlices, the device's history and the notifications.
"""
import uuid

import pytest

from tests import signing_keys
from tests import waiting
from tests.functional import nova_order
from tests.functional.matrix import world
from tests.unit.kubernetes import resource_claims as rc

# One worker runs them all: they share the package's services.
pytestmark = pytest.mark.xdist_group('matrix')

PCI, VF = 'pci', 'vf'
KINDS = [PCI, VF]
CATFATAL = 'catfatal_errors 0x4'
FREE = ({'region0': 'offered', 'region1': 'offered'},
        {'region0': [], 'region1': []})


def _other(region):
    return {'region0': 'region1', 'region1': 'region0'}[region]


def _held(kind, bound):
    """The views of a card whose region ``bound`` a guest holds:
    (Placement, slices)."""
    other = _other(bound)
    if kind == PCI:
        # One provider for the card (its PF): Nova's allocation has it.
        return ({bound: 'allocated', other: 'allocated'},
                {bound: ['in-use=nova'], other: ['handle-shared-in-use']})
    return ({bound: 'allocated', other: 'offered'},
            {bound: ['in-use=nova'], other: []})


def _both(kind, bound, reason):
    """The views of the card a guest holds once ``reason`` takes it all
    out of service."""
    other = _other(bound)
    return ({bound: 'reserved', other: 'reserved'},
            {bound: ['in-use=nova', reason],
             other: sorted([reason] + (['handle-shared-in-use']
                                       if kind == PCI else []))})


def _boot_into_guest(host, profile=None):
    """Nova boots on the host and libvirt takes the function: the
    instance, its ARQ and the region it holds."""
    instance, [arq] = host.boot(profile or host.profile())
    host.hand_to_guest(arq)
    return instance, arq, host.bound_region(arq)


@pytest.mark.parametrize('kind', KINDS)
def test_a_guest_holds_its_region_through_a_fault_and_its_wipe(make_host,
                                                               kind):
    """Passthrough x health, passthrough x cleaning: a function in a guest
    is held, never unhealthy, for as long as the guest runs; a fault on
    the card reserves all of it and leaves the bind alone; the region the
    guest leaves (a PF: every region of the card, all of which it could
    write) is wiped while reserved and offered only after."""
    host = make_host(sriov=kind == VF)
    device = host.device()['uuid']
    mark = host.mark(device)
    instance, arq, bound = _boot_into_guest(host)
    regions = host.deployables()
    for _ in range(3):     # the guest runs: scans find the region gone
        host.scan()
        assert host.views() == _held(kind, bound)
        assert host.device()['health'] == 'healthy'
        # Every region kept as it was (the PF's sibling too), unwritten.
        assert host.deployables() == regions
    assert host.history_since(mark, device) == [
        ('arq.bind.start', 'BindStarted'), ('arq.bind.end', 'Bound')]

    if kind == PCI:
        # The FME went with the PF: the host reads the fault once the
        # guest gave the card back, the ARQ still Bound. The card comes
        # back as it left.
        host.give_back(arq)
        host.scan()
        assert host.deployables() == regions
        assert host.views() == _held(kind, bound)
    host.fme_error('0x4\n')
    host.scan()
    assert host.views() == _both(kind, bound, 'unhealthy')
    [taint] = [t for t in host.slice_device(bound)['taints']
               if t['key'].endswith('/unhealthy')]
    assert taint['value'] == 'catfatal_errors'
    assert host.arq(arq['uuid'])['state'] == 'Bound'

    if kind == VF:
        host.give_back(arq)
    # What the guest wrote: through a PF, into every region of the card.
    wiped = [bound, _other(bound)] if kind == PCI else [bound]
    for region in wiped:
        host.give_tenant_data(region)
    host.fake.cleans.hold()
    host.nova.delete(instance)
    # Unhealthy and being wiped: reserved, tainted for both reasons.
    host.fake.cleans.wait_reached()
    offers, slices = host.views()
    host.fake.cleans.release()
    assert offers == {'region0': 'reserved', 'region1': 'reserved'}
    for region in wiped:
        assert {'cleaning', 'unhealthy'} <= set(slices[region]), slices
    for region in wiped:
        host.wait_state(region, 'available')
        assert host.memory(region) == ''
    host.fme_error('0x0\n')
    host.scan(2)                     # recovering, then healthy
    host.wait_views(*FREE)

    # The release and the wipes (of each region the guest reached; the
    # PF's other region waits for its own, its history says why) come
    # between the fault and its end.
    wipes = [('deployable.clean.start', 'cleaning'),
             ('deployable.clean.end', 'available')] * len(wiped)
    if kind == PCI:
        wipes.append(('deployable.clean.shared', 'pending_cleaning'))
    rows = host.history_since(mark, device)[2:]
    assert rows[0] == ('device.health_change', 'unhealthy')
    assert sorted(rows[1:-2]) == sorted(wipes + [('arq.delete', 'Bound')])
    assert rows[-2:] == [('device.health_change', 'recovering'),
                         ('device.health_change', 'healthy')]
    heard = host.wait_heard(mark, [
        'arq.create', 'arq.bind.start', 'arq.bind.end',
        'device.health_change', 'arq.delete', 'device.health_change',
        'device.health_change'] + [event for event, _state in wipes],
        arq['uuid'], device)
    health = [d for e, d in heard if e == 'device.health_change']
    assert [(d['previous'], d['health']) for d in health] == [
        ('healthy', 'unhealthy'), ('unhealthy', 'recovering'),
        ('recovering', 'healthy')]
    assert health[0]['reason'] == CATFATAL


@pytest.mark.parametrize('kind', KINDS)
def test_a_guest_on_node_1_while_its_card_is_maintained(make_host, kind):
    """Passthrough x topology, passthrough x maintenance, maintenance x
    topology: two cards on two NUMA nodes; a profile naming node 1 lands
    on card 1, whose function the guest gets, and the ARQ says where it
    sits; disabling card 1 leaves the guest's bind alone, takes the rest
    of the card out of every view before the call returns, and leaves
    node 0's card offered; enabling gives it back."""
    host = make_host(sriov=kind == VF, cards=2, numa_nodes=2)
    card1 = host.device(1)
    node1 = host.profile(traits=['CUSTOM_NUMA_NODE_1'])
    mark = host.mark(card1['uuid'])
    instance, [arq] = host.boot(node1)
    assert world.handle_address(arq).startswith('0000:5f:')
    host.hand_to_guest(arq)
    bound = host.bound_region(arq, card1['uuid'])
    other = 'c1/' + _other(bound.split('/')[1])
    host.scan()
    shown = host.call('GET', '/accelerator_requests/' + arq['uuid'], 200,
                      headers=host.member).json()
    assert shown['attach_handle_info']['numa_node'] == '1'
    node0 = {'c0/region0': 'offered', 'c0/region1': 'offered'}
    held = {bound: 'allocated',
            other: 'allocated' if kind == PCI else 'offered'}
    assert host.offers() == dict(node0, **held)
    refused = {'c0/region0': 'refused', 'c0/region1': 'refused'}
    assert host.offers(required=['CUSTOM_NUMA_NODE_1']) == dict(refused,
                                                                **held)
    numa = 'resource.kubernetes.io/numaNode'
    for card in (0, 1):
        assert host.slice_device('region0', card)['attributes'][numa] == {
            'int': card}

    host.call('POST', '/devices/%s/disable' % card1['uuid'], 200)
    assert host.offers() == dict(node0, **{bound: 'reserved',
                                           other: 'reserved'})
    slices = host.slices()
    assert slices[bound] == ['in-use=nova', 'maintaining']
    assert 'maintaining' in slices[other]
    assert slices['c0/region0'] == slices['c0/region1'] == []
    with pytest.raises(nova_order.NoValidHost):
        host.boot(node1)
    host.scan()
    assert host.arq(arq['uuid'])['state'] == 'Bound'

    host.call('POST', '/devices/%s/enable' % card1['uuid'], 200)
    host.wait_views(dict(node0, **held))
    card1 = host.device(1)
    assert (card1['health'], card1['numa_node']) == ('healthy', 1)
    assert host.history_since(mark, card1['uuid']) == [
        ('arq.bind.start', 'BindStarted'), ('arq.bind.end', 'Bound'),
        ('device.disable', 'maintaining'), ('device.enable', 'enabled')]
    heard = host.wait_heard(mark, [
        'arq.create', 'arq.bind.start', 'arq.bind.end', 'device.disable',
        'device.enable'], arq['uuid'], card1['uuid'])
    assert heard[2][1]['device_uuid'] == card1['uuid']
    assert [(d['previous'], d['status']) for _e, d in heard[3:]] == [
        ('enabled', 'maintaining'), ('maintaining', 'enabled')]


@pytest.mark.parametrize('kind', KINDS)
def test_a_vm_and_a_pod_of_a_project_under_enforce_on_one_card(make_host,
                                                               kind):
    """Passthrough x programming, passthrough x signatures, passthrough x
    Kubernetes, programming x signatures, Kubernetes x signatures,
    programming x Kubernetes: under the project's enforce policy a bind
    naming an unsigned image fails before any job and leaves the card
    offered; one naming a signed image loads it (its function in
    Placement's traits and the slices) before the ARQ is Bound (and its
    function handed over). A pod of the same project then claims the other
    region: refused for an unsigned image; with the signed one, refused
    where the PF is the guest's, and with its own VF prepared (a job of
    the claim's project), and no job of anyone may load that region
    while the claim holds it, nor while the guest holds the PF it sits
    behind."""
    host = make_host(sriov=kind == VF)
    device = host.device()['uuid']
    key = signing_keys.new_key()
    host.trust(key)
    host.enforce()
    unsigned = host.bitstream()
    image = world.new_image()
    signed = host.bitstream(image, signature=signing_keys.sign(key, image))
    assert (unsigned['signature_status'], signed['signature_status']) == (
        'unsigned', 'verified')
    mark = host.mark(device)

    instance = str(uuid.uuid4())
    with pytest.raises(nova_order.Failed, match='signature'):
        host.nova.boot(host.profile(
            extra={'accel:bitstream_id': unsigned['uuid']}), instance)
    host.nova.delete(instance)
    host.wait_views(*FREE)

    instance, [arq] = host.boot(host.profile(
        extra={'accel:bitstream_id': signed['uuid']}))
    bound = host.bound_region(arq)
    other = _other(bound)
    function = signed['function_id']
    assert host.loaded(bound) == function
    assert host.views() == _held(kind, bound)
    assert 'CUSTOM_FUNCTION_ID_' + function.upper() in host.traits(bound)
    # The new function reaches the slices once the job's report is
    # published (a change that takes no capacity away may follow).
    waiting.read_until(
        lambda: host.slice_device(bound)['attributes'],
        lambda a: (a['functionID'], a['bitstreamID']) == (
            {'string': function}, {'string': signed['uuid']}), 15,
        what='the loaded function in the slices')
    [job] = host.call('GET', '/programs', 200, headers=world.OPERATOR,
                      params={'bitstream_uuid': signed['uuid']}
                      ).json()['programs']
    assert job['state'] == 'succeeded'

    first = host.claim('unsigned', [other],
                       config=[rc.fpga_config(bitstreamID=unsigned['uuid'])])
    # The config's checks come before the hold: refused for its image
    # wherever the region is.
    error = host.prepare(first)
    assert 'signature' in error, error
    claim = host.claim('signed', [other],
                       config=[rc.fpga_config(bitstreamID=signed['uuid'])])
    error = host.prepare(claim)
    if kind == PCI:
        assert 'held by ARQ' in error, error
    else:
        assert error == ''
        assert host.loaded(other) == function
        assert host.views() == ({bound: 'allocated', other: 'reserved'},
                                {bound: ['in-use=nova'], other: []})
    assert host.arq(arq['uuid'])['state'] == 'Bound'
    views = host.views()

    jobs = host.call('GET', '/programs', 200, headers=world.OPERATOR,
                     params={'bitstream_uuid': signed['uuid']}
                     ).json()['programs']
    assert [j['state'] for j in jobs] == ['succeeded'] * (
        1 if kind == PCI else 2)
    job_events = [
        ('programming_job.program.start', 'queued'),
        ('programming_job.update', 'downloading'),
        ('programming_job.update', 'programming'),
        ('programming_job.update', 'verifying'),
        ('programming_job.program.end', 'succeeded')]
    assert host.history_since(mark, device) == [
        ('arq.bind.start', 'BindStarted'), ('arq.bind.error', 'BindFailed'),
        ('arq.delete', 'BindFailed'), ('arq.bind.start', 'BindStarted'),
        *job_events, ('arq.bind.end', 'Bound')] + (
        [] if kind == PCI else
        [('k8s_claim.prepare', 'claimed')] + job_events)
    heard = host.wait_heard(mark, [e for e, _s in job_events], job['uuid'])
    assert {(d['bitstream_uuid'], d['arq_uuid'], d['project_id'])
            for _e, d in heard} == {(signed['uuid'], arq['uuid'],
                                     host.project)}
    if kind == VF:
        [prepared] = host.heard_since(mark, claim['metadata']['uid'])
        assert prepared[0] == 'k8s_claim.prepare'
        assert prepared[1]['project_id'] == host.project
        [claim_job] = [j for j in jobs if j['uuid'] != job['uuid']]
        assert [d['project_id'] for _e, d in host.heard_since(
            mark, claim_job['uuid'])] == [host.project] * 5

    # No job loads the other region while the pod holds it, nor while
    # the guest holds the PF it sits behind: the same refusal, naming
    # the holder and the region it holds.
    resp = host.program(signed['uuid'], other, status=409)
    error = resp.json()['error_message']
    if kind == PCI:
        assert 'in use by accelerator request %s, which holds region %s ' \
            'behind the same PCI function' % (
                arq['uuid'], host.region(bound)['name']) in error, error
    else:
        assert 'in use by Kubernetes ResourceClaim %s' % (
            claim['metadata']['uid']) in error, error
    assert host.views() == views


def test_a_vf_and_a_whole_gpu_in_one_guest(make_host):
    """PCI passthrough x SR-IOV VF passthrough: a guest gets a card's VF
    and a whole NVIDIA GPU (nvidia-smi stops listing it); while it runs,
    the other VF and the other GPU stay offered in Placement and the
    slices, and neither device's health moves."""
    host = make_host(sriov=True, gpus=True)
    profile = host.profile(more_groups=[{'resources:PGPU': '1'}])
    card = host.device()['uuid']
    gpus = {d['pci_bus_id']: d['uuid'] for d in host.devices()
            if d['type'] == 'GPU'}
    mark = host.mark(card, *gpus.values())
    instance, arqs = host.boot(profile)
    vf, gpu = sorted(arqs, key=lambda a: a['device_profile_group_id'])
    host.hand_to_guest(vf)
    bound = host.bound_region(vf)
    gpu_address = host.hand_to_guest(gpu)
    [other_gpu] = [a for a in gpus if a != gpu_address]
    for _ in range(3):
        host.scan()
        assert host.offers() == _held(VF, bound)[0]
        assert host.offers('PGPU') == {gpu_address + '/pgpu': 'allocated',
                                       other_gpu + '/pgpu': 'offered'}
        slices = host.slices()
        assert (slices[bound], slices[_other(bound)]) == (
            ['in-use=nova'], [])
        assert (slices[gpu_address + '/pgpu'],
                slices[other_gpu + '/pgpu']) == (['in-use=nova'], [])
        assert {d['health'] for d in host.devices()} == {'healthy'}
    for device in (card, *gpus.values()):
        assert [e for e, _s in host.history_since(mark, device)
                if not e.startswith('arq.')] == []
    heard = host.heard_since(mark, card, *gpus.values())
    assert [e for e, _d in heard if e.startswith('device.')] == []
