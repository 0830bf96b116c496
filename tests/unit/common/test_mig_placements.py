"""The MIG placement policy (common/mig_placements): on the recorded
``nvidia-smi mig -lgip/-lgipp`` of an A100-40GB and an H100-80GB, the
best fit for a new GPU instance checked against what a full GPU can
still hold."""
import pytest

from cyborg_lite.common import mig_placements
from cyborg_lite.drivers import nvidia_mig
from tests.unit.drivers.conftest import fixture_path

ALL = frozenset(range(8))


def _gpu(model):
    def read(kind):
        name = 'mig_%s_%s.txt' % (kind, model)
        with open(fixture_path('nvidia', name)) as f:
            return f.read()
    return nvidia_mig.profiles(read('lgip'), read('lgipp'))


def _named(gpu_profiles, name):
    return next(p for p in gpu_profiles if p.name == name)


def _best(profile, free, gpu):
    """The best start for ``profile`` on ``free``; None if none fits."""
    best = mig_placements.best_first(profile.size, profile.starts, free,
                                     [(p.size, p.starts) for p in gpu])
    return best[0] if best else None


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
def test_the_best_fit_keeps_large_placements(model, free, name, start):
    gpu = _gpu(model)
    assert _best(_named(gpu, name), free, gpu) == start


def test_choosing_in_turn_packs_small_instances_at_the_end():
    gpu = _gpu('a100_40gb')
    free = ALL
    made = []
    for name in ['1g.5gb', '1g.5gb', '2g.10gb', '1g.5gb', '3g.20gb']:
        profile = _named(gpu, name)
        start = _best(profile, free, gpu)
        made.append((name, start))
        if start is not None:
            free -= mig_placements.slices(start, profile.size)
    # The 1g's go to 6 and 5 (4g@0 and 3g@0 stay possible), the 2g to 2
    # (2g@4 is gone; 2 and 0 keep as much, the higher start wins), the
    # third 1g to 4; no 3g fits any more, a 2g still does (at 0).
    assert made == [('1g.5gb', 6), ('1g.5gb', 5), ('2g.10gb', 2),
                    ('1g.5gb', 4), ('3g.20gb', None)]
    assert free == {0, 1, 7}
    assert _best(_named(gpu, '2g.10gb'), free, gpu) == 0
