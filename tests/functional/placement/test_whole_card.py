"""A card or its regions, one choice, against the real openstack-placement
(issue 42, item 5).

One simulated card of two regions, each behind its own SR-IOV VF, with
``[fake_driver] whole_card``: the card is reported as a deployable too
(its PF). Its provider offers the card and both regions as two FPGA
slots (common/shared_functions.py, placement/tree.py). The scheduler's
part is played as Nova plays it: GET /allocation_candidates with the
device profile's granular groups in the host's tree, then a claim with
PUT /allocations; the bind goes through the conductor, which picks the
deployable the group asks for.
"""
import uuid

import pytest

from cyborg_lite.common import exception
from cyborg_lite.common import shared_functions
from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import programming_jobs as jobs_db
from tests.functional.placement import candidates_query
from tests.functional.placement import fake_host
from tests.unit.bitstreams.conftest import add_bitstream
from tests.unit.conductor import bind_helpers as h

REGION = {'resources:FPGA': '1'}
CARD = {'resources:FPGA': '2',
        'trait:%s' % shared_functions.WHOLE_CARD_TRAIT: 'required'}


def _host(server, configured, conf, hostname, tmp_path, whole_card=True):
    configured(server)
    conf.set_override('transport_url', 'inproc://')
    fake_host.configure_card(conf, tmp_path / 'fake_fpga', sriov=True)
    conf.set_override('whole_card', whole_card, group='fake_driver')
    host = fake_host.Host(conf, server, hostname)
    assert host.report()['changed']
    return host


@pytest.fixture
def host(placement, configured, conf, sqlite_db, hostname, tmp_path):
    return _host(placement, configured, conf, hostname, tmp_path)


def _candidates(host, groups):
    """[{group index: provider uuid}] Placement offers for ``groups``."""
    query = candidates_query.allocation_candidates_query(groups,
                                                         in_tree=host.root)
    found = host.placement.get('/allocation_candidates?' + '&'.join(
        '%s=%s' % item for item in query))
    return [{int(g[len('_ACCEL'):]): rps[0]
             for g, rps in c['mappings'].items()}
            for c in found['allocation_requests']]


def _claim(host, instance, candidate, groups):
    """Nova's claim of ``candidate`` for the profile's ``groups``."""
    allocations = {}
    for index, rp in candidate.items():
        resources = allocations.setdefault(rp, {'resources': {}})[
            'resources']
        for key, value in groups[index - 1].items():
            if key.startswith('resources:'):
                rc = key[len('resources:'):]
                resources[rc] = resources.get(rc, 0) + int(value)
    host.placement.put('/allocations/%s' % instance, {
        'allocations': allocations, 'project_id': 'p1', 'user_id': 'u1',
        'consumer_generation': None, 'consumer_type': 'INSTANCE'})


def _take(host, groups):
    """Schedule, claim and bind ``groups`` for a new instance, as Nova
    does: the ARQs, by the deployable each bound."""
    [candidate] = _candidates(host, groups)[:1]
    instance = str(uuid.uuid4())
    _claim(host, instance, candidate, groups)
    profile = h.make_profile(groups)
    arqs = {g: h.make_arq(profile_id=profile, group_id=g - 1)
            for g in candidate}
    host.conductor.bind_arqs(host.ctxt, {
        arqs[g]: {'hostname': host.hostname, 'device_rp_uuid': rp,
                  'instance_uuid': instance}
        for g, rp in candidate.items()})
    return [h.get_arq(arq) for arq in arqs.values()]


def _bound_names(arqs):
    by_id = {d.id: d.name.rsplit('_', 1)[-1]
             for d in devices_db.host_rows(arqs[0].hostname).deployables}
    assert all(a.state == 'Bound' for a in arqs), [a.error
                                                  for a in arqs]
    return sorted(by_id[a.deployable_id] for a in arqs)


def test_the_cards_provider_offers_the_card_and_its_regions(host):
    assert set(host.regions().values()) == {'card+region0+region1'}
    # The report stored the provider the tree offers each through.
    assert not host.report()['changed']
    [card_rp] = host.regions()
    inventory = host.placement.get(
        '/resource_providers/%s/inventories' % card_rp)['inventories']
    assert {rc: (inv['total'], inv['reserved'], inv['max_unit'])
            for rc, inv in inventory.items()} == {
        'FPGA': (2, 0, 2),
        'CUSTOM_FPGA_LOCAL_MEMORY_MB': (2 * fake_host.MEMORY_MB, 0,
                                        fake_host.MEMORY_MB)}
    assert shared_functions.WHOLE_CARD_TRAIT in host.traits()[
        'card+region0+region1']


def test_card_free_offers_the_card_and_each_region(host):
    [card_rp] = host.regions()
    assert _candidates(host, [CARD]) == [{1: card_rp}]
    assert _candidates(host, [REGION]) == [{1: card_rp}]
    # Two regions of the card for one instance: both slots.
    assert _candidates(host, [REGION, REGION]) == [{1: card_rp, 2: card_rp}]
    assert _candidates(host, [CARD, REGION]) == []


def test_one_region_taken_offers_the_other_and_never_the_card(host):
    [card_rp] = host.regions()
    assert _bound_names(_take(host, [REGION])) == ['region0']

    assert _candidates(host, [CARD]) == []
    assert _candidates(host, [REGION]) == [{1: card_rp}]
    # What is offered binds: the other region.
    assert _bound_names(_take(host, [REGION])) == ['region1']
    assert _candidates(host, [REGION]) == []
    h.check_no_handle_double_use()


def test_card_taken_offers_nothing_of_it(host):
    assert _bound_names(_take(host, [CARD])) == ['card']

    assert _candidates(host, [REGION]) == []
    assert _candidates(host, [CARD]) == []


def test_a_region_not_wiped_yet_keeps_the_card_from_schedulers(host):
    [card_rp] = host.regions()
    [arq] = _take(host, [REGION])
    host.placement.delete('/allocations/%s' % arq.instance_uuid)
    host.unbind(arq)

    # region0 waits for its wipe: one slot reserved.
    assert host.reserved()['card+region0+region1']['FPGA'] == 1
    assert _candidates(host, [CARD]) == []
    assert _candidates(host, [REGION]) == [{1: card_rp}]

    host.wipe()
    assert _candidates(host, [CARD]) == [{1: card_rp}]


def test_turning_it_on_moves_a_regions_allocation_to_the_cards_provider(
        reshaping_placement, configured, conf, sqlite_db, hostname,
        tmp_path):
    host = _host(reshaping_placement, configured, conf, hostname, tmp_path,
                 whole_card=False)
    region_rps = {name: rp for rp, name in host.regions().items()}
    assert set(region_rps) == {'region0', 'region1'}
    [arq] = _take(host, [REGION])
    bound = _bound_names([arq])

    conf.set_override('whole_card', True, group='fake_driver')
    host.driver = fake_host.fake.FakeDriver(conf)
    assert host.report()['changed']

    [card_rp] = host.regions()
    assert host.placement.get('/allocations/%s' % arq.instance_uuid)[
        'allocations'][card_rp]['resources']['FPGA'] == 1
    assert _candidates(host, [CARD]) == []
    assert _candidates(host, [REGION]) == [{1: card_rp}]
    # Still Bound where it was: the move changed no database row of it.
    assert _bound_names([h.get_arq(arq.uuid)]) == bound


def _bind_unclaimed(host, groups):
    """A bind Placement never saw (an admin's, or one racing a claim):
    the database decides alone."""
    [card_rp] = host.regions()
    profile = h.make_profile(groups)
    arq = h.make_arq(profile_id=profile, group_id=0)
    host.conductor.bind_arqs(host.ctxt, {arq: {
        'hostname': host.hostname, 'device_rp_uuid': card_rp,
        'instance_uuid': str(uuid.uuid4())}})
    return h.get_arq(arq)


@pytest.mark.parametrize('held,refused', [(CARD, REGION), (REGION, CARD)])
def test_the_database_refuses_the_other_side_of_what_is_held(host, held,
                                                             refused):
    assert _bind_unclaimed(host, [held]).state == 'Bound'

    arq = _bind_unclaimed(host, [refused])

    assert arq.state == 'BindFailed'
    assert 'whole_card_in_use' in arq.error
    h.check_no_handle_double_use()


def test_the_cards_release_wipes_every_region_before_anything_is_offered(
        host):
    [card_rp] = host.regions()
    [arq] = _take(host, [CARD])
    host.placement.delete('/allocations/%s' % arq.instance_uuid)
    host.unbind(arq)

    states = {d.name.rsplit('_', 1)[-1]: d.device_state
              for d in devices_db.host_rows(host.hostname).deployables}
    # Each waits for, or runs, its wipe: the card's holder had them all.
    assert set(states) == {'card', 'region0', 'region1'}
    assert set(states.values()) <= {'pending_cleaning', 'cleaning'}
    assert host.reserved()['card+region0+region1']['FPGA'] == 2
    assert _candidates(host, [REGION]) == []

    host.wipe()
    assert _candidates(host, [CARD]) == [{1: card_rp}]
    assert _candidates(host, [REGION]) == [{1: card_rp}]


def _fleet(host):
    """The rows an explain of ``host`` reads (its card of several
    regions: one by one), in one snapshot."""
    from cyborg_lite.db.sql import session
    with session.snapshot_reader() as s:
        return devices_db.fleet_rows(
            s, devices_db.DEVICE.hostname == host.hostname)


def test_the_explain_tells_what_the_views_tell_of_a_card_and_its_regions(
        host):
    # The explain decides availability from its own plain rows
    # (placement/explain.py); a card held through one of its regions is
    # in use there as in the views (inventory/views.py).
    from cyborg_lite.placement import explain

    def explained():
        return {r.name.rsplit('_', 1)[1]: r.unavailable
                for r in explain.regions(_fleet(host))}

    assert explained() == {'card': {}, 'region0': {}, 'region1': {}}
    _take(host, [REGION])
    found = explained()
    assert found['card'] == {'in_use': 'whole_card_in_use'}
    assert found['region0'] == {'in_use': 'no free attach handle'}
    assert found['region1'] == {}


def test_the_explain_counts_a_card_by_its_regions_slots(host):
    # The card's Placement steps read its regions' slots (placement/
    # tree._alone), as its provider offers them: a group for the whole
    # card passes them, and is stopped in use once a region is held,
    # while a region's group still finds the other region.
    from cyborg_lite.placement import explain

    def blocking():
        return [(g['blocking'] or {}).get('step')
                for g in explain.explain([CARD, REGION], _fleet(host))]

    assert blocking() == [None, None]
    _take(host, [REGION])
    assert blocking() == ['in_use', None]


def _deployable_id(host, name):
    [found] = [d.id for d in devices_db.host_rows(host.hostname).deployables
               if d.name.rsplit('_', 1)[-1] == name]
    return found


@pytest.mark.parametrize('held,programmed', [(CARD, 'region0'),
                                             (REGION, 'card')])
def test_a_job_on_the_other_side_of_what_is_held_is_refused(
        host, held, programmed):
    arq = _bind_unclaimed(host, [held])
    assert arq.state == 'Bound', arq.error
    bitstream = add_bitstream()

    with pytest.raises(exception.Conflict) as refused:
        jobs_db.create_job(_deployable_id(host, programmed), bitstream.id,
                           hostname=host.hostname)

    assert arq.uuid in str(refused.value)
    assert jobs_db.list_jobs() == []
