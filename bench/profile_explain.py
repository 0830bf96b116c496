"""A device profile's explain at fleet size, against its 200 ms limit.

    .venv/bin/python -m bench.profile_explain [--hosts 1000] [--runs 10]
        [--trials 3] [--fleet cards|oracle] [--baseline CHECKOUT]
        [--output explain.json]

One SQLite file holds ``--hosts`` hosts of 8 cards each (bench/seed.py:
one region, one attach handle each), half of the cards' ARQs Bound to
an instance, with every other cause present too: a card in maintenance
every 7th, an unhealthy one every 11th, a region waiting for its wipe
every 13th, an agent down every 17th host. Three profiles: one served
(FPGA), one blocked for a transient cause (FPGA whose region is held),
one blocked for a permanent one (a trait no card has). Each explain is
timed as the API runs it, the one read transaction
(db/explain.snapshot) and the pure funnel (placement/explain.explain),
and reported with its parts: per profile the median and p95 of
``--runs`` explains in each of ``--trials`` child processes, against the
issue's limit of 200 ms per explain at 1,000 hosts.

``--fleet oracle``: instead, the fleet of the explain's oracle test
(tests/unit/placement/explain_fleet.py: cards of one or two regions,
two of them behind one PF where a sibling is held, every cause drawn
per region) written into the file as the agents and binds would have
left it, and each of its request groups (``explain_fleet.PROFILES``,
one blocked at each step of the funnel, two served) a profile.

``--baseline``: a checkout of older code (``git worktree add /tmp/base
<commit>``) explains the same file in child processes alternated with
this tree's (bench/common.run_in_tree), so that both share the
machine's moments; each answer's digest must be the same in both.
"""
import argparse
import hashlib
import inspect
import json
import os
import shutil
import statistics
import tempfile
import time

from bench import common
from bench import seed

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIMIT_MS = 200
PROFILES = {
    'served': [{'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL':
                'required'}],
    'held': [{'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required',
              'trait:CUSTOM_FPGA_REGION_HELD': 'required'}],
    'never': [{'resources:FPGA': '1', 'trait:CUSTOM_NOPE': 'required'}],
}


def _causes(url, cards):
    """The other causes of the module docstring, on the seeded rows."""
    import sqlalchemy as sa

    from cyborg_lite.db import models
    from cyborg_lite.db.sql import session
    hosts = sorted({seed.host_of(i) for i in range(cards)})
    with session.writer(url) as s:
        s.execute(sa.update(models.Device).where(
            models.Device.id % 7 == 0).values(status='maintaining'))
        s.execute(sa.update(models.Device).where(
            models.Device.id % 11 == 0).values(health='unhealthy'))
        s.execute(sa.update(models.Deployable).where(
            models.Deployable.id % 13 == 0).values(
                device_state='pending_cleaning'))
        # The held profile's region type: only on bound cards.
        s.execute(sa.update(models.Deployable).where(
            models.Deployable.id % 2 == 1).values(region_type='held'))
        now = models.utcnow()
        s.execute(sa.insert(models.Agent), [
            {'hostname': host, 'state': 'down' if n % 17 == 0 else 'up',
             'heartbeat_at': now, 'created_at': now}
            for n, host in enumerate(hosts)])
        for name, groups in PROFILES.items():
            s.add(models.DeviceProfile(
                uuid=seed._uuid('explain', len(name)), name=name,
                profile_json=json.dumps(groups)))


def _oracle_profiles():
    from tests.unit.placement import explain_fleet
    return {'oracle-%02d-%s' % (i, blocking or 'served'): [group]
            for i, (group, _images, blocking)
            in enumerate(explain_fleet.PROFILES)}


def profiles_of(fleet):
    """{name: request groups} of the profiles explained over ``fleet``."""
    return _oracle_profiles() if fleet == 'oracle' else PROFILES


def _write_oracle(url, hosts):
    """The oracle's fleet of ``hosts`` hosts and its profiles."""
    from cyborg_lite.db import models
    from cyborg_lite.db.sql import session
    from tests.unit.placement import explain_fleet
    fleet = explain_fleet.fleet(explain_fleet.fleet_spec(hosts))
    with session.core_writer(url) as conn:
        explain_fleet.write(fleet, conn)
    with session.writer(url) as s:
        for n, (name, groups) in enumerate(_oracle_profiles().items()):
            s.add(models.DeviceProfile(
                uuid=seed._uuid('explain-oracle', n), name=name,
                profile_json=json.dumps(groups)))


def prepare(workdir, hosts, fleet='cards'):
    from cyborg_lite.common import config
    from cyborg_lite.conf import CONF
    from cyborg_lite.db import migration
    url = 'sqlite:///' + os.path.join(workdir, 'explain.sqlite')
    config.parse_args([], default_config_files=[])
    common.quiet()
    CONF.set_override('connection', url, group='database')
    migration.upgrade()
    if fleet == 'oracle':
        _write_oracle(url, hosts)
        return url
    cards = hosts * seed.CARDS_PER_HOST
    seed.seed_ours(url, cards)
    seed.seed_ours_arqs(url, cards, 'bench-project')
    _causes(url, cards)
    return url


def explain_once(name):
    """(read ms, funnel ms, the answer's digest, its blocking steps). The
    read is the one transaction's first statements (db/explain.snapshot
    up to the funnel); the funnel, with the few rows it reads back for
    what it shows. An older tree (a snapshot without ``then``) reads
    everything first."""
    from cyborg_lite.db import explain as explain_db
    from cyborg_lite.db.sql import pagination
    from cyborg_lite.placement import explain
    marks = [time.perf_counter()]

    def funnel(snap):
        marks.append(time.perf_counter())
        return explain.explain(
            snap.groups, snap.fleet, getattr(snap, 'holders', None),
            explain.Images(snap.bitstream_region_types,
                           snap.function_region_types))
    if 'then' in inspect.signature(explain_db.snapshot).parameters:
        groups = explain_db.snapshot(pagination.ALL, name, None, funnel)
    else:
        groups = funnel(explain_db.snapshot(pagination.ALL, name))
    marks.append(time.perf_counter())
    digest = hashlib.sha256(json.dumps(groups, sort_keys=True).encode())
    return ((marks[1] - marks[0]) * 1000, (marks[2] - marks[1]) * 1000,
            digest.hexdigest()[:16],
            [(g['blocking'] or {}).get('step') for g in groups])


def child(args):
    """One trial: ``args.runs`` explains of each profile over the file
    ``args.db``, with the code this process imported."""
    from cyborg_lite.common import config
    from cyborg_lite.conf import CONF
    config.parse_args([], default_config_files=[])
    common.quiet()
    CONF.set_override('connection', 'sqlite:///' + args.db,
                      group='database')
    profiles = {}
    for name in profiles_of(args.fleet):
        explain_once(name)      # warm: statements compiled, pool open
        timings = [explain_once(name) for _ in range(args.runs)]
        profiles[name] = {
            'read_ms': [round(r, 2) for r, _f, _d, _b in timings],
            'funnel_ms': [round(f, 2) for _r, f, _d, _b in timings],
            'digest': timings[0][2], 'blocking': timings[0][3]}
    import cyborg_lite
    return {'root': os.path.dirname(os.path.dirname(cyborg_lite.__file__)),
            'profiles': profiles}


def _p95(values):
    return sorted(values)[max(0, -(-len(values) * 95 // 100) - 1)]


def summary(trials):
    """Per profile, the figures of every explain of ``trials`` (child
    results of one tree) together."""
    report = {}
    for name in trials[0]['profiles']:
        entries = [t['profiles'][name] for t in trials]
        read = [r for e in entries for r in e['read_ms']]
        funnel = [f for e in entries for f in e['funnel_ms']]
        total = [r + f for r, f in zip(read, funnel)]
        report[name] = {
            'blocking': entries[0]['blocking'],
            'digest': entries[0]['digest'],
            'explains': len(total),
            'read_ms_median': round(statistics.median(read), 1),
            'funnel_ms_median': round(statistics.median(funnel), 1),
            'total_ms_median': round(statistics.median(total), 1),
            'total_ms_p95': round(_p95(total), 1),
            'total_ms_max': round(max(total), 1),
            'limit_ms': LIMIT_MS,
            'within_limit': statistics.median(total) <= LIMIT_MS}
    return report


def _table(trees):
    for tree, report in trees.items():
        for name, entry in report.items():
            common.log('%-8s %-7s read %7.1f funnel %7.1f median %7.1f '
                       'p95 %7.1f ms (limit %d)' % (
                           tree, name, entry['read_ms_median'],
                           entry['funnel_ms_median'],
                           entry['total_ms_median'], entry['total_ms_p95'],
                           LIMIT_MS))


def run(args):
    machine = common.machine()      # the load before the first explain
    workdir = tempfile.mkdtemp(prefix='bench-explain-')
    try:
        prepare(workdir, args.hosts, args.fleet)
        db = os.path.join(workdir, 'explain.sqlite')
        trees = {'this': HERE}
        if args.baseline:
            trees['baseline'] = os.path.abspath(args.baseline)
        script = os.path.join(HERE, 'bench', 'profile_explain.py')
        trials = {tree: [] for tree in trees}
        for _ in range(args.trials):
            for tree, root in trees.items():
                trials[tree].append(common.run_in_tree(
                    root, script, ['--db', db, '--runs', str(args.runs),
                                   '--fleet', args.fleet]))
        reports = {tree: summary(found) for tree, found in trials.items()}
        _table(reports)
        result = {'bench': 'profile_explain', 'machine': machine,
                  'params': {'hosts': args.hosts, 'runs': args.runs,
                             'trials': args.trials, 'fleet': args.fleet,
                             'cards_per_host': seed.CARDS_PER_HOST,
                             'baseline': trees.get('baseline')},
                  'profiles': reports['this']}
        if args.baseline:
            result['baseline_profiles'] = reports['baseline']
            result['same_answers'] = all(
                reports['this'][n]['digest'] ==
                reports['baseline'][n]['digest']
                for n in reports['this'])
        result['machine']['loadavg_at_end'] = [
            round(x, 2) for x in os.getloadavg()]
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv=None):
    parser = common.tree_ab_parser(__doc__.split('\n')[0], HERE)
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--runs', type=int, default=10,
                        help='explains of each profile in a trial')
    parser.add_argument('--trials', type=int, default=3,
                        help='child processes of each tree, alternated')
    parser.add_argument('--fleet', choices=('cards', 'oracle'),
                        default='cards',
                        help='the seeded one-region cards, or the '
                             "explain oracle's fleet")
    parser.add_argument('--db', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return
    common.emit(run(args), args.output)


if __name__ == '__main__':
    main()
