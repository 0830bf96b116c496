"""Reports at scale: a simulated fleet against one conductor + real Placement.

    .venv/bin/python -m bench.fleet --hosts 1000 [--cards 8] [--regions 2]
        [--change-pct 1] [--candidates 50] [--output fleet.json]

A report generator builds, for each of ``--hosts`` hosts, the driver
report an agent with ``--cards`` FPGA cards of ``--regions`` regions each
sends (``DeviceRecord`` dicts, as drivers/base.py defines them, shaped like
the fake driver's), and hands every host's report to the conductor's RPC
endpoint method (``ConductorManager.report``, the code the RPC server
calls) whose after-report hook is the conductor's ``Publisher.publish_host``
with the real ``PlacementSink`` against the real openstack-placement
(``PlacementServer``, its own process and SQLite or PostgreSQL database).
One conductor; ``--workers`` reports applied at once.

Rounds, each over every host:

- ``first``: the first full report (every row and provider created);
- ``unchanged``: the same reports again (target: no DB write, no
  Placement write);
- ``change``: ``--change-pct`` percent of all regions report another
  loaded function (the traits of those region providers change): one
  never seen before, or with ``--functions N`` another of the fleet's N
  (see ``Fleet``);
- ``unchanged_again``: the same reports as ``change`` again.
- with ``--ab-rounds N``, N more ``change`` rounds, alternately with and
  without ``[conductor]trust_own_publish``: the ratio of their medians
  says what writing a change without listing the host's tree saves,
  measured in one run.

Per round: wall time, Placement requests by method (the counting
``PlacementClient``), SQL statements by kind (a SQLAlchemy
``before_cursor_execute`` listener on the conductor's engine), and the
CPU seconds of each process (``cpu_s``, bench/cpu.py: this process, the
conductor; Placement and its workers; Placement's PostgreSQL; the whole
machine), which say whose work a round waits for.

Then ``GET /allocation_candidates`` for the scheduler test's profile
(FPGA:1 + CUSTOM_FPGA_LOCAL_MEMORY_MB:4096 + required region trait),
``--candidates`` times with no limit and with Nova's default limit=1000:
Placement's cost over the whole tree, reported for operators.
"""
import argparse
import functools
import os
import shutil
import statistics
import sys
import tempfile
import time

import requests

from bench import common
from bench import cpu
from bench import fleet_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def region_rp_uuid(host, card, region):
    from cyborg_lite.placement import naming
    return naming.rp_uuid(naming.deployable_rp_name(
        fleet_model.hostname(host), '0000:%02x:00.0' % (0x5e + card),
        'region%d' % region, 'FPGA'))


def verify_functions(placement_url, fleet, keys):
    """Regions (of ``keys``) whose provider lacks its function's trait."""
    http = requests.Session()
    wrong = []
    for host, card, region in keys:
        url = '%s/resource_providers/%s/traits' % (
            placement_url, region_rp_uuid(host, card, region))
        resp = http.get(url, headers=common.PLACEMENT_HEADERS)
        resp.raise_for_status()
        want = 'CUSTOM_FUNCTION_ID_' + fleet.functions[
            (host, card, region)].upper()
        if want not in resp.json()['traits']:
            wrong.append('%s card %d region %d'
                         % (fleet_model.hostname(host), card, region))
    return wrong


def candidates_params():
    """The scheduler test's profile as Nova's granular query."""
    return {'resources1': 'FPGA:1,CUSTOM_FPGA_LOCAL_MEMORY_MB:%d'
                          % fleet_model.REGION_MEMORY_MB,
            'required1': 'CUSTOM_FPGA_REGION_%s'
                         % fleet_model.REGION_TYPE.upper()}


def measure_candidates(placement_url, count, limit=None):
    params = candidates_params()
    if limit:
        params['limit'] = str(limit)
    http = requests.Session()
    latencies, returned = [], None
    with common.Timer() as t:
        for _ in range(count):
            start = time.perf_counter()
            resp = http.get(placement_url + '/allocation_candidates',
                            params=params,
                            headers=common.PLACEMENT_HEADERS)
            latencies.append(time.perf_counter() - start)
            resp.raise_for_status()
            returned = len(resp.json()['allocation_requests'])
    summary = common.latency_summary(latencies, t.elapsed)
    summary.update(limit=limit, candidates_returned=returned)
    common.log('allocation_candidates limit=%s: %d returned, p50 %.1f ms, '
               'p99 %.1f ms' % (limit, returned, summary['p50_ms'],
                                summary['p99_ms']))
    return summary


def trust_own_publish_ab(conductor, fleet, hosts, pct, rounds):
    """Change rounds alternately with and without [conductor]
    trust_own_publish (the conductor that served a host last writes its
    change without listing the tree): each round's wall time and the
    ratio of the medians, read tree / trusted."""
    if not rounds:
        return None
    walls = {'trusted': [], 'read_tree': []}
    requests_of = {}
    for i in range(rounds):
        variant = 'trusted' if i % 2 == 0 else 'read_tree'
        conductor.trust(variant == 'trusted')
        fleet.change(pct)
        result = conductor.round('change_%s' % variant, fleet, hosts)
        walls[variant].append(result['wall_s'])
        requests_of[variant] = result['placement']['requests']
    conductor.trust(True)
    medians = {k: statistics.median(v) for k, v in walls.items() if v}
    summary = {'wall_s': walls, 'median_s': medians,
               'placement_requests': requests_of}
    if len(medians) == 2:
        summary['read_tree_over_trusted'] = round(
            medians['read_tree'] / medians['trusted'], 2)
    common.log('trust_own_publish A/B: %s' % summary)
    return summary


def count_providers(placement_url):
    resp = requests.get(placement_url + '/resource_providers',
                        headers=common.PLACEMENT_HEADERS)
    resp.raise_for_status()
    return len(resp.json()['resource_providers'])


def start_placement(args, state_dir):
    """Placement as ``args`` asks: (server, PostgresServer or None)."""
    from cyborg_lite.cmd import placement_server
    pg, db_url = None, None
    if args.placement_db == 'postgresql':
        sys.path.insert(0, ROOT)
        from tests import servers
        pg = servers.PostgresServer().start()
        db_url = pg.create_database('placement')
    placement = placement_server.PlacementServer(
        basedir=os.path.join(state_dir, 'placement'),
        policy=None if args.no_reshape else
        placement_server.ADMIN_RESHAPES, db_url=db_url,
        workers=args.placement_workers)
    os.makedirs(placement.basedir, exist_ok=True)
    try:
        placement.start()
    except BaseException:
        if pg is not None:
            pg.stop()
        raise
    return placement, pg


def cpu_parties(placement, pg, conductor_pg=None):
    """Placement's processes (gunicorn's workers too), its PostgreSQL's and
    the conductor's PostgreSQL's, if any; this process is the conductor
    (bench/fleet_processes.py adds its processes)."""
    parties = {'placement': lambda: cpu.children(placement.pid)}
    for name, server in (('placement_db', pg), ('conductor_db',
                                                 conductor_pg)):
        if server is not None:
            parties[name] = functools.partial(cpu.children,
                                              cpu.postmaster(server))
    return cpu.Parties(parties)


def start_conductor_db():
    """The conductor processes' PostgreSQL: (server, URL)."""
    sys.path.insert(0, ROOT)
    from tests import servers
    server = servers.PostgresServer().start()
    return server, server.create_database('cyborg_lite')


def run(args):
    from cyborg_lite.db import migration
    from cyborg_lite.db.sql import session

    state_dir = args.state_dir or tempfile.mkdtemp(prefix='bench-fleet-')
    os.makedirs(state_dir, exist_ok=True)
    placement, pg = start_placement(args, state_dir)
    conductor_pg, conductor = None, None
    try:
        db_url = None
        if args.conductor_processes > 1:
            conductor_pg, db_url = start_conductor_db()
        fleet_model.configure(state_dir, placement.endpoint, db_url=db_url)
        common.quiet()
        migration.upgrade()
        from cyborg_lite.conf import CONF
        fleet = fleet_model.Fleet(args.hosts, args.cards, args.regions,
                                  seed=args.seed, functions=args.functions)
        parties = cpu_parties(placement, pg, conductor_pg)
        if args.conductor_processes > 1:
            from bench import fleet_processes
            session.dispose_all()
            conductor = fleet_processes.ConductorProcesses(
                args.conductor_processes, state_dir, placement.endpoint,
                db_url, args.workers, fleet, args.seed, parties)
        else:
            conductor = fleet_model.Conductor(CONF, workers=args.workers,
                                              parties=parties)
        hosts = list(range(args.hosts))
        rounds = [conductor.round('first', fleet, hosts),
                  conductor.round('unchanged', fleet, hosts)]
        changed = fleet.change(args.change_pct)
        change = conductor.round('change', fleet, hosts)
        # Placement must show every new function (the reporter's provider
        # cache must not have hidden a change).
        wrong = verify_functions(placement.endpoint, fleet, changed)
        change.update(changed_regions=len(changed),
                      changed_hosts=len({h for h, _, _ in changed}),
                      regions_not_in_placement=wrong[:10],
                      regions_verified=len(changed) - len(wrong))
        rounds.append(change)
        rounds.append(conductor.round('unchanged_again', fleet, hosts))
        trust_ab = trust_own_publish_ab(conductor, fleet, hosts,
                                        args.change_pct, args.ab_rounds)
        providers = count_providers(placement.endpoint)
        candidates = []
        if args.candidates:
            candidates = [measure_candidates(placement.endpoint,
                                             args.candidates),
                          measure_candidates(placement.endpoint,
                                             args.candidates, limit=1000)]
        return {
            'bench': 'fleet',
            'machine': common.machine(),
            'params': {'hosts': args.hosts, 'cards': args.cards,
                       'regions_per_card': args.regions,
                       'regions': args.hosts * args.cards * args.regions,
                       'change_pct': args.change_pct,
                       'functions': args.functions,
                       'conductor_processes': args.conductor_processes,
                       'workers': args.workers,
                       'placement_db': args.placement_db,
                       'placement_workers': args.placement_workers,
                       'reshape': not args.no_reshape},
            'rounds': {r['round']: r for r in rounds},
            'placement_providers': providers,
            'expected_providers': args.hosts * (1 + args.cards +
                                                args.cards * args.regions),
            'allocation_candidates': candidates,
            'trust_own_publish_ab': trust_ab,
            'sync_failures': conductor.sync_failures[:10],
        }
    finally:
        if hasattr(conductor, 'stop'):
            conductor.stop()
        session.dispose_all()
        placement.stop()
        for server in (pg, conductor_pg):
            if server is not None:
                server.stop()
        if not args.state_dir and not args.keep:
            shutil.rmtree(state_dir, ignore_errors=True)


def _function_count(text):
    count = int(text)
    if count == 1 or count < 0:
        raise argparse.ArgumentTypeError('0, or at least 2 functions')
    return count


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=100)
    parser.add_argument('--cards', type=int, default=8)
    parser.add_argument('--regions', type=int, default=2)
    parser.add_argument('--change-pct', type=float, default=1.0)
    parser.add_argument('--workers', type=int, default=1,
                        help='reports applied at once (threads)')
    parser.add_argument('--candidates', type=int, default=20,
                        help='allocation_candidates queries per variant '
                             '(0: skip)')
    parser.add_argument('--placement-db', choices=('sqlite', 'postgresql'),
                        default='sqlite')
    parser.add_argument('--placement-workers', type=int, default=0,
                        help='serve Placement with gunicorn and this many '
                             'workers (0: one wsgiref process)')
    parser.add_argument('--no-reshape', action='store_true',
                        help="Placement's default policy: no POST /reshaper "
                             'for the admin token')
    parser.add_argument('--ab-rounds', type=int, default=0,
                        help='then this many more change rounds, '
                             'alternately with and without [conductor]'
                             'trust_own_publish (0: none)')
    parser.add_argument('--conductor-processes', type=int, default=1,
                        help='conductor processes, each with --workers '
                             'threads, on a PostgreSQL of their own '
                             '(bench/fleet_processes.py); more than one '
                             'needs --placement-db postgresql')
    parser.add_argument('--functions', type=_function_count, default=0,
                        help='the fleet has this many bitstreams (>= 2) '
                             'and a change loads another of them; 0: a '
                             'function never seen before each time')
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--state-dir', help='keep DBs here (default: temp)')
    parser.add_argument('--keep', action='store_true',
                        help='keep the temp state dir')
    parser.add_argument('--output', help='also write the JSON here')
    args = parser.parse_args(argv)
    if args.conductor_processes < 1 or (
            args.conductor_processes > 1 and
            args.placement_db != 'postgresql'):
        parser.error('--conductor-processes: 1, or more with '
                     '--placement-db postgresql')
    common.emit(run(args), args.output)


if __name__ == '__main__':
    main()
