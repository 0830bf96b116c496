"""Warm placement on a request trace: reprograms and request-to-ready.

    .venv/bin/python -m bench.program_trace [--requests 200]
        [--regions 8] [--bitstreams 3] [--seed 43] [--program-seconds 20]
        [--mean-gap 4] [--mean-hold 10] [--output F]

A simulation on modelled time (nothing sleeps): ``--regions`` sibling
regions of one type, all blank at first; ``--requests`` requests, each
for one of ``--bitstreams`` bitstreams (weights 5:3:1, then 1 each;
seeded), arriving with exponential gaps (mean ``--mean-gap`` s) and
holding their region for an exponential time (mean ``--mean-hold`` s)
once it is ready. A request takes a free region at once, or waits in
arrival order for one to be freed; a region that runs another bitstream
(or none) is programmed first, taking ``--program-seconds``. Three
choices of region:

- ``now``: what a bind chooses today, inventory/views.choose_member on
  views of the regions (busy ones hold their attach handle): a free one
  already running the bitstream, else the one asked for least recently
  (conductor/bind.py), else by name;
- ``first_free``: the previous choice, the first free region by name;
- ``optimum``: computed offline, knowing the whole trace (Belady): a free
  region running the bitstream, else the free one whose bitstream is
  next asked for latest (never: first). With no holds this is the
  classical optimum of the reprogram count; with holds it is the offline
  bound the others are measured against.

It prints each choice's reprogram count and p50/p95 of request-to-ready
(queue wait plus programming), in modelled seconds.
"""
import argparse
import collections
import heapq
import random
import sys

from bench import common
from cyborg_lite.inventory import views


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


CHOICES = {'now': choose_now, 'first_free': choose_first_free,
           'optimum': choose_optimum}


def simulate(requests, regions, program_seconds, choose):
    """(reprogram count, [request-to-ready s]) of ``requests`` served by
    ``regions`` regions with ``choose``; one event at a time: an arrival
    joins the queue, a hold's end frees its region, and the queue is
    served in arrival order while a region is free."""
    state = {'regions': [None] * regions, 'busy': set(), 'asked': {},
             'requests': requests}
    queue, frees = collections.deque(), []      # frees: (time, region)
    ready_after = [None] * len(requests)
    reprograms, arrived = 0, 0
    while arrived < len(requests) or queue:
        next_arrival = requests[arrived][0] if arrived < len(requests) \
            else float('inf')
        if frees and frees[0][0] <= next_arrival:
            now, region = heapq.heappop(frees)
            state['busy'].discard(region)
        else:
            now = next_arrival
            queue.append(arrived)
            arrived += 1
        while queue and len(state['busy']) < regions:
            index = queue.popleft()
            arrival, wanted, hold = requests[index]
            region = choose(state, wanted, index)
            ready = now
            if state['regions'][region] != wanted:
                reprograms += 1
                ready += program_seconds
                state['regions'][region] = wanted
            state['busy'].add(region)
            state['asked']['region%d' % region] = now
            ready_after[index] = ready - arrival
            heapq.heappush(frees, (ready + hold, region))
    return reprograms, ready_after


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--requests', type=int, default=200)
    parser.add_argument('--regions', type=int, default=8)
    parser.add_argument('--bitstreams', type=int, default=3)
    parser.add_argument('--seed', type=int, default=43)
    parser.add_argument('--program-seconds', type=float, default=20.0)
    parser.add_argument('--mean-gap', type=float, default=4.0)
    parser.add_argument('--mean-hold', type=float, default=10.0)
    parser.add_argument('--output')
    args = parser.parse_args(argv)
    if min(args.requests, args.regions, args.bitstreams) < 1:
        parser.error('--requests, --regions and --bitstreams must be >= 1')
    requests = trace(args)
    results = {}
    for name, choose in CHOICES.items():
        reprograms, ready = simulate(requests, args.regions,
                                     args.program_seconds, choose)
        results[name] = {
            'reprograms': reprograms,
            'ready_p50_s': round(common.percentile(ready, 50), 2),
            'ready_p95_s': round(common.percentile(ready, 95), 2),
            'ready_max_s': round(max(ready), 2)}
    optimum = results['optimum']['reprograms']
    for name in ('now', 'first_free'):
        results[name]['over_optimum'] = round(
            results[name]['reprograms'] / optimum, 3) if optimum else None
    result = {'bench': 'program_trace', 'params': vars(args),
              'choices': results, 'machine': common.machine()}
    for name, row in results.items():
        common.log('%-10s reprograms %4d  ready p50 %7.2f s  p95 %7.2f s'
                   % (name, row['reprograms'], row['ready_p50_s'],
                      row['ready_p95_s']))
    common.emit(result, args.output)
    return 0


if __name__ == '__main__':
    sys.exit(main())
