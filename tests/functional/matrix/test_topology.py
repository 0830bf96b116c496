"""NUMA topology where it meets programming, signatures, Kubernetes
claims, cleaning and health, on the real services (world.py): two SR-IOV
cards on two NUMA nodes, card c on node c, so Placement has a provider
per node between the compute node and the cards ([placement]
numa_providers) and the slices a ``numaNode`` per device. Topology with
passthrough and maintenance is tested in test_passthrough.py."""
import pytest

from tests import signing_keys
from tests import waiting
from tests.functional.matrix import world

# One worker runs them all: they share the package's services.
pytestmark = pytest.mark.xdist_group('matrix')

NUMA = 'resource.kubernetes.io/numaNode'
NODE0 = {'c0/region0': 'offered', 'c0/region1': 'offered'}
NODE0_UNTAINTED = {'c0/region0': [], 'c0/region1': []}


def _node_of(host, name, card):
    """The name of the NUMA node provider above a deployable's."""
    place = host.services.placement_call
    rp = place('GET', '/resource_providers/' +
               host.region(name, card)['rp_uuid']).json()
    parent = rp['parent_provider_uuid']
    while True:
        above = place('GET', '/resource_providers/' + parent).json()
        if above['name'].startswith(host.host + '_numa'):
            return above['name'][len(host.host) + 1:]
        parent = above['parent_provider_uuid']


def test_node_1s_card_busy_with_everything_leaves_node_0_alone(make_host):
    """Topology x programming, topology x signatures, topology x
    Kubernetes, topology x cleaning, topology x health, and programming x
    Kubernetes: under the project's enforce policy a signed image loaded
    into card 1's region1 puts its function on that provider, under node
    1's; a claim for that region while the job loads it is refused, and
    prepared once it is done; a pod picking a device of node 1 by its
    numaNode attribute holds card 1's region0; a fault on card 1 and the
    wipe of the pod's region reserve and taint only node 1's; node 0's
    card is offered throughout, to a request for node 0 and to one for
    any node, and its history and notifications stay empty."""
    host = make_host(sriov=True, cards=2, numa_nodes=2)
    key = signing_keys.new_key()
    host.trust(key)
    host.enforce()
    image = world.new_image()
    signed = host.bitstream(image, signature=signing_keys.sign(key, image))
    function_trait = 'CUSTOM_FUNCTION_ID_' + signed['function_id'].upper()
    card0, card1 = host.device(0)['uuid'], host.device(1)['uuid']
    assert [_node_of(host, 'region1', c) for c in (0, 1)] == ['numa0',
                                                              'numa1']
    mark = host.mark(card0, card1)

    host.fake.programs.hold()
    job = host.program(signed['uuid'], 'region1', card=1).json()
    host.fake.programs.wait_reached()
    loading = host.claim('loading', ['region1'], card=1)
    error = host.prepare(loading)
    assert job['uuid'] in error, error
    host.fake.programs.release()
    assert host.wait_job(job['uuid'])['state'] == 'succeeded'
    assert host.loaded('region1', card=1) == signed['function_id']
    waiting.read_until(
        lambda: host.offers(required=[function_trait, 'CUSTOM_NUMA_NODE_1']),
        lambda found: found == {
            'c0/region0': 'refused', 'c0/region1': 'refused',
            'c1/region0': 'refused', 'c1/region1': 'offered'}, 15,
        what='the function offered on node 1 only')
    assert host.prepare(loading) == ''
    attributes = host.slice_device('region1', card=1)['attributes']
    assert (attributes['functionID'], attributes[NUMA]) == (
        {'string': signed['function_id']}, {'int': 1})

    # The kube-scheduler picks a device by its numaNode attribute.
    [picked] = [dep for dep, device in host.slice_devices().items()
                if device['attributes'][NUMA] == {'int': 1} and
                dep != host.region('region1', card=1)['uuid']]
    assert picked == host.region('region0', card=1)['uuid']
    pod = host.claim('pod', ['region0'], card=1)
    assert host.prepare(pod) == ''
    assert host.offers() == dict(NODE0, **{'c1/region0': 'reserved',
                                           'c1/region1': 'reserved'})
    assert host.offers(required=['CUSTOM_NUMA_NODE_0']) == dict(
        NODE0, **{'c1/region0': 'reserved', 'c1/region1': 'reserved'})

    host.fme_error('0x4\n', card=1)
    host.scan()
    assert host.device(1)['health'] == 'unhealthy'
    assert host.device(0)['health'] == 'healthy'
    assert host.views() == (
        dict(NODE0, **{'c1/region0': 'reserved', 'c1/region1': 'reserved'}),
        dict(NODE0_UNTAINTED, **{'c1/region0': ['unhealthy'],
                                 'c1/region1': ['unhealthy']}))
    host.fake.cleans.hold()
    assert host.unprepare(pod) == ''
    host.fake.cleans.wait_reached()
    assert host.slices() == dict(NODE0_UNTAINTED, **{
        'c1/region0': ['cleaning', 'unhealthy'],
        'c1/region1': ['unhealthy']})
    assert host.offers(required=['CUSTOM_NUMA_NODE_0']) == dict(
        NODE0, **{'c1/region0': 'reserved', 'c1/region1': 'reserved'})
    host.fake.cleans.release()
    host.wait_state('region0', 'available', card=1)
    host.fme_error('0x0\n', card=1)
    host.scan(2)
    host.wait_views(dict(NODE0, **{'c1/region0': 'offered',
                                   'c1/region1': 'reserved'}),
                    dict(NODE0_UNTAINTED, **{'c1/region0': [],
                                             'c1/region1': []}))

    assert host.history_since(mark, card0) == []
    assert host.history_since(mark, card1) == [
        ('programming_job.program.start', 'queued'),
        ('programming_job.update', 'downloading'),
        ('programming_job.update', 'programming'),
        ('programming_job.update', 'verifying'),
        ('programming_job.program.end', 'succeeded'),
        ('k8s_claim.prepare', 'claimed'),
        ('k8s_claim.prepare', 'claimed'),
        ('device.health_change', 'unhealthy'),
        ('k8s_claim.unprepare', 'released'),
        ('deployable.clean.start', 'cleaning'),
        ('deployable.clean.end', 'available'),
        ('device.health_change', 'recovering'),
        ('device.health_change', 'healthy')]
    heard = host.wait_heard(mark, [
        'programming_job.program.start', 'programming_job.update',
        'programming_job.update', 'programming_job.update',
        'programming_job.program.end', 'k8s_claim.prepare',
        'k8s_claim.prepare', 'device.health_change', 'k8s_claim.unprepare',
        'deployable.clean.start', 'deployable.clean.end',
        'device.health_change', 'device.health_change'], card1)
    assert {d['project_id'] for e, d in heard
            if e.startswith(('programming_job', 'k8s_claim'))} == {
        host.project}
    assert host.heard_since(mark, card0) == []
