"""The API's CPU per POST, this tree against another checkout,
alternated in one run.

The API bench's POSTs (section 8.2 of docs/benchmarks-history.md) move by a
sixth between runs on this machine; this tells a change of the code
apart from that drift::

    git worktree add /tmp/base <commit>
    .venv/bin/python -m bench.post_cost --baseline /tmp/base

Each trial is a child process (``--child``) importing cyborg_lite from
one tree: a migrated, seeded SQLite database and the API's whole WSGI
application (``deploy.loadapp``, noauth, as bench/ours_server.py serves
it) called in process, without HTTP, so that only the application is
measured. ``--posts`` POST /v2/device_profiles, then as many POST
/v2/accelerator_requests, from 1 thread and from 4; the process CPU
clock per POST. Trials alternate: this tree, the baseline, this tree...
The result: each tree's median CPU milliseconds per POST, per route and
thread count, and the ratios baseline / this tree; and each tree's
Python function calls per POST (cProfile, 200 POSTs a route), which
the machine's load does not move.
"""
import os
import statistics
import sys
import tempfile

from bench import common

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THREADS = (1, 4)
CALLS_POSTS = 200   # POSTs per route counted call by call
BIND_PROFILE = 'bench-post-cost'
HEADERS = {'HTTP_X_ROLES': 'admin,member',
           'HTTP_X_PROJECT_ID': '9b1deb4d3b7d4bad9bdd2b0d7b3dcb6d',
           'HTTP_X_USER_ID': '1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed',
           'HTTP_ACCEPT': 'application/json',
           'HTTP_OPENSTACK_API_VERSION': 'accelerator 2.3'}


def _poster(app):
    """post(path, body): one POST through the WSGI app; 201 or raise."""
    call = common.wsgi_caller(app, HEADERS)

    def post(path, body):
        status, out = call('POST', path, body)
        if status != 201:
            raise RuntimeError('POST %s: %s %s' % (path, status, out[:300]))
    return post


def child(args):
    """One trial in this process, with ``args.root`` first on the path."""
    sys.path.insert(0, args.root)
    state = tempfile.mkdtemp(prefix='bench-post-cost-')
    db = 'sqlite:///%s' % os.path.join(state, 'api.sqlite')
    from cyborg_lite.common import config
    from cyborg_lite.conf import CONF
    config.parse_args([], default_config_files=[])
    common.quiet()
    CONF.set_override('connection', db, group='database')
    CONF.set_override('auth_strategy', 'noauth', group='api')
    from cyborg_lite.db import migration
    migration.upgrade()
    from bench import api
    from bench import seed
    seed.seed_ours(db, 10)
    group = api.PROFILE_GROUP   # the API bench's POSTs
    from cyborg_lite.api import deploy
    post = _poster(deploy.loadapp(CONF))
    names = iter(range(10 ** 9))
    scenarios = {
        'profile': lambda: post('/v2/device_profiles', [
            {'name': 'p%d' % next(names), 'groups': [group]}]),
        'arq': lambda: post('/v2/accelerator_requests',
                            {'device_profile_name': BIND_PROFILE}),
    }
    post('/v2/device_profiles', [{'name': BIND_PROFILE, 'groups': [group]}])
    for func in scenarios.values():   # warm-up: imports, caches
        for _ in range(50):
            func()
    cpu = {'%s_%dt' % (name, threads):
           round(common.cpu_ms_per_call(func, args.posts, threads), 4)
           for threads in THREADS for name, func in scenarios.items()}
    calls = {name: _calls_per_call(func, CALLS_POSTS)
             for name, func in scenarios.items()}
    import cyborg_lite
    return {'root': os.path.dirname(os.path.dirname(cyborg_lite.__file__)),
            'posts': args.posts, 'cpu_ms_per_post': cpu,
            'python_calls_per_post': calls}


def _calls_per_call(func, count):
    """Python function calls per ``func()``, counted by cProfile over
    ``count`` calls: the work done, whatever else the machine runs."""
    import cProfile
    import pstats
    profile = cProfile.Profile()
    profile.runcall(lambda: [func() for _ in range(count)])
    return round(pstats.Stats(profile).total_calls / count, 1)


def run(args):
    script = os.path.join(HERE, 'bench', 'post_cost.py')

    def trial(root):
        result = common.run_in_tree(root, script,
                                    ['--posts', str(args.posts)])
        common.log('%-40s %s' % (root, result['cpu_ms_per_post']))
        return result

    trials = common.alternate_trials(HERE, args.baseline, args.trials,
                                     trial)
    keys = sorted(trials['this'][0]['cpu_ms_per_post'])
    medians = {name: {key: statistics.median(
                   t['cpu_ms_per_post'][key] for t in results)
                   for key in keys}
               for name, results in trials.items()}
    return {
        'bench': 'post_cost',
        'machine': common.machine(),
        'params': {'posts': args.posts, 'trials': args.trials,
                   'baseline': os.path.abspath(args.baseline)},
        'trials': trials,
        'median_cpu_ms_per_post': medians,
        'baseline_over_this': {key: common.ratio(medians['baseline'][key],
                                                 medians['this'][key])
                               for key in keys},
        # Deterministic: the same in every trial of a tree.
        'python_calls_per_post': {
            name: results[0]['python_calls_per_post']
            for name, results in trials.items()},
    }


def main(argv=None):
    parser = common.tree_ab_parser(__doc__.split('\n')[0], HERE)
    parser.add_argument('--posts', type=int, default=2000,
                        help='POSTs per route and thread count')
    parser.add_argument('--trials', type=int, default=4,
                        help='trials of each tree, alternated')
    common.tree_ab_main(parser, argv, ('posts', 'trials'), child, run)


if __name__ == '__main__':
    main()
