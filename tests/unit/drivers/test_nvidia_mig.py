"""MIG placements: recorded ``nvidia-smi mig -lgip/-lgipp/-lgi`` outputs
(A100-40GB, H100-80GB) parsed, and the choice of a start for a new GPU
instance checked against what a full GPU can still hold."""
import pytest

from cyborg_lite.common import exception
from cyborg_lite.common import mig_placements
from cyborg_lite.drivers import nvidia_mig
from tests.unit.drivers.conftest import fixture_path


def _read(name):
    with open(fixture_path('nvidia', name)) as f:
        return f.read()


def _gpu(model):
    return nvidia_mig.profiles(_read('mig_lgip_%s.txt' % model),
                               _read('mig_lgipp_%s.txt' % model))


def _named(gpu_profiles, name):
    return next(p for p in gpu_profiles if p.name == name)


ALL = frozenset(range(8))


def test_a100_profiles_and_placements_as_recorded():
    gpu = _gpu('a100_40gb')
    assert [(p.id, p.name, p.size, p.starts) for p in gpu] == [
        (19, '1g.5gb', 1, (0, 1, 2, 3, 4, 5, 6)),
        (14, '2g.10gb', 2, (0, 2, 4)),
        (9, '3g.20gb', 4, (0, 4)),
        (5, '4g.20gb', 4, (0,)),
        (0, '7g.40gb', 8, (0,))]
    assert _named(gpu, '3g.20gb').memory_gib == 19.62
    assert _named(gpu, '7g.40gb').multiprocessors == 98
    assert nvidia_mig.slice_count(gpu) == 8


def test_h100_profiles_include_the_two_slice_one_g():
    gpu = _gpu('h100_80gb')
    assert [p.name for p in gpu] == [
        '1g.10gb', '1g.10gb+me', '1g.20gb', '2g.20gb', '3g.40gb',
        '4g.40gb', '7g.80gb']
    # 1g.20gb may start on slice 6 (taking 6 and 7); 2g.20gb may not.
    assert _named(gpu, '1g.20gb').starts == (0, 2, 4, 6)
    assert _named(gpu, '2g.20gb').starts == (0, 2, 4)


def test_lgip_without_the_engines_row():
    rows = nvidia_mig.parse_lgip(_read('mig_lgip_a100_80gb_one_row.txt'))
    assert rows[15] == ('1g.20gb', 19.5, 14, 4)
    assert rows[20] == ('1g.10gb+me', 9.5, 14, 1)
    assert sorted(rows) == [0, 5, 9, 14, 15, 19, 20]


@pytest.mark.parametrize('model', ['a100_40gb', 'h100_80gb'])
def test_an_idle_gpu_makes_what_lgip_shows_free(model):
    # The recorded Free column of an idle GPU: "7/7", "3/3", ...
    free_column = {}
    for line in _read('mig_lgip_%s.txt' % model).splitlines():
        fields = line.strip('| ').split()
        if len(fields) > 4 and fields[1] == 'MIG':
            free_column[int(fields[3])] = int(fields[4].split('/')[0])
    gpu = _gpu(model)
    assert {p.id: nvidia_mig.makeable(p, ALL) for p in gpu} == free_column
    # 1g at 6 and a 3g at 0 made: one 2g (at 4) fits, no 3g.
    left = ALL - {6, 0, 1, 2, 3}
    assert nvidia_mig.makeable(_named(gpu, '2g.10gb' if 'a100' in model
                                      else '2g.20gb'), left) == 1
    assert nvidia_mig.makeable(_named(gpu, '1g.5gb' if 'a100' in model
                                      else '1g.10gb'), left) == 2


def test_a_media_engines_profile_is_made_once():
    me = _named(_gpu('h100_80gb'), '1g.10gb+me')
    assert nvidia_mig.makeable(me, ALL) == 1
    assert nvidia_mig.makeable(me, ALL - {6}, made=1) == 0


def test_lgipp_with_an_unknown_line_is_refused():
    with pytest.raises(exception.HostDataError, match='unexpected line'):
        nvidia_mig.parse_lgipp(_read('mig_lgipp_a100_40gb.txt') +
                               'GPU  0 Profile ID 3 Placements: {0,9\n')


def test_lgipp_profile_missing_from_lgip_is_refused():
    with pytest.raises(exception.HostDataError,
                       match='profile 20 is not in -lgip'):
        nvidia_mig.profiles(_read('mig_lgip_a100_40gb.txt'),
                            _read('mig_lgipp_h100_80gb.txt'))


def test_free_slices_from_lgi():
    instances = nvidia_mig.parse_lgi(_read('mig_lgi_3b.txt'))
    assert instances == [nvidia_mig.Instance(1, 9, 4, 4),
                         nvidia_mig.Instance(2, 9, 0, 4),
                         nvidia_mig.Instance(9, 19, 6, 1)]
    assert nvidia_mig.free_slices(8, instances) == frozenset()
    assert nvidia_mig.free_slices(8, instances[1:]) == {4, 5, 7}


@pytest.mark.parametrize('free,name,starts', [
    (ALL, '1g.5gb', [0, 1, 2, 3, 4, 5, 6]),
    (ALL - {6}, '2g.10gb', [0, 2, 4]),
    (ALL - {5}, '2g.10gb', [0, 2]),
    (ALL - {0}, '3g.20gb', [4]),
    (ALL - {7}, '7g.40gb', []),
    (frozenset({7}), '1g.5gb', []),
])
def test_valid_starts_need_every_slice_free(free, name, starts):
    gpu = _gpu('a100_40gb')
    assert nvidia_mig.valid_starts(_named(gpu, name), free) == starts


@pytest.mark.parametrize('model,free,name,start', [
    # An empty GPU: a 1g goes last, keeping 4g.20gb and 3g@0 whole.
    ('a100_40gb', ALL, '1g.5gb', 6),
    ('a100_40gb', ALL, '2g.10gb', 4),
    ('a100_40gb', ALL, '3g.20gb', 4),
    ('a100_40gb', ALL, '4g.20gb', 0),
    # 1g at 6 taken: a 2g beside it (4) leaves 4g@0 possible; at 0 not.
    ('a100_40gb', ALL - {6}, '2g.10gb', 4),
    # 4..7 taken by a 3g: a 1g goes to 3, keeping 2g@0 possible.
    ('a100_40gb', ALL - {4, 5, 6, 7}, '1g.5gb', 3),
    # 0..1 taken by a 2g: a 1g goes to 3, keeping 3g@4 whole (at 6 it
    # would keep one more 2g placement and lose the larger 3g).
    ('a100_40gb', ALL - {0, 1}, '1g.5gb', 3),
    # H100: the 2-slice 1g goes to 6, where no 2g.20gb may start.
    ('h100_80gb', ALL, '1g.20gb', 6),
    ('h100_80gb', ALL - {6, 7}, '1g.20gb', 4),
    ('a100_40gb', ALL - {0}, '4g.20gb', None),
])
def test_choose_start_keeps_large_placements(model, free, name, start):
    gpu = _gpu(model)
    assert nvidia_mig.choose_start(_named(gpu, name), free, gpu) == start


def test_choosing_in_turn_packs_small_instances_at_the_end():
    gpu = _gpu('a100_40gb')
    free = ALL
    made = []
    for name in ['1g.5gb', '1g.5gb', '2g.10gb', '1g.5gb', '3g.20gb']:
        profile = _named(gpu, name)
        start = nvidia_mig.choose_start(profile, free, gpu)
        made.append((name, start))
        if start is not None:
            free -= mig_placements.slices(start, profile.size)
    # The 1g's go to 6 and 5 (4g@0 and 3g@0 stay possible), the 2g to 2
    # (2g@4 is gone; 2 and 0 keep as much, the higher start wins), the
    # third 1g to 4; no 3g fits any more, a 2g still does (at 0).
    assert made == [('1g.5gb', 6), ('1g.5gb', 5), ('2g.10gb', 2),
                    ('1g.5gb', 4), ('3g.20gb', None)]
    assert free == {0, 1, 7}
    assert nvidia_mig.choose_start(_named(gpu, '2g.10gb'), free, gpu) == 0


def test_counters_name_the_placements_slices():
    assert nvidia_mig.counter_names(4, 2) == ['memory-slice-4',
                                              'memory-slice-5']
