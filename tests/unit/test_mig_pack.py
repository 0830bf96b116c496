"""bench/mig_pack's schedulers, its double-allocation check and its
offline optimum, on hand-made traces whose answers are known."""
import argparse

import pytest

from bench import mig_optimum
from bench import mig_pack
from tests import servers


def _a100(count=1):
    return mig_pack.fleet('a100_40gb:%d' % count)


def test_an_idle_gpu_can_make_what_lgip_shows_free():
    for model, free in [('a100_40gb', {19: 7, 14: 3, 9: 2, 5: 1, 0: 1}),
                        ('h100_80gb', {19: 7, 20: 1, 15: 4, 14: 3, 9: 2,
                                       5: 1, 0: 1})]:
        gpu = mig_pack.Gpu(*mig_pack.fleet(model + ':1')[0])
        assert {pid: gpu.makeable(pid) for pid in gpu.profiles} == free


def test_dra_devices_are_published_best_start_first():
    devices = mig_pack.published_devices([mig_pack.Gpu(*_a100()[0])])
    assert [s for _, pid, s in devices if pid == 19] == [6, 5, 4, 3, 2,
                                                         1, 0]
    assert [s for _, pid, s in devices if pid == 14] == [4, 2, 0]
    assert [s for _, pid, s in devices if pid == 9] == [4, 0]


def test_both_schedulers_reuse_slices_freed_before_an_arrival():
    # A 7g held until 10; a 1g arriving at 10 takes the freed GPU.
    requests = [(0, 10, 0), (5, 20, 19), (10, 30, 19), (11, 30, 9)]
    for scheduler in ('placement', 'dra'):
        granted = mig_pack.run(requests, _a100(), scheduler)
        assert granted == [(0, 0, 0), (2, 0, 6), (3, 0, 0)], scheduler
        assert mig_pack.double_allocations(requests, _a100(), granted) == 0


def test_placement_takes_the_first_gpu_with_inventory_left():
    requests = [(0, 10, 0), (1, 10, 9), (2, 10, 19)]
    granted = mig_pack.run(requests, _a100(2), 'placement')
    assert granted == [(0, 0, 0), (1, 1, 4), (2, 1, 3)]


def test_overlapping_grants_are_counted():
    requests = [(0, 10, 9), (5, 15, 19), (10, 20, 14)]
    # 3g at 4..7 until 10; a 1g at 6 overlaps it at 5.
    assert mig_pack.double_allocations(
        requests, _a100(), [(0, 0, 4), (1, 0, 6)]) == 1
    # A 1g at 6 arriving just before the 3g leaves overlaps it too.
    assert mig_pack.double_allocations(
        requests + [(9.5, 12, 19)], _a100(), [(0, 0, 4), (3, 0, 6)]) == 1
    # The 2g at 4 starts as the 3g leaves: no overlap.
    assert mig_pack.double_allocations(
        requests, _a100(), [(0, 0, 4), (2, 0, 4)]) == 0
    # Another GPU's slices are its own.
    assert mig_pack.double_allocations(
        requests, _a100(2), [(0, 0, 4), (1, 1, 6)]) == 0
    # A start -lgipp does not allow (2g at 6).
    assert mig_pack.double_allocations(
        requests, _a100(), [(2, 0, 6)]) == 1


def test_the_optimum_refuses_a_large_request_to_take_three_small_ones():
    # A 7g at 0 would refuse the three 3g/2g/1g that follow it.
    requests = [(0, 10, 0), (1, 10, 9), (2, 10, 14), (3, 10, 19)]
    assert mig_optimum.search(requests, _a100()) == 3
    assert len(mig_pack.run(requests, _a100(), 'placement')) == 1


def test_the_program_agrees_with_the_exhaustive_search():
    try:
        import scipy  # noqa: F401  (the bench and test extras)
    except ImportError:
        assert not servers.under_ci(), 'scipy (the test extra) is missing'
        pytest.skip('scipy is not installed: pip install -e .[test]')
    # Two 7g's overlapping from the second's arrival: one at most.
    assert mig_optimum.solve([(0, 10, 0), (5, 15, 0)], _a100(), 30)[
        'bound'] == 1
    below = 0
    for seed in range(4):
        args = argparse.Namespace(requests=10, seed=seed, mean_gap=0.5,
                                  mean_hold=4.0)
        requests = mig_pack.trace(args)
        gpus = mig_pack.fleet('a100_40gb:1,h100_80gb:1')
        solved = mig_optimum.solve(requests, gpus, 30)
        assert solved['exact']
        optimum = mig_optimum.search(requests, gpus)
        assert solved['bound'] == optimum
        # Its schedule is one: as many grants, none overlapping.
        assert len(solved['schedule']) == solved['found'] == optimum
        assert mig_pack.double_allocations(requests, gpus,
                                           solved['schedule']) == 0
        below += optimum < len(requests)
    assert below >= 2       # traces where the optimum refuses some


def test_grants_are_counted_by_profile_every_profile_asked_for_named():
    requests = [(0, 10, 0), (1, 10, 9), (2, 10, 14), (3, 10, 19)]
    assert mig_pack.by_profile(requests, [(1, 0, 4), (3, 0, 6)]) == {
        0: 0, 9: 1, 14: 0, 19: 1}


def test_slices_republished_as_instances_change_grant_as_placement_does():
    """``dra``: each GPU's placements ranked on the GPU as it is now
    (kubernetes/mig_counters.ranked with the held instances), so the
    scheduler's first fit makes the grants of Placement's view, whose
    agent makes each at the best fit; ranked on the idle GPU it does
    not."""
    args = argparse.Namespace(requests=300, seed=7, mean_gap=1.0,
                              mean_hold=12.0)
    requests = mig_pack.trace(args)
    gpus = mig_pack.fleet('a100_40gb:1,h100_80gb:1')
    agent = mig_pack.run(requests, gpus, 'placement')
    assert mig_pack.run(requests, gpus, 'dra') == agent
    assert mig_pack.run(requests, gpus, 'dra-idle-order') != agent


def test_the_baseline_takes_a_profiles_lowest_start_first():
    """``dra-by-name``: the order the slices carried before the policy
    (by name), the policy's devices all the same."""
    gpus = [mig_pack.Gpu(*spec) for spec in _a100(2)]
    devices = mig_pack.devices_by_name(gpus)
    assert [(g, s) for g, pid, s in devices if pid == 19] == [
        (0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (0, 6),
        (1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (1, 6)]
    assert sorted(devices) == sorted(mig_pack.published_devices(gpus))
