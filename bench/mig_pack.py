"""MIG made at bind: accepted requests of our choices against an offline
optimum, for the Placement view and the DRA view.

    .venv/bin/python -m bench.mig_pack [--requests 1000] [--seed 42]
        [--gpus a100_40gb:2,h100_80gb:2] [--mean-gap 1] [--mean-hold 12]
        [--time-limit 120] [--output F]

A simulation on modelled time (nothing sleeps, no service runs). The
GPUs' profiles and placements are the recorded ``nvidia-smi mig -lgip``
/ ``-lgipp`` outputs of tests/fixtures/drivers/nvidia/ read by
drivers/nvidia_mig. ``--requests`` requests, seeded: each asks for one
MIG profile (by id; 19 1g, 15 1g.20gb (H100 only), 14 2g, 9 3g, 5 4g,
0 7g; weights 8:2:4:3:1:2; no ``+me`` profile: a GPU's media engines
are one, which memory-slice counters alone do not count), arrives after
an exponential gap and holds its instance for an exponential time; a
request that nothing can take when it arrives is refused (no queue).
Two online schedulers see the requests in turn:

- ``placement``: Placement's view. Each GPU offers one inventory per
  profile, the number of instances of it the GPU can still make (what
  ``-lgip`` shows as Free), written before a bind returns; Placement's
  candidates are the GPUs with one left, Nova takes the first, and the
  agent makes the instance at the best fit (common/mig_placements), as
  a bind of a MIG-backed vGPU type does (drivers/nvidia_mig_vgpu.py;
  its count is also capped by the free VFs and the type's Max
  Instances, which this bench leaves out).
- ``dra``: the Kubernetes scheduler's view. Each GPU publishes one device
  per (profile, placement), consuming that placement's
  ``memory-slice-<i>`` counters of the GPU's counter set (KEP-4815); the
  scheduler's allocator walks the devices in the order they are
  published and takes the first whose device and counters are free, as
  the structured-parameters allocator does. The order is the one the
  slices carry (kubernetes/mig_counters.ranked, the one function both
  use), republished whenever an instance is made or destroyed: GPU by
  GPU (a GPU's placements are kept in one slice; which slice the
  scheduler walks first is not defined, this takes them in order), each
  GPU's profiles smallest first, each profile's starts that fit best fit
  first on the GPU as it is (common/mig_placements), so it grants what
  ``placement`` grants.
- ``dra-idle-order``: the same, each GPU's placements ranked on the idle
  GPU and never republished, as the slices carried them before: a
  baseline.
- ``dra-by-name``: the same, each profile's starts in the order of
  their names (lowest first), as the slices carried them before they
  carried a policy: a baseline.

An independent check replays every grant: a start the GPU's ``-lgipp``
allows, slices not held by another instance on the same GPU at that
time. Any failure counts as a double allocation.

``optimum``: computed offline by the bench with every arrival and
departure known, as a 0/1 program solved by HiGHS (``scipy.optimize
.milp``): a variable per (request, GPU, allowed start), at most one per
request, and for each GPU, memory slice and instant where the set of
holders is largest (an arrival before a departure), at most one holder.
Solved within ``--time-limit`` it is exact; otherwise the solver's dual
bound (an upper bound on the optimum) is printed and the ratios are
against it, which only understates them.
"""
import argparse
import collections
import functools
import heapq
import random
import sys

from bench import common
from bench import mig_optimum
from cyborg_lite.common import mig_placements
from cyborg_lite.drivers import nvidia_mig
from cyborg_lite.kubernetes import mig_counters

FIXTURES = 'tests/fixtures/drivers/nvidia/'
REQUEST_WEIGHTS = {19: 8, 15: 2, 14: 4, 9: 3, 5: 1, 0: 2}
SCHEDULERS = ('placement', 'dra', 'dra-idle-order', 'dra-by-name')


def gpu_profiles(model):
    """{profile id: Profile} of a recorded GPU model."""
    def read(kind):
        with open('%smig_%s_%s.txt' % (FIXTURES, kind, model)) as f:
            return f.read()
    return {p.id: p for p in nvidia_mig.profiles(read('lgip'),
                                                 read('lgipp'))}


def fleet(spec):
    """[(model, {profile id: Profile})] of ``model:count,...``."""
    gpus = []
    for part in spec.split(','):
        model, _, count = part.partition(':')
        profiles = gpu_profiles(model)
        gpus += [(model, profiles)] * int(count or 1)
    return gpus


def trace(args):
    """[(arrival, departure, profile id)], seeded."""
    rng = random.Random(args.seed)
    ids = sorted(REQUEST_WEIGHTS)
    weights = [REQUEST_WEIGHTS[i] for i in ids]
    now, requests = 0.0, []
    for _ in range(args.requests):
        now += rng.expovariate(1.0 / args.mean_gap)
        hold = rng.expovariate(1.0 / args.mean_hold)
        requests.append((now, now + hold, rng.choices(ids, weights)[0]))
    return requests


class Gpu(object):
    """One GPU's free slices and the instances on it."""

    def __init__(self, model, profiles):
        self.model, self.profiles = model, profiles
        self.ordered = sorted(profiles.values(),
                              key=lambda p: (p.size, -len(p.starts)))
        self.free = frozenset(range(nvidia_mig.slice_count(self.ordered)))
        self.held = frozenset()     # (profile id, start, size)

    def take(self, profile, start):
        self.free -= mig_placements.slices(start, profile.size)
        self.held |= {(profile.id, start, profile.size)}

    def give(self, profile, start):
        self.free |= mig_placements.slices(start, profile.size)
        self.held -= {(profile.id, start, profile.size)}

    def placements(self):
        """[(profile id, start, size)] of every placement it offers."""
        return [(p.id, s, p.size) for p in self.ordered for s in p.starts]

    def makeable(self, profile_id):
        """The ``-lgip`` Free count: instances of one profile that could
        still be made side by side."""
        profile = self.profiles.get(profile_id)
        return 0 if profile is None else nvidia_mig.makeable(profile,
                                                             self.free)


def best_start(profile, free, gpu_profiles):
    """The best fit for ``profile`` on ``free`` (common/mig_placements)."""
    return mig_placements.best_first(
        profile.size, profile.starts, free,
        [(p.size, p.starts) for p in gpu_profiles])[0]


def placement_choice(gpus, profile_id):
    """(GPU index, start): the first GPU Placement offers, best-fit."""
    for index, gpu in enumerate(gpus):
        if gpu.makeable(profile_id) >= 1:
            profile = gpu.profiles[profile_id]
            return index, best_start(profile, gpu.free, gpu.ordered)
    return None


def published_devices(gpus, now=False):
    """[(GPU index, profile id, start)] in the order of the slices: each
    GPU's placements ranked on the idle GPU, or ``now`` on the GPU as it
    is (its held instances taken)."""
    devices = []
    for index, gpu in enumerate(gpus):
        ranked = _ranked(tuple(gpu.placements()),
                         gpu.held if now else frozenset())
        devices += [(index, pid, s) for pid, s, _ in ranked]
    return devices


@functools.lru_cache(maxsize=4096)
def _ranked(placements, held):
    return mig_counters.ranked(placements, held)


def devices_by_name(gpus):
    """[(GPU index, profile id, start)] as the slices ordered them
    before the policy, by name: GPU by GPU, a profile's lowest start
    first (which profile comes first matters to no request: each names
    one)."""
    return sorted(published_devices(gpus))


def dra_choice(gpus, profile_id, devices):
    """The first published device of the profile whose counters (its
    memory slices on its GPU) are all free."""
    for index, pid, start in devices:
        if pid != profile_id:
            continue
        gpu = gpus[index]
        if mig_placements.slices(start, gpu.profiles[pid].size) <= gpu.free:
            return index, start
    return None


def run(requests, gpu_specs, scheduler):
    """[(request index, GPU index, start)] of the granted requests."""
    gpus = [Gpu(model, profiles) for model, profiles in gpu_specs]
    devices = (devices_by_name if scheduler == 'dra-by-name'
               else published_devices)(gpus)
    holding, granted = [], []
    for number, (arrive, depart, pid) in enumerate(requests):
        while holding and holding[0][0] <= arrive:
            _, index, start, held = heapq.heappop(holding)
            gpus[index].give(gpus[index].profiles[held], start)
        if scheduler == 'placement':
            choice = placement_choice(gpus, pid)
        else:
            if scheduler == 'dra':      # republished as instances change
                devices = published_devices(gpus, now=True)
            choice = dra_choice(gpus, pid, devices)
        if choice is None:
            continue
        index, start = choice
        gpus[index].take(gpus[index].profiles[pid], start)
        heapq.heappush(holding, (depart, index, start, pid))
        granted.append((number, index, start))
    return granted


def by_profile(requests, granted):
    """{profile id: grants of it} of ``granted`` [(request index, ...)],
    every profile asked for counted (0 when none was granted)."""
    counts = {pid: 0 for _a, _d, pid in requests}
    for number, *_rest in granted:
        counts[requests[number][2]] += 1
    return counts


def double_allocations(requests, gpu_specs, granted):
    """Grants at a start -lgipp does not allow, or on slices another
    instance on the same GPU held at that time."""
    bad = 0
    held = {}       # (gpu, slice) -> departure of its holder
    for number, index, start in sorted(granted):
        arrive, depart, pid = requests[number]
        profile = gpu_specs[index][1].get(pid)
        if profile is None or start not in profile.starts:
            bad += 1
            continue
        for s in mig_placements.slices(start, profile.size):
            if held.get((index, s), 0) > arrive:
                bad += 1
                break
        for s in mig_placements.slices(start, profile.size):
            held[(index, s)] = depart
    return bad


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--requests', type=int, default=1000)
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--gpus', default='a100_40gb:2,h100_80gb:2')
    parser.add_argument('--mean-gap', type=float, default=1.0)
    parser.add_argument('--mean-hold', type=float, default=12.0)
    parser.add_argument('--time-limit', type=float, default=120.0)
    parser.add_argument('--output', help='write the JSON result here')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    requests = trace(args)
    gpus = fleet(args.gpus)
    result = {'bench': 'mig_pack', 'requests': len(requests),
              'gpus': args.gpus, 'seed': args.seed,
              'mean_gap': args.mean_gap, 'mean_hold': args.mean_hold}
    best = mig_optimum.solve(requests, gpus, args.time_limit)
    schedule = best.pop('schedule')
    result['optimum'] = best
    if schedule is not None:
        best['by_profile'] = by_profile(requests, schedule)
        best['double_allocations'] = double_allocations(requests, gpus,
                                                        schedule)
    for scheduler in SCHEDULERS:
        granted = run(requests, gpus, scheduler)
        result[scheduler] = {
            'accepted': len(granted),
            'by_profile': by_profile(requests, granted),
            'double_allocations': double_allocations(requests, gpus,
                                                     granted),
            'ratio': round(len(granted) / best['bound'], 4)}
        print('%-14s accepted %4d of %d, %.1f%% of the optimum%s, '
              '%d double allocations' % (
                  scheduler, len(granted), len(requests),
                  100.0 * len(granted) / best['bound'],
                  '' if best['exact'] else ' bound',
                  result[scheduler]['double_allocations']))
    print('optimum        %s %d%s (%s, %.1f s)' % (
        'exactly' if best['exact'] else 'at most', best['bound'],
        '' if best['exact'] or best['found'] is None else
        ', at least %d (a schedule found)' % best['found'],
        best['status'], best['seconds']))
    print('by profile     (id: asked, placement / dra / the solver\'s '
          'schedule)  %s' % ', '.join(
              '%d: %d, %d / %d / %s' % (
                  pid, asked, result['placement']['by_profile'][pid],
                  result['dra']['by_profile'][pid],
                  best.get('by_profile', {}).get(pid, '-'))
              for pid, asked in sorted(collections.Counter(
                  pid for _a, _d, pid in requests).items())))
    common.emit(result, args.output)
    return result


if __name__ == '__main__':
    main()
