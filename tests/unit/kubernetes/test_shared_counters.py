"""Regions behind one PCI function as partitionable devices (KEP-4815):
built (the strict schemas of 1.34-1.37, the apiserver's rules), synced
through the real client against the apiserver stand-in with the
DRAPartitionableDevices gate on, off, and under 1.34's rules, and
allocated by the reference allocator from what the stand-in stores: with
counters no claim, and no two claims, are given two regions behind one PF,
and every allocation prepares; without them the fallback holds (each
region a device, its siblings tainted once one is held)."""
import dataclasses
import logging

import pytest

from cyborg_lite.common import exception
from cyborg_lite.conductor import cleaning
from cyborg_lite.kubernetes import claims as k8s_claims
from cyborg_lite.kubernetes import counters as k8s_counters
from cyborg_lite.kubernetes import gated_fields
from cyborg_lite.kubernetes import sink as sink_mod
from cyborg_lite.kubernetes import slice_sync
from cyborg_lite.kubernetes import slices as k8s_slices
from tests.unit.conductor import bind_helpers as h
from tests.unit.conductor.test_cleaning_flow import RecordingAgents
from tests.unit.kubernetes import allocator
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import inventories as inv
from tests.unit.kubernetes import schemas

DRIVER = inv.DRIVER
ONE = {'function': {'value': '1'}}
CLASS = 'fpga.' + DRIVER
CLASSES = {CLASS: lambda driver, device: driver == DRIVER}


def _claim(*requests):
    return {'devices': {'requests': [
        {'name': r, 'exactly': {'deviceClassName': CLASS}}
        for r in requests]}}


def _card(key):
    """The card of an allocated (driver, pool, device): its name without
    the region."""
    return key[2].rsplit('-', 1)[0]


def _stored(apiserver):
    return sorted(apiserver.slices.values(),
                  key=lambda s: s['metadata']['name'])


def _devices(slices):
    return {d['name']: d for s in slices for d in s['spec'].get('devices')
            or []}


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.WARNING]


# --- the slices ---------------------------------------------------------

def test_regions_behind_one_pf_consume_its_counter():
    devices, counters = k8s_slices.build_slices(inv.host(shared=True),
                                                DRIVER)
    assert devices['metadata']['name'] == 'node-1-%s-0' % DRIVER
    assert counters['metadata']['name'] == 'node-1-%s-counters-0' % DRIVER
    for obj in (devices, counters):
        assert obj['spec']['pool'] == {'name': 'node-1', 'generation': 0,
                                       'resourceSliceCount': 2}
        assert obj['spec']['nodeName'] == 'node-1'
        assert schemas.schema_errors(obj) == []
        assert schemas.slice_rule_errors(obj) == []
    assert 'devices' not in counters['spec']
    assert counters['spec']['sharedCounters'] == [
        {'name': 'fpga-0000-5e-00-0', 'counters': ONE},
        {'name': 'fpga-0000-5f-00-0', 'counters': ONE}]
    assert {d['name']: d['consumesCounters']
            for d in devices['spec']['devices']} == {
        'fpga-0000-%s-00-0-region%d' % (bus, r): [
            {'counterSet': 'fpga-0000-%s-00-0' % bus, 'counters': ONE}]
        for bus in ('5e', '5f') for r in (0, 1)}


def test_sriov_regions_and_the_option_off_keep_the_old_layout():
    sriov = k8s_slices.build_slices(inv.host(), DRIVER)
    assert sriov == k8s_slices.build_slices(inv.host(), DRIVER,
                                            shared_counters=False)
    (obj,) = sriov
    assert not any('consumesCounters' in d for d in obj['spec']['devices'])
    (off,) = k8s_slices.build_slices(inv.host(shared=True), DRIVER,
                                     shared_counters=False)
    assert off == obj


def test_a_group_of_some_regions_is_named_by_its_first():
    """Region0 on its own VF, regions 1 and 2 behind the PF: one set, named
    like Placement's provider of the group (its first region)."""
    card = inv.fpga_card('node-1', 0, regions=3)
    group = frozenset({'region1', 'region2'})
    card = dataclasses.replace(card, deployables=(
        card.deployables[0],) + tuple(
        dataclasses.replace(d, shares_function=group)
        for d in card.deployables[1:]))
    host = dataclasses.replace(inv.host(cards=0), devices=(card,))
    devices, counters = k8s_slices.build_slices(host, DRIVER)
    name = 'fpga-0000-5e-00-0-region1'
    assert counters['spec']['sharedCounters'] == [{'name': name,
                                                   'counters': ONE}]
    assert {d['name']: d.get('consumesCounters')
            for d in devices['spec']['devices']} == {
        'fpga-0000-5e-00-0-region0': None,
        'fpga-0000-5e-00-0-region1': [{'counterSet': name,
                                       'counters': ONE}],
        'fpga-0000-5e-00-0-region2': [{'counterSet': name,
                                       'counters': ONE}]}


@pytest.mark.parametrize('cards,sizes', [(10, [20, 8, 2]),
                                         (40, [64, 16, 8, 8, 8, 8, 8])])
def test_counter_sets_go_eight_to_a_slice(cards, sizes):
    slices = k8s_slices.build_slices(inv.host(cards=cards, shared=True),
                                     DRIVER)
    assert [len(s['spec'].get('devices') or s['spec']['sharedCounters'])
            for s in slices] == sizes
    for obj in slices:
        assert obj['spec']['pool']['resourceSliceCount'] == len(sizes)
        assert schemas.slice_rule_errors(obj) == []
    assert k8s_counters.pool_errors(slices) == []


def _nine_sets(obj):
    obj['spec']['sharedCounters'] *= 5


def _devices_too(obj):
    obj['spec']['devices'] = []       # set, even empty, is too many


def _bad_counter_name(obj):
    obj['spec']['sharedCounters'][0]['counters'] = {'Function': {
        'value': '1'}}


@pytest.mark.parametrize('break_it', [_nine_sets, _devices_too,
                                      _bad_counter_name])
def test_counter_slices_the_api_refuses_are_refused(break_it):
    (_devices_slice, obj) = k8s_slices.build_slices(inv.host(shared=True),
                                                    DRIVER)
    break_it(obj)
    assert schemas.slice_rule_errors(obj) != []      # the apiserver's view
    with pytest.raises(k8s_slices.InvalidSlice):
        k8s_slices.check_slice(obj)


def test_a_device_consuming_three_sets_or_an_undefined_one_is_refused():
    devices, counters = k8s_slices.build_slices(inv.host(shared=True),
                                                DRIVER)
    device = devices['spec']['devices'][0]
    assert k8s_counters.pool_errors([devices]) != []     # its set is gone
    assert allocator.gather_pools([devices])[0].invalid
    device['consumesCounters'] = [dict(device['consumesCounters'][0],
                                       counterSet=name)
                                  for name in ('a', 'b', 'c')]
    assert schemas.slice_rule_errors(devices) != []
    with pytest.raises(k8s_slices.InvalidSlice):
        k8s_slices.check_slice(devices)


# --- the sync -------------------------------------------------------------

def test_with_the_gate_the_pool_is_partitioned_and_stays_unwritten(
        apiserver, sync):
    result = sync.sync(inv.host(shared=True))
    assert (result.created, apiserver.refused) == (2, [])
    assert len(apiserver.dry_runs) == 1 and sync.counters.kept is True
    stored = _stored(apiserver)
    assert [bool(s['spec'].get('sharedCounters')) for s in stored] == [
        False, True]
    assert all('consumesCounters' in d for d in _devices(stored).values())
    # Quantities spelled another way are the same counters.
    stored[1]['spec']['sharedCounters'][0]['counters'] = {
        'function': {'value': '1000m'}}
    stored[0]['spec']['devices'][0]['consumesCounters'][0]['counters'] = {
        'function': {'value': '1000m'}}
    before = len(apiserver.requests)
    for _ in range(2):
        assert sync.sync(inv.host(shared=True)).writes == 0
    assert [r[0] for r in apiserver.requests[before:]] == ['GET', 'GET']
    stored = _stored(apiserver)
    # A claim with two requests: two functions, never one twice.
    found = allocator.allocate(_claim('a', 'b'), stored, CLASSES)
    assert len({_card(k) for keys in found.values() for k in keys}) == 2
    assert allocator.allocate(_claim('a', 'b', 'c'), stored, CLASSES) is None


def test_a_card_more_or_less_rewrites_the_pool_at_a_new_generation(
        apiserver, sync):
    sync.sync(inv.host(shared=True))
    result = sync.sync(inv.host(cards=3, shared=True))
    assert (result.updated, result.created, result.generation) == (2, 0, 2)
    stored = _stored(apiserver)
    assert len(stored[1]['spec']['sharedCounters']) == 3
    assert 'devices' not in stored[1]['spec']
    result = sync.sync(inv.host(cards=1, shared=True))
    assert (result.updated, result.generation) == (2, 3)
    assert [s['name'] for s in _stored(apiserver)[1]['spec'][
        'sharedCounters']] == ['fpga-0000-5e-00-0']
    # The last shared card gone: its counter slice goes with it.
    result = sync.sync(inv.host(cards=1))
    assert (result.deleted, result.updated) == (1, 1)
    (obj,) = _stored(apiserver)
    assert obj['spec']['pool']['resourceSliceCount'] == 1
    assert apiserver.refused == []


def test_without_the_gate_each_region_is_a_device_said_once(
        apiserver, sync, clock, caplog):
    apiserver.partitionable_devices = False
    host = inv.host(shared=True, with_gpu=True)     # the GPU shares nothing
    result = sync.sync(host)
    (obj,) = _stored(apiserver)
    assert result.created == 1 and apiserver.refused == []
    assert obj['spec']['pool']['resourceSliceCount'] == 1
    assert obj['spec']['devices'] == k8s_slices.build_slices(
        host, DRIVER, shared_counters=False)[0]['spec']['devices']
    sync.sync(inv.change_region(host, 0, 0, function_id='f' * 32))
    assert len(apiserver.dry_runs) == 1
    (line,) = _warnings(caplog)
    assert 'DRAPartitionableDevices' in line and 'dropped' in line
    # Asked again after an hour: an upgrade turned it on.
    apiserver.partitionable_devices = True
    clock.now += gated_fields.REASK_INTERVAL
    sync.sync(inv.host(shared=True))
    assert len(_stored(apiserver)) == 2 and sync.counters.kept is True
    assert len(apiserver.dry_runs) == 2


def test_the_rules_of_1_34_refuse_the_layout_and_the_sync_falls_back(
        apiserver, sync, caplog):
    """1.34 with the gate on wants a device's counter set in its own slice:
    the dry run is refused, nothing real is, and the host is published."""
    apiserver.counter_sets_with_devices = True
    sync.sync(inv.host(shared=True))
    (obj,) = _stored(apiserver)
    assert not any('consumesCounters' in d for d in obj['spec']['devices'])
    ((code, message),) = apiserver.refused
    assert code == 422 and 'must reference a counterSet' in message
    assert apiserver.dry_runs == apiserver.requests[:1]
    (line,) = _warnings(caplog)
    assert 'refused' in line and 'must reference a counterSet' in line


def test_each_gate_is_asked_alone(apiserver, sync, caplog):
    """Taints kept, counters refused (1.34's rules): the answer about one
    field never costs the other."""
    apiserver.counter_sets_with_devices = True
    host = inv.change_region(inv.host(shared=True), 0, 0,
                             unavailable=('maintaining',))
    sync.sync(host)
    assert len(apiserver.dry_runs) == 2 and len(apiserver.refused) == 1
    assert (sync.taints.kept, sync.counters.kept) == (True, False)
    (obj,) = _stored(apiserver)
    devices = {d['name']: d for d in obj['spec']['devices']}
    assert [t['key'] for t in devices['fpga-0000-5e-00-0-region0'][
        'taints']] == [DRIVER + '/maintaining']
    assert not any('consumesCounters' in d for d in devices.values())
    (line,) = _warnings(caplog)
    assert 'shared counters' in line


def test_counters_dropped_by_a_real_write_are_caught(apiserver, sync,
                                                     caplog):
    sync.sync(inv.host(shared=True))                 # the gate on: kept
    apiserver.handle('DELETE', fake_apiserver.RESOURCE + '/resourceslices',
                     b'')                            # a wipe
    apiserver.partitionable_devices = False          # and the gate off
    sync.sync(inv.host(shared=True))
    (obj,) = _stored(apiserver)
    assert obj['spec']['pool']['resourceSliceCount'] == 1
    assert not any('consumesCounters' in d for d in obj['spec']['devices'])
    assert len(apiserver.dry_runs) == 1 and apiserver.refused == []
    assert len(_warnings(caplog)) == 1


def test_shared_counters_false_never_asks(apiserver):
    client = apiserver.api_client()
    try:
        slice_sync.SliceSync(client, DRIVER, shared_counters=False).sync(
            inv.host(shared=True))
    finally:
        client.close()
    (obj,) = _stored(apiserver)
    assert not any('consumesCounters' in d for d in obj['spec']['devices'])
    assert apiserver.dry_runs == []


# --- allocated, then prepared: the database behind the slices -------------

@pytest.fixture
def node(sqlite_db, conf, apiserver):
    """host1 (Node node-1) with two cards whose two regions each sit
    behind the card's PF, its sink and the conductor's claim flow."""
    conf.set_override('hosts', ['host1'], group='kubernetes')
    conf.set_override('node_names', {'host1': 'node-1'}, group='kubernetes')
    for _ in range(2):
        h.make_card(hostname='host1', regions=2)
    client = apiserver.api_client()
    flow = k8s_claims.ClaimFlow(
        programming=None,
        cleaning=cleaning.CleaningFlow(agent_api=RecordingAgents()))
    yield sink_mod.KubernetesSink(client, conf), flow
    client.close()


def _published(sink, apiserver):
    assert sink.publish('host1').ok
    return _stored(apiserver)


def _prepare(flow, uid, keys):
    """Prepare each allocated device for claim ``uid`` as the kubelet asks;
    the refusals."""
    refusals = []
    for _driver, pool, device in keys:
        request = {'claim_uid': uid, 'namespace': 'ns', 'claim_name': uid,
                   'pool': pool, 'device': device}
        try:
            flow.prepare('host1', request, wait=1)
        except exception.ClaimRefused as e:
            refusals.append(str(e))
    return refusals


def _keys(found):
    return [k for keys in found.values() for k in keys]


def test_one_claim_two_requests_gets_two_functions_and_prepares(
        node, apiserver):
    sink, flow = node
    slices = _published(sink, apiserver)
    keys = _keys(allocator.allocate(_claim('a', 'b'), slices, CLASSES))
    assert len({_card(k) for k in keys}) == 2
    assert _prepare(flow, 'uid-1', keys) == []
    slices = _published(sink, apiserver)
    assert allocator.allocate(_claim('c'), slices, CLASSES,
                              allocated=keys) is None


def test_two_claims_at_once_or_back_to_back_get_two_functions(node,
                                                              apiserver):
    sink, flow = node
    slices = _published(sink, apiserver)
    first, second = allocator.allocate_claims([_claim('a'), _claim('a')],
                                              slices, CLASSES)
    assert _card(first['a'][0]) != _card(second['a'][0])
    # Another pod's claim, allocated before either is prepared: the
    # counters alone keep it off both functions.
    held = _keys(first) + _keys(second)
    assert allocator.allocate(_claim('a'), slices, CLASSES,
                              allocated=held) is None
    (alone,) = allocator.allocate_claims([_claim('a')], slices, CLASSES)
    later = allocator.allocate(_claim('a'), slices, CLASSES,
                               allocated=_keys(alone))
    assert _card(later['a'][0]) != _card(alone['a'][0])
    assert _prepare(flow, 'uid-1', _keys(first)) == []
    assert _prepare(flow, 'uid-2', _keys(second)) == []


def test_without_the_gate_the_fallback_holds(node, apiserver, caplog):
    """Separate devices: two regions behind one PF can be allocated to one
    claim, the second Prepare is refused, and once one is held its sibling
    is tainted, so no later claim is given it."""
    sink, flow = node
    apiserver.partitionable_devices = False
    slices = _published(sink, apiserver)
    assert len(slices) == 1
    keys = _keys(allocator.allocate(_claim('a', 'b'), slices, CLASSES))
    assert _card(keys[0]) == _card(keys[1])
    (refusal,) = _prepare(flow, 'uid-1', keys)
    assert 'handle_shared_in_use' in refusal
    devices = _devices(_published(sink, apiserver))
    assert [t['key'] for t in devices[keys[1][2]]['taints']] == [
        DRIVER + '/handle-shared-in-use']
    later = allocator.allocate(_claim('a'), _stored(apiserver), CLASSES,
                               allocated=keys[:1])
    assert _card(later['a'][0]) != _card(keys[0])
    assert [line for line in _warnings(caplog)
            if 'DRAPartitionableDevices' in line] != []
