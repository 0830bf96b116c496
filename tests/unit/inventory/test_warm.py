"""inventory/warm.py: the region a request takes and whether it waits;
and inventory/views.choose_member taking free siblings in that order."""
from cyborg_lite.inventory import views
from cyborg_lite.inventory import warm


def _first(*regions):
    """The name of the first of ``regions`` ((name, loaded, asked_at))
    in warm.preference's order, then by name."""
    return min(regions, key=lambda r: (warm.preference(r[1], r[2]),
                                       r[0]))[0]


def test_a_region_running_the_function_comes_first():
    assert _first(('a', False, None), ('b', True, 50.0)) == 'b'


def test_a_region_never_asked_for_is_reprogrammed_first():
    assert _first(('a', False, 10.0), ('b', False, None)) == 'b'


def test_of_two_asked_for_the_least_recently_asked_goes():
    assert _first(('a', False, 20.0), ('b', False, 10.0)) == 'b'
    assert _first(('a', False, 10.0), ('b', False, 20.0)) == 'a'


def test_equal_regions_go_by_name():
    assert _first(('b', False, 10.0), ('a', False, 10.0)) == 'a'


def test_wait_when_a_busy_region_frees_sooner_than_programming():
    assert warm.worth_waiting(1, 0, expected_free_s=10.0, program_s=20.0)


def test_no_wait_when_programming_is_sooner():
    assert not warm.worth_waiting(1, 0, expected_free_s=30.0,
                                  program_s=20.0)
    assert not warm.worth_waiting(1, 0, expected_free_s=20.0,
                                  program_s=20.0)


def test_no_wait_for_a_region_another_request_waits_for():
    assert not warm.worth_waiting(1, 1, expected_free_s=1.0,
                                  program_s=20.0)
    assert warm.worth_waiting(2, 1, expected_free_s=1.0, program_s=20.0)


def test_no_wait_when_nothing_busy_runs_it_or_nothing_is_known():
    assert not warm.worth_waiting(0, 0, expected_free_s=1.0,
                                  program_s=20.0)
    assert not warm.worth_waiting(1, 0, expected_free_s=None,
                                  program_s=20.0)
    # A device that never programmed has no programming time to beat.
    assert not warm.worth_waiting(1, 0, expected_free_s=1.0,
                                  program_s=None)


def test_a_held_region_is_expected_free_after_a_hold_and_a_clean():
    assert warm.expected_free((), False, hold_s=4.0, clean_s=1.0) == 5.0
    # A driver that never cleaned: the hold alone.
    assert warm.expected_free((), False, hold_s=4.0, clean_s=None) == 4.0
    # No hold seen yet: nothing to say.
    assert warm.expected_free((), False, hold_s=None, clean_s=1.0) is None


def test_a_region_being_wiped_is_expected_free_after_the_clean():
    for reasons in (('pending_cleaning',), ('cleaning',)):
        assert warm.expected_free(reasons, True, hold_s=None,
                                  clean_s=2.0) == 2.0


def test_a_free_region_is_free_and_a_faulty_one_is_never_waited_for():
    assert warm.expected_free((), True, hold_s=4.0, clean_s=1.0) == 0.0
    for reasons in (('unhealthy',), ('cleaning_failed',),
                    ('maintaining', 'cleaning'), ('kubernetes_claimed',)):
        assert warm.expected_free(reasons, False, hold_s=4.0,
                                  clean_s=1.0) is None


def _region(index, function_id, busy=False):
    return views.DeployableView(
        uuid='r%d' % index, name='region%d' % index, region_type='t',
        function_id=function_id,
        attach_handles=(views.AttachHandleView(
            uuid='h%d' % index, attach_type='PCI', attach_info={},
            in_use=busy),))


def _choose(regions, wanted, asked):
    device = views.DeviceView(uuid='card', type='FPGA', vendor='0x8086',
                              identity='0000:5e:00.0',
                              deployables=tuple(regions))
    chosen, why = views.choose_member(
        device, device.deployables, lambda dep: None,
        lambda dep: dep.function_id == wanted,
        lambda dep: asked.get(dep.name))
    return chosen.name if chosen else why


def test_choose_member_takes_the_free_warm_region():
    regions = [_region(0, 'f1'), _region(1, 'f2'), _region(2, 'f2', True)]
    assert _choose(regions, 'f2', {'region0': 1.0, 'region1': 9.0}) \
        == 'region1'


def test_choose_member_reprograms_the_least_recently_asked():
    regions = [_region(0, 'f1'), _region(1, 'f2'), _region(2, 'f3', True)]
    assert _choose(regions, 'f3', {'region0': 9.0, 'region1': 1.0}) \
        == 'region1'
    assert _choose(regions, 'f3', {'region0': 1.0, 'region1': 9.0}) \
        == 'region0'
