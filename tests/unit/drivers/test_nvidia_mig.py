"""MIG placements: recorded ``nvidia-smi mig -lgip/-lgipp/-lgi`` outputs
(A100-40GB, H100-80GB) parsed, and what a GPU can still make."""
import pytest

from cyborg_lite.common import exception
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


def test_counters_name_the_placements_slices():
    assert nvidia_mig.counter_names(4, 2) == ['memory-slice-4',
                                              'memory-slice-5']
