"""ResourceSlice sync at scale: what the conductor's Kubernetes sink writes.

    .venv/bin/python -m bench.k8s_slices [--nodes 1000] [--cards 2]
        [--regions 8] [--change-pct 1] [--output F]

Builds ``nodes`` hosts of ``cards`` FPGA cards with ``regions`` regions
each (1,000 × 16 regions by default) and syncs every host through
kubernetes/slice_sync.SliceSync and the official ``kubernetes`` client
against the kube-apiserver stand-in of the tests (on a loopback port; it
keeps resourceVersions and checks every body against the 1.34-1.37
schemas, so its own time is part of what is measured). Rounds:

- ``first``: every pool created;
- ``unchanged``: the same inventory again (the target: no write at all);
- ``changed``: ``change-pct`` % of the regions get a taint (a cleaning
  region), spread over the nodes.

It prints per round the wall time, requests and writes (by method), and
the write count per changed region.
"""
import argparse
import random
import sys

from bench import common
from cyborg_lite.kubernetes import slice_sync
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import inventories

DRIVER = inventories.DRIVER


def _hosts(nodes, cards, regions):
    return ['node-%05d' % i for i in range(nodes)], {
        'node-%05d' % i: inventories.host('node-%05d' % i, cards=cards,
                                          regions=regions)
        for i in range(nodes)}


def _changed(inventory_by_node, pct, cards, regions, seed=7):
    """A copy with ``pct`` % of all regions tainted; how many."""
    pairs = [(node, c, r) for node in sorted(inventory_by_node)
             for c in range(cards) for r in range(regions)]
    count = max(1, len(pairs) * pct // 100)
    picked = random.Random(seed).sample(pairs, count)
    changed = dict(inventory_by_node)
    for node, card, region in picked:
        changed[node] = inventories.change_region(
            changed[node], card, region, unavailable=('cleaning',))
    return changed, count


def _round(server, sync, inventory_by_node):
    before = len(server.requests)
    totals = slice_sync.SyncResult('all')
    with common.Timer() as timer:
        for node in sorted(inventory_by_node):
            result = sync.sync(inventory_by_node[node])
            for field in ('created', 'updated', 'deleted', 'conflicts'):
                setattr(totals, field,
                        getattr(totals, field) + getattr(result, field))
    requests = server.requests[before:]
    by_method = {}
    dry_runs = 0
    for method, path in requests:
        if path.endswith(fake_apiserver.DRY_RUN):
            dry_runs += 1       # the one question about taints: no write
            continue
        by_method[method] = by_method.get(method, 0) + 1
    return {'wall_s': round(timer.elapsed, 3),
            'per_node_ms': round(timer.elapsed * 1000 /
                                 len(inventory_by_node), 2),
            'requests': len(requests),
            'writes': sum(n for m, n in by_method.items() if m != 'GET'),
            'by_method': by_method, 'dry_runs': dry_runs,
            'created': totals.created, 'updated': totals.updated,
            'deleted': totals.deleted, 'conflicts': totals.conflicts}


def run(args):
    nodes, inventory_by_node = _hosts(args.nodes, args.cards, args.regions)
    server = fake_apiserver.FakeKubeApiServer().start()
    client = server.api_client()
    try:
        for node in nodes:
            server.add_node(node)
        sync = slice_sync.SliceSync(client, DRIVER)
        rounds = {'first': _round(server, sync, inventory_by_node),
                  'unchanged': _round(server, sync, inventory_by_node)}
        changed, count = _changed(inventory_by_node, args.change_pct,
                                  args.cards, args.regions)
        rounds['changed'] = _round(server, sync, changed)
        rounds['changed']['changed_regions'] = count
        rounds['changed']['writes_per_changed_region'] = round(
            rounds['changed']['writes'] / count, 3)
        slices = len(server.slices)
    finally:
        client.close()
        server.stop()
    return {'bench': 'k8s_slices', 'machine': common.machine(),
            'params': {'nodes': args.nodes, 'cards': args.cards,
                       'regions_per_card': args.regions,
                       'regions': args.nodes * args.cards * args.regions,
                       'change_pct': args.change_pct},
            'slices': slices, 'rounds': rounds}


def _table(result):
    lines = ['%-10s %9s %9s %8s %8s' % ('round', 'wall s', 'ms/node',
                                        'requests', 'writes')]
    for name, r in result['rounds'].items():
        lines.append('%-10s %9.2f %9.2f %8d %8d' % (
            name, r['wall_s'], r['per_node_ms'], r['requests'],
            r['writes']))
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', type=int, default=1000)
    parser.add_argument('--cards', type=int, default=2)
    parser.add_argument('--regions', type=int, default=8)
    parser.add_argument('--change-pct', type=int, default=1)
    parser.add_argument('--output')
    args = parser.parse_args(argv)
    result = run(args)
    print(_table(result), file=sys.stderr)
    common.emit(result, args.output)
    return 0


if __name__ == '__main__':
    sys.exit(main())
