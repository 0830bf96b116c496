"""Warm placement on a request trace: reprograms and request-to-ready.

    .venv/bin/python -m bench.program_trace [--requests 200]
        [--regions 8] [--bitstreams 3] [--seeds 43[,1,...]]
        [--program-seconds 20] [--default-gap 4] [--heavy-gap 3]
        [--mean-hold 10] [--output F]

A simulation on modelled time (nothing sleeps): ``--regions`` sibling
regions of one type, all blank at first; ``--requests`` requests, each
for one of ``--bitstreams`` bitstreams (weights 5:3:1, then 1 each;
seeded), arriving with exponential gaps and holding their region for an
exponential time (mean ``--mean-hold`` s) once it is ready. Two loads,
in one run: mean gaps ``--default-gap`` and ``--heavy-gap`` s. A
request takes a free region at once, or waits in arrival order for one
to be freed; a region that runs another bitstream (or none) is
programmed first, taking ``--program-seconds``. The choices:

- ``now``: what a bind chooses today, inventory/views.choose_member on
  views of the regions (busy ones hold their attach handle), in the
  order of inventory/warm.preference: a free one already running the
  bitstream, else the one asked for least recently, else by name;
- ``first_free``: the previous choice, the first free region by name;
- ``optimum``: offline, knowing the whole trace (Belady on the free
  regions): a free region running the bitstream, else the free one
  whose bitstream is next asked for latest. Without holds (one request
  at a time) this is the classical optimum of the reprogram count. With
  holds, several regions and a queue it is a feasible offline schedule,
  so an upper bound of the optimum, NOT a lower bound: its evictions
  change when regions are freed, and an online choice can do better
  (seed 1 under heavy load: ``now`` 63, ``optimum`` 66). The ratios
  printed are to it, a reference, not to a proven optimum;
- ``now_wait`` and ``optimum_wait``: the same choices, but a request
  that no free region serves warm waits for a busy region running its
  bitstream when inventory/warm.worth_waiting says so (the mean of the
  holds ended so far is shorter than programming; one waiting request
  per busy region), passed over meanwhile by the requests behind it.
  The ARQ bind waits so (conductor/bind_wait.py) where a provider
  offers several regions of one card.
  With waiting allowed any count down to one programming per bitstream
  can be bought with waiting, so no reprogram count is an optimum
  without a bound on the wait.

Per load it prints each choice's reprogram count (summed over
``--seeds``), its ratio to its offline reference, and p50/p95 of
request-to-ready (queue wait plus programming, over every request of
every seed), in modelled seconds.
"""
import argparse
import collections
import heapq
import random
import sys

from bench import common
from cyborg_lite.inventory import views
from cyborg_lite.inventory import warm


def trace(args):
    """[(arrival s, bitstream index, hold s)], seeded."""
    rng = random.Random(args.seed)
    weights = [max(1, 5 - 2 * i) for i in range(args.bitstreams)]
    now, requests = 0.0, []
    for _ in range(args.requests):
        now += rng.expovariate(1.0 / args.mean_gap)
        requests.append((now, rng.choices(range(args.bitstreams),
                                          weights)[0],
                         rng.expovariate(1.0 / args.mean_hold)))
    return requests


def _view(regions, busy):
    deployables = tuple(views.DeployableView(
        uuid='r%d' % i, name='region%d' % i, region_type='t',
        function_id=None if f is None else 'f%d' % f,
        attach_handles=(views.AttachHandleView(
            uuid='h%d' % i, attach_type='PCI', attach_info={},
            in_use=i in busy),))
        for i, f in enumerate(regions))
    return views.DeviceView(uuid='card', type='FPGA', vendor='0x8086',
                            identity='0000:5e:00.0', deployables=deployables)


def choose_now(state, wanted, index):
    device = _view(state['regions'], state['busy'])
    runs = 'f%d' % wanted

    def asked_at(dep):
        # NOTE: as conductor/bind.py: a region running what is asked for
        # loses nothing; the others by when they were last asked for.
        return None if dep.function_id == runs else \
            state['asked'].get(dep.name)
    chosen, _why = views.choose_member(
        device, device.deployables, lambda dep: None,
        lambda dep: dep.function_id == runs, asked_at)
    return int(chosen.name[len('region'):])


def choose_first_free(state, wanted, index):
    return min(set(range(len(state['regions']))) - state['busy'])


def choose_optimum(state, wanted, index):
    free = sorted(set(range(len(state['regions']))) - state['busy'])
    for region in free:
        if state['regions'][region] == wanted:
            return region
    later = state['requests'][index + 1:]

    def next_use(region):
        function = state['regions'][region]
        return next((n for n, (_t, f, _h) in enumerate(later)
                     if f == function), len(later) + 1)
    return max(free, key=lambda r: (next_use(r), -r))


def wait_for_warm(state, wanted, waiting, program_seconds):
    """inventory/warm.worth_waiting on what a service knows online: the
    busy regions running ``wanted``, the requests already waiting for
    one (``waiting``), the mean of the holds ended so far."""
    regions = state['regions']
    if any(regions[r] == wanted for r in range(len(regions))
           if r not in state['busy']):
        return False
    holds = state['holds']
    return warm.worth_waiting(
        sum(1 for r in state['busy'] if regions[r] == wanted),
        waiting[wanted], sum(holds) / len(holds) if holds else None,
        program_seconds)


# name: (region choice, whether a request may wait for a warm region).
CHOICES = {'now': (choose_now, False),
           'first_free': (choose_first_free, False),
           'optimum': (choose_optimum, False),
           'now_wait': (choose_now, True),
           'optimum_wait': (choose_optimum, True)}
# Each choice's offline reference (the ratio printed).
REFERENCE = {'now': 'optimum', 'first_free': 'optimum',
             'now_wait': 'optimum_wait'}
# --mean-gap of each load (a trace's only difference).
LOADS = (('default', 4.0), ('heavy', 3.0))


def simulate(requests, regions, program_seconds, choose, wait=False):
    """(reprogram count, [request-to-ready s]) of ``requests`` served by
    ``regions`` regions with ``choose``; one event at a time: an arrival
    joins the queue, a hold's end frees its region, and the queue is
    served in arrival order while a region is free. With ``wait``, a
    request that wait_for_warm keeps waiting is passed over (it stays
    first in line for the region it waits for)."""
    state = {'regions': [None] * regions, 'busy': set(), 'asked': {},
             'requests': requests, 'holds': []}
    queue, frees = collections.deque(), []      # frees: (time, region)
    ready_after = [None] * len(requests)
    held_from = {}
    reprograms, arrived = 0, 0
    while arrived < len(requests) or queue:
        next_arrival = requests[arrived][0] if arrived < len(requests) \
            else float('inf')
        if frees and frees[0][0] <= next_arrival:
            now, region = heapq.heappop(frees)
            state['busy'].discard(region)
            state['holds'].append(now - held_from.pop(region))
        else:
            now = next_arrival
            queue.append(arrived)
            arrived += 1
        passed, waiting = collections.deque(), collections.Counter()
        while queue and len(state['busy']) < regions:
            index = queue.popleft()
            arrival, wanted, hold = requests[index]
            if wait and wait_for_warm(state, wanted, waiting,
                                      program_seconds):
                waiting[wanted] += 1
                passed.append(index)
                continue
            region = choose(state, wanted, index)
            ready = now
            if state['regions'][region] != wanted:
                reprograms += 1
                ready += program_seconds
                state['regions'][region] = wanted
            state['busy'].add(region)
            state['asked']['region%d' % region] = now
            ready_after[index] = ready - arrival
            held_from[region] = ready
            heapq.heappush(frees, (ready + hold, region))
        queue.extendleft(reversed(passed))
    return reprograms, ready_after


def run_load(args, mean_gap):
    """{choice: its row} over every seed of ``args`` at ``mean_gap``:
    reprograms summed, request-to-ready percentiles over all requests."""
    totals = {name: [0, []] for name in CHOICES}
    for seed in args.seeds:
        requests = trace(argparse.Namespace(
            seed=seed, requests=args.requests, bitstreams=args.bitstreams,
            mean_gap=mean_gap, mean_hold=args.mean_hold))
        for name, (choose, wait) in CHOICES.items():
            reprograms, ready = simulate(requests, args.regions,
                                         args.program_seconds, choose, wait)
            totals[name][0] += reprograms
            totals[name][1].extend(ready)
    rows = {name: {'reprograms': reprograms,
                   'ready_p50_s': round(common.percentile(ready, 50), 2),
                   'ready_p95_s': round(common.percentile(ready, 95), 2),
                   'ready_max_s': round(max(ready), 2)}
            for name, (reprograms, ready) in totals.items()}
    for name, reference in REFERENCE.items():
        bound = rows[reference]['reprograms']
        rows[name]['over_' + reference] = round(
            rows[name]['reprograms'] / bound, 3) if bound else None
    return rows


def _seeds(text):
    return [int(seed) for seed in text.split(',')]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--requests', type=int, default=200)
    parser.add_argument('--regions', type=int, default=8)
    parser.add_argument('--bitstreams', type=int, default=3)
    parser.add_argument('--seeds', type=_seeds, default=[43])
    parser.add_argument('--program-seconds', type=float, default=20.0)
    parser.add_argument('--default-gap', type=float, default=LOADS[0][1])
    parser.add_argument('--heavy-gap', type=float, default=LOADS[1][1])
    parser.add_argument('--mean-hold', type=float, default=10.0)
    parser.add_argument('--output')
    args = parser.parse_args(argv)
    if min(args.requests, args.regions, args.bitstreams) < 1:
        parser.error('--requests, --regions and --bitstreams must be >= 1')
    loads = {}
    for load, gap in (('default', args.default_gap),
                      ('heavy', args.heavy_gap)):
        loads[load] = {'mean_gap_s': gap, 'choices': run_load(args, gap)}
        for name, row in loads[load]['choices'].items():
            ratio = [v for k, v in row.items() if k.startswith('over_')]
            common.log('%-7s %-12s reprograms %4d%s  ready p50 %6.2f s  '
                       'p95 %6.2f s' % (
                           load, name, row['reprograms'],
                           ' (x%.2f)' % ratio[0] if ratio and ratio[0]
                           else '        ',
                           row['ready_p50_s'], row['ready_p95_s']))
    common.emit({'bench': 'program_trace', 'params': vars(args),
                 'loads': loads, 'machine': common.machine()}, args.output)
    return 0


if __name__ == '__main__':
    sys.exit(main())
