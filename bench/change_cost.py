"""The conductor's CPU per changed host, this tree against another
checkout, alternated in one run.

A fleet's 1%-changed round is the conductor's Python
(docs/benchmarks-history.md 8.4): each changed host costs a report
applied and a publish to Placement. This measures that cost in
process, for two code trees on the same machine at the same time, so
that a change of the code is told apart from the machine's own drift
(CPU seconds of the same code move by a quarter between runs here)::

    git worktree add /tmp/base <commit>
    .venv/bin/python -m bench.change_cost --baseline /tmp/base

Each trial is a child process (``--child``) importing cyborg_lite and
bench.fleet from one tree: a real Placement (one process, SQLite) and the
conductor's report endpoint with its Placement publisher on a SQLite
database; ``--hosts`` hosts registered, then ``--rounds`` rounds each
loading a known function into about one region in 16 (a changed host has
one or two changed regions, as in the fleet bench's 1% round), and only
the changed hosts' reports (report + publish) timed, by the child's
process CPU clock; then ``--rounds`` rounds of every host's same report
again (the periodic, unchanged ones), timed the same way. Trials
alternate: this tree, the baseline, this tree... The result: each tree's
CPU milliseconds per changed host and per unchanged one, their medians
and the ratios baseline / this tree.
"""
import os
import sys
import tempfile
import time

from bench import common

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child(args):
    """One trial in this process, with ``args.root`` first on the path."""
    sys.path.insert(0, args.root)
    from bench import fleet
    from bench import fleet_model

    state = tempfile.mkdtemp(prefix='bench-change-cost-')

    class Placement:
        placement_db, no_reshape, placement_workers = 'sqlite', False, 0

    placement, _pg = fleet.start_placement(Placement, state)
    try:
        fleet_model.configure(state, placement.endpoint)
        common.quiet()
        from cyborg_lite.db import migration
        migration.upgrade()
        from cyborg_lite.conf import CONF
        hosts = fleet_model.Fleet(args.hosts, 8, 2, functions=16)
        conductor = fleet_model.Conductor(CONF, workers=1)
        everyone = list(range(args.hosts))
        conductor.round('first', hosts, everyone)
        cpu_s, changed_hosts = 0.0, 0
        for _ in range(args.rounds):
            changed = sorted({h for h, _, _ in hosts.change(100.0 / 16)})
            start = time.process_time()
            for host in changed:
                conductor.manager.report(
                    None, fleet_model.hostname(host), hosts.report(host))
            cpu_s += time.process_time() - start
            changed_hosts += len(changed)
        # The same reports again: what each host's periodic report costs
        # (most of a fleet's round, changed or not).
        start = time.process_time()
        for _ in range(args.rounds):
            for host in everyone:
                conductor.manager.report(
                    None, fleet_model.hostname(host), hosts.report(host))
        unchanged_s = time.process_time() - start
        import cyborg_lite
        return {'root': os.path.dirname(os.path.dirname(
                    cyborg_lite.__file__)),
                'changed_hosts': changed_hosts,
                'cpu_ms_per_changed_host': round(
                    cpu_s * 1000 / max(1, changed_hosts), 3),
                'cpu_ms_per_unchanged_host': round(
                    unchanged_s * 1000 / (args.rounds * args.hosts), 3),
                'sync_failures': len(conductor.sync_failures)}
    finally:
        placement.stop()


def _trial(root, args):
    result = common.run_in_tree(
        root, os.path.join(HERE, 'bench', 'change_cost.py'),
        ['--hosts', str(args.hosts), '--rounds', str(args.rounds)])
    common.log('%-40s %8.2f ms a changed host (%d hosts, %d sync '
               'failures), %.3f ms an unchanged one'
               % (root, result['cpu_ms_per_changed_host'],
                  result['changed_hosts'], result['sync_failures'],
                  result['cpu_ms_per_unchanged_host']))
    return result


def run(args):
    trials = common.alternate_trials(HERE, args.baseline, args.trials,
                                     lambda root: _trial(root, args))
    medians = common.trial_medians(trials, 'cpu_ms_per_changed_host')
    unchanged = common.trial_medians(trials, 'cpu_ms_per_unchanged_host')
    return {
        'bench': 'change_cost',
        'machine': common.machine(),
        'params': {'hosts': args.hosts, 'rounds': args.rounds,
                   'trials': args.trials,
                   'baseline': os.path.abspath(args.baseline)},
        'trials': trials,
        'median_cpu_ms_per_changed_host': medians,
        'baseline_over_this': common.ratio(medians['baseline'],
                                           medians['this']),
        'median_cpu_ms_per_unchanged_host': unchanged,
        'unchanged_baseline_over_this': common.ratio(unchanged['baseline'],
                                                     unchanged['this']),
    }


def main(argv=None):
    parser = common.tree_ab_parser(__doc__.split('\n')[0], HERE)
    parser.add_argument('--hosts', type=int, default=40)
    parser.add_argument('--rounds', type=int, default=10)
    parser.add_argument('--trials', type=int, default=2,
                        help='trials of each tree, alternated')
    common.tree_ab_main(parser, argv, ('hosts', 'rounds', 'trials'),
                        child, run)


if __name__ == '__main__':
    main()
