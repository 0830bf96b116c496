"""What device health costs: an agent scan of 64 regions, and the
conductor's unchanged-report path, this tree against another checkout
(the code before health), alternated in one run.

    git worktree add /tmp/base <commit before health>
    .venv/bin/python -m bench.health_cost --baseline /tmp/base

Each trial is a child process (``--child``) importing cyborg_lite from one
tree: the fake driver with ``--cards`` cards of ``--regions`` regions
(16 x 4 = 64 regions by default) and the agent (agent/manager.py) scanning
it ``--scans`` times, each card's temperature changed before every scan
(a sensor's value moves every scan; with health on it is read and
classified, and must not change the report); then the conductor's report
endpoint (conductor/report.handle_report, SQLite) given the last scan's
report ``--reports`` times more: the unchanged path every periodic full
report takes. Both timed by the child's process CPU clock. The result:
each tree's CPU milliseconds per scan and per unchanged report, their
medians, the ratios this tree / baseline, the database writes of the
unchanged reports (must be 0) and how many distinct reports the scans
made (1: the moving temperature changed none).
"""
import glob
import os
import sys
import tempfile
import time

from bench import common

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = 'bench-host'


def _configure(conf, state, args):
    conf([], project='cyborg_lite', default_config_files=[])
    conf.set_override('state_path', state)
    conf.set_override('transport_url', 'inproc://')
    conf.set_override('connection', 'sqlite:///%s/bench.sqlite' % state,
                      group='database')
    for name, value in (('num_cards', args.cards),
                        ('regions_per_card', args.regions),
                        ('state_dir', os.path.join(state, 'fake'))):
        conf.set_override(name, value, group='fake_driver')


def _heat(state, value):
    """Set every simulated card's temperature (where the tree has one)."""
    for path in glob.glob(os.path.join(state, 'fake', 'sys', 'devices', '*',
                                       '*', 'fpga_region', 'region*',
                                       'dfl-fme.*', 'hwmon', 'hwmon*',
                                       'temp1_input')):
        with open(path, 'w') as f:
            f.write('%d\n' % value)


def _count_writes(engine):
    writes = []

    def before(conn, cursor, statement, *args):
        if statement.lstrip()[:6].upper() in ('INSERT', 'UPDATE', 'DELETE'):
            writes.append(statement)
    import sqlalchemy as sa
    sa.event.listen(engine, 'before_cursor_execute', before)
    return writes


def child(args):
    """One trial in this process, with ``args.root`` first on the path."""
    sys.path.insert(0, args.root)
    import cyborg_lite
    from cyborg_lite.conf import CONF
    state = tempfile.mkdtemp(prefix='bench-health-cost-')
    _configure(CONF, state, args)
    common.quiet()
    from cyborg_lite.agent import manager
    from cyborg_lite.conductor import report
    from cyborg_lite.db import migration
    from cyborg_lite.db.sql import session
    from cyborg_lite.drivers import fake
    migration.upgrade()
    driver = fake.FakeDriver(CONF)
    driver.name = 'fake'
    agent = manager.AgentManager(CONF, host=HOST, drivers=[driver],
                                 conductor_api=object())
    entries = agent.scan()              # builds the tree
    hashes = set()
    start = time.process_time()
    for scan in range(args.scans):
        _heat(state, 40000 + 250 * (scan % 40))   # 40 to 49.75 degrees
        entries = agent.scan()
        hashes.update(manager.entry_hash(e) for e in entries)
    scan_s = time.process_time() - start
    report.handle_report(HOST, entries)             # the rows
    report.handle_report(HOST, entries)             # remembered
    writes = _count_writes(session.get_engine())
    start = time.process_time()
    for _ in range(args.reports):
        report.handle_report(HOST, entries)
    report_s = time.process_time() - start
    return {'root': os.path.dirname(os.path.dirname(cyborg_lite.__file__)),
            'regions': args.cards * args.regions,
            'cpu_ms_per_scan': round(scan_s * 1000 / args.scans, 3),
            'cpu_ms_per_unchanged_report': round(
                report_s * 1000 / args.reports, 3),
            'unchanged_report_writes': len(writes),
            'distinct_reports': len(hashes)}


def _trial(root, args):
    result = common.run_in_tree(
        root, os.path.join(HERE, 'bench', 'health_cost.py'),
        ['--cards', str(args.cards), '--regions', str(args.regions),
         '--scans', str(args.scans), '--reports', str(args.reports)])
    common.log('%-40s %7.2f ms a scan of %d regions (%d distinct), %.2f ms '
               'an unchanged report (%d writes)'
               % (root, result['cpu_ms_per_scan'], result['regions'],
                  result['distinct_reports'],
                  result['cpu_ms_per_unchanged_report'],
                  result['unchanged_report_writes']))
    return result


def run(args):
    trials = common.alternate_trials(HERE, args.baseline, args.trials,
                                     lambda root: _trial(root, args))
    scan = common.trial_medians(trials, 'cpu_ms_per_scan')
    unchanged = common.trial_medians(trials, 'cpu_ms_per_unchanged_report')
    return {
        'bench': 'health_cost',
        'machine': common.machine(),
        'params': {'cards': args.cards, 'regions': args.regions,
                   'scans': args.scans, 'reports': args.reports,
                   'trials': args.trials,
                   'baseline': os.path.abspath(args.baseline)},
        'trials': trials,
        'median_cpu_ms_per_scan': scan,
        'scan_this_over_baseline': common.ratio(scan['this'],
                                                scan['baseline']),
        'median_cpu_ms_per_unchanged_report': unchanged,
        'unchanged_this_over_baseline': common.ratio(unchanged['this'],
                                                     unchanged['baseline']),
    }


def main(argv=None):
    parser = common.tree_ab_parser(__doc__.split('\n')[0], HERE)
    parser.add_argument('--cards', type=int, default=16)
    parser.add_argument('--regions', type=int, default=4)
    parser.add_argument('--scans', type=int, default=50)
    parser.add_argument('--reports', type=int, default=200)
    parser.add_argument('--trials', type=int, default=3,
                        help='trials of each tree, alternated')
    common.tree_ab_main(parser, argv,
                        ('cards', 'regions', 'scans', 'reports', 'trials'),
                        child, run)


if __name__ == '__main__':
    main()
