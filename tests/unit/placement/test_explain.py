"""placement/explain.py on a generated 1,000-host fleet, against an
oracle written here from the fleet's plain specs, brute force per region:
the first constraint each region fails, the funnel's counts, the step
that blocks each group and the near misses must agree, 100%."""
import pytest

from cyborg_lite.placement import explain
from tests.unit.placement import explain_fleet as fleet

STEPS = ('resource_class', 'traits', 'region_type', 'local_memory',
         'function', 'numa', 'health', 'maintenance', 'cleaning',
         'agent_down', 'in_use')
VENDORS = {'0x8086': 'INTEL', '0x10ee': 'XILINX'}


def _offered_traits(card, region):
    traits = {'OWNER_CYBORG', 'CUSTOM_FPGA_' + VENDORS[card['vendor']],
              'CUSTOM_PROGRAMMABLE',
              'CUSTOM_FPGA_REGION_' + region['region_type'].upper()}
    if region['trait']:
        traits.add(region['trait'])
    if region['function_id']:
        traits.add('CUSTOM_FUNCTION_ID_' + region['function_id'].upper())
    if region['numa'] is not None:
        traits.add('CUSTOM_NUMA_NODE_%d' % region['numa'])
    return traits


def _trait_step(name):
    for prefix, step in (('CUSTOM_FPGA_REGION_', 'region_type'),
                         ('CUSTOM_FUNCTION_ID_', 'function'),
                         ('CUSTOM_NUMA_NODE_', 'numa')):
        if name.startswith(prefix):
            return step
    return 'traits'


def _oracle_failed(host, card, region, group, images):
    """Every step ``region`` fails for ``group``, from the specs alone."""
    failed = set()
    rc = region['rc']
    for key, value in group.items():
        kind, _, name = key.partition(':')
        if kind == 'resources':
            if name == 'CUSTOM_FPGA_LOCAL_MEMORY_MB':
                if region['memory'] < int(value):
                    failed.add('local_memory')
            elif name != rc or int(value) > 1:
                failed.add('resource_class')
        elif kind == 'trait':
            has = name in _offered_traits(card, region)
            if has != (value == 'required'):
                failed.add(_trait_step(name))
    if group.get('accel:numa_affinity') == 'required' and \
            region['numa'] is None:
        failed.add('numa')
    bitstream = group.get('accel:bitstream_id')
    if bitstream and images.get(bitstream) != region['region_type']:
        failed.add('function')
    causes = region['causes']
    siblings = [r for r in card['regions'] if r is not region] \
        if card['shared'] else []
    if causes & {'unhealthy', 'recovering'} or 'unhealthy' in card['causes']:
        failed.add('health')
    if 'maintaining' in card['causes'] or any(
            'maintaining' in r['causes'] for r in card['regions']):
        failed.add('maintenance')
    if causes & {'pending_cleaning', 'cleaning', 'error'} or any(
            r['causes'] & {'pending_cleaning', 'cleaning', 'error'}
            for r in siblings):
        failed.add('cleaning')
    if host['agent_down']:
        failed.add('agent_down')
    if causes & {'bound', 'k8s', 'sibling_held'}:
        failed.add('in_use')
    return failed


def _oracle(spec, group, images=None):
    """(per region uuid its first failing step, funnel, blocking step,
    near misses {region uuid: step})."""
    first, near = {}, {}
    hosts = {s: set() for s in STEPS}
    devices = dict.fromkeys(STEPS, 0)
    for host in spec:
        for card in host['cards']:
            for region in card['regions']:
                failed = _oracle_failed(host, card, region, group,
                                        images or {})
                step = next((s for s in STEPS if s in failed), None)
                first[region['uuid']] = step
                if len(failed) == 1:
                    near[region['uuid']] = step
                for passed in STEPS[:STEPS.index(step) if step else None]:
                    hosts[passed].add(host['hostname'])
                    devices[passed] += 1
    funnel = [(s, len(hosts[s]), devices[s]) for s in STEPS]
    blocking = next((s for s, _h, d in funnel if d == 0), None)
    return first, funnel, blocking, near


SPEC = fleet.fleet_spec()
FLEET = fleet.fleet(SPEC)
BASE, PROFILES = fleet.BASE, fleet.PROFILES


def _images(images):
    return explain.Images(bitstreams=images or {})


@pytest.mark.parametrize('group,images,expected', PROFILES)
def test_each_empty_answer_names_the_oracles_first_failing_constraint(
        group, images, expected):
    first, funnel, blocking, near = _oracle(SPEC, group, images)
    assert blocking == expected
    (result,) = explain.explain([group], FLEET, {}, _images(images))
    assert [(f['step'], f['hosts'], f['devices'])
            for f in result['funnel']] == funnel
    assert (result['blocking'] or {}).get('step') == blocking
    if blocking:
        assert result['blocking']['kind'] == (
            'permanent' if STEPS.index(blocking) < 6 else 'transient')
    assert result['near_misses_total'] == len(near)
    # The first shown, in the fleet's order (the oracle's, spec order).
    assert [(m['deployable_uuid'], m['failed'])
            for m in result['near_misses']] == list(near.items())[
        :explain.NEAR_MISSES_SHOWN]
    # Region by region, 100% agreement.
    found = {region.uuid: explain.first_failure(region, group,
                                                _images(images))
             for region in explain.regions(FLEET)}
    assert found == first


def test_the_fleet_has_every_cause_as_some_regions_first_failure():
    seen = set()
    for group, images, _expected in PROFILES:
        seen.update(_oracle(SPEC, group, images)[0].values())
    assert seen == set(STEPS) | {None}
    assert len(SPEC) == 1000


def test_holders_of_the_regions_stopped_in_use_are_named():
    group = dict(BASE, **{'trait:CUSTOM_FPGA_REGION_RARE_BOUND': 'required'})
    held = {'host0007-c0-r0': [{'kind': 'arq', 'project_id': 'p1',
                                'instance_uuid': 'i1'}],
            'host0007-c0-r1': [{'kind': 'kubernetes', 'project_id': 'p2',
                                'namespace': 'ns-a', 'claim': 'c',
                                'pods': ['job-7']}],
            'host0009-c1-r0': [{'kind': 'arq', 'project_id': 'p3',
                                'instance_uuid': 'i3'}]}
    (result,) = explain.explain([group], FLEET, held)
    assert result['blocking']['step'] == 'in_use'
    assert sorted(h['project_id'] for h in result['blocking']['holders']) \
        == ['p1', 'p2']


def test_every_unavailable_reason_has_a_transient_step():
    from cyborg_lite.inventory import views
    for reason in views.REASONS:
        assert explain.reason_step(reason) in STEPS[6:]


def test_what_a_driver_cannot_bind_yet_is_not_told_as_cleaning():
    assert explain.reason_step('bind_unsupported') == 'maintenance'


def test_a_region_a_kubernetes_claim_holds_is_a_near_miss_saying_so():
    group = dict(BASE, **{'trait:CUSTOM_FPGA_REGION_RARE_K8S': 'required'})
    (result,) = explain.explain([group], FLEET)
    assert result['blocking']['step'] == 'in_use'
    assert {m['why'] for m in result['near_misses']
            if m['failed'] == 'in_use'} == {'kubernetes_claimed'}


def _row(host, device_id, region_id, device_state='available'):
    return explain.RegionRow(
        hostname=host, agent_state='up', device_id=device_id,
        device_uuid='dev-%d' % device_id, device_type='FPGA',
        vendor='0x8086', status='enabled', device_health='healthy',
        device_numa_node=None, id=region_id, uuid='r-%d' % region_id,
        name='region%d' % region_id, num_accelerators=1,
        region_type='aa01', function_id=None, local_memory_mb=4096,
        device_state=device_state, health='healthy', numa_node=0)


def _small_fleet(rows, attributes, handles):
    return explain.Fleet(rows, attributes, handles, {}, {},
                         tuple(sorted({r.hostname for r in rows})))


def _first_failures(small):
    group = dict(BASE)
    return {region.uuid: explain.first_failure(region, group)
            for region in explain.regions(small)}


def test_equal_regions_whose_pf_siblings_differ_are_told_apart():
    # Two cards of two regions behind one PF each, every column equal
    # but one sibling waiting to be wiped: its partner may not be given.
    pf = '{"bus": "5e", "device": "00", "function": "0"}'
    rows = [_row('host-a', 1, 1), _row('host-a', 1, 2, 'pending_cleaning'),
            _row('host-b', 2, 3), _row('host-b', 2, 4)]
    small = _small_fleet(rows, {r.id: {'rc': 'FPGA'} for r in rows},
                         {r.id: [explain.HandleRow(r.id * 10, pf, False)]
                          for r in rows})
    assert _first_failures(small) == {'r-1': 'cleaning', 'r-2': 'cleaning',
                                      'r-3': None, 'r-4': None}


def test_equal_regions_whose_whole_card_differs_are_told_apart():
    # Two cards offered whole beside their region; one card is held, so
    # its region is too; the other card's region is free.
    rows = [_row('host-a', 1, 1), _row('host-a', 1, 2),
            _row('host-b', 2, 3), _row('host-b', 2, 4)]
    card = {'rc': 'FPGA', 'trait0': 'CUSTOM_FPGA_WHOLE_CARD'}
    attributes = {1: card, 2: {'rc': 'FPGA'}, 3: card, 4: {'rc': 'FPGA'}}

    def handle(row, function, in_use):
        info = '{"bus": "5e", "device": "00", "function": "%d"}' % function
        return [explain.HandleRow(row * 10, info, in_use)]
    small = _small_fleet(rows, attributes, {
        1: handle(1, 0, True), 2: handle(2, 1, False),
        3: handle(3, 0, False), 4: handle(4, 1, False)})
    found = _first_failures(small)
    assert (found['r-2'], found['r-4']) == ('in_use', None)
