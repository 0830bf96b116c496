"""Small helpers shared by the benches: statistics, timers, output.

Every bench prints one JSON document on stdout (``--output`` also writes
it to a file) and a short human table on stderr, so a person reads the
table and a script (or tests/functional/test_bench_smoke.py) reads JSON.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time


# What the benches send the Placement they start (cyborg_lite.common.
# placement_server: noauth2, this token is an admin).
PLACEMENT_HEADERS = {'X-Auth-Token': 'admin',
                     'Content-Type': 'application/json',
                     'Accept': 'application/json',
                     'OpenStack-API-Version': 'placement 1.39'}


def alternate_trials(here, baseline, count, trial):
    """{'this': [...], 'baseline': [...]}: ``trial(root)``'s results in
    this tree (``here``) and in ``baseline``, ``count`` rounds, each
    running it once in both in turn, so the two sides share whatever
    else the machine is doing."""
    trees = {'this': here, 'baseline': os.path.abspath(baseline)}
    trials = {side: [] for side in trees}
    for _ in range(count):
        for side, root in trees.items():
            trials[side].append(trial(root))
    return trials


def trial_medians(trials, key):
    """{side: the median of ``key`` over its trials} of ``trials``
    ({side: [trial result dict]}), as the A/B benches report them."""
    return {side: statistics.median(t[key] for t in results)
            for side, results in trials.items()}


def percentile(values, pct):
    """Nearest-rank percentile of ``values`` (seconds in, seconds out)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))  # ceil
    return ordered[min(len(ordered), int(rank)) - 1]


def latency_summary(latencies, wall):
    """requests/s over ``wall`` seconds and p50/p99/max in milliseconds."""
    n = len(latencies)
    return {
        'requests': n,
        'wall_s': round(wall, 4),
        'rps': round(n / wall, 1) if wall > 0 else None,
        'p50_ms': _ms(percentile(latencies, 50)),
        'p99_ms': _ms(percentile(latencies, 99)),
        'max_ms': _ms(max(latencies) if latencies else None),
    }


def _ms(value):
    return None if value is None else round(value * 1000, 2)


def ratio(ours, theirs):
    """ours / theirs rounded, or None when either side is missing."""
    if not ours or not theirs:
        return None
    return round(ours / theirs, 2)


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.elapsed = time.perf_counter() - self.start


def machine():
    load = os.getloadavg() if hasattr(os, 'getloadavg') else None
    return {'python': platform.python_version(),
            'cpus': os.cpu_count(),
            'loadavg_at_start': [round(x, 2) for x in load] if load else None,
            'platform': platform.platform()}


def emit(result, output=None):
    text = json.dumps(result, indent=2, sort_keys=True)
    if output:
        with open(output, 'w') as f:
            f.write(text + '\n')
    print(text)
    sys.stdout.flush()


def quiet(*names):
    """Service logging at WARNING (the benches measure, not log)."""
    import logging
    for name in names or ('cyborg_lite', 'alembic', 'keystoneauth',
                          'urllib3', 'stevedore', 'oslo_messaging'):
        logging.getLogger(name).setLevel(logging.WARNING)


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def tree_env(root):
    """The environment of a child process that imports cyborg_lite, and
    bench's own modules, from the code tree ``root`` (a checkout) first.
    Run a script of this checkout by its path with it (its own folder,
    bench/, comes first on the path and holds neither package); ``-m``
    would put the working directory first instead."""
    return dict(os.environ, PYTHONPATH=root)


def run_in_tree(root, script, argv):
    """The JSON a bench's ``--child`` run printed last, run with the code
    tree ``root`` (a checkout) first on the path (``tree_env``); refused
    when the child imported cyborg_lite from elsewhere (its ``root``
    field says where)."""
    import subprocess
    out = subprocess.run(
        [sys.executable, script, '--child', '--root', root] + list(argv),
        env=tree_env(root), check=True, stdout=subprocess.PIPE,
        cwd=root).stdout
    result = json.loads(out.decode().strip().splitlines()[-1])
    if os.path.realpath(result['root']) != os.path.realpath(root):
        raise RuntimeError('the trial of %s imported cyborg_lite from %s'
                           % (root, result['root']))
    return result


def tree_ab_parser(description, here):
    """The options every this-tree-against-a-checkout bench has; the
    bench adds its own (counts, trials) and calls tree_ab_main."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument('--baseline',
                        help='a checkout of the code to compare with')
    parser.add_argument('--output', help='also write the JSON here')
    parser.add_argument('--child', action='store_true',
                        help=argparse.SUPPRESS)
    parser.add_argument('--root', default=here, help=argparse.SUPPRESS)
    return parser


def tree_ab_main(parser, argv, counts, child, run):
    """Parse; ``counts`` name the options that must be at least 1. A
    ``--child`` prints ``child(args)`` as JSON (run_in_tree reads it);
    otherwise ``run(args)`` is the result, emitted."""
    args = parser.parse_args(argv)
    for name in counts:
        if getattr(args, name) < 1:
            parser.error('--%s must be at least 1' % name)
    if args.child:
        print(json.dumps(child(args)))
        return
    if not args.baseline:
        parser.error('--baseline: a checkout to compare with is needed')
    emit(run(args), args.output)


def in_threads(func, count, threads):
    """Call ``func()`` ``count`` times shared by ``threads`` threads (at
    least once each); (calls made, the errors a thread stopped on)."""
    import threading
    per_thread = max(1, count // threads)
    errors = []

    def work():
        try:
            for _ in range(per_thread):
                func()
        except Exception as exc:
            errors.append(exc)
            raise
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return per_thread * threads, errors


def cpu_ms_per_call(func, count, threads, before_stop=None):
    """The process's CPU milliseconds (every thread's) per ``func()``
    call, ``count`` calls shared by ``threads`` threads; ``before_stop()``
    runs before the clock stops (work the calls left to a thread) and
    returns the CPU seconds meanwhile that are not the calls' (or
    None)."""
    start = time.process_time()
    calls, _errors = in_threads(func, count, threads)
    excluded = (before_stop() if before_stop is not None else None) or 0.0
    return (time.process_time() - start - excluded) * 1000 / calls


def wsgi_caller(app, headers):
    """call(method, path, body=None) -> (status code, body bytes): one
    request through the WSGI application ``app`` in process, a JSON body
    when given, with ``headers`` (environ keys)."""
    import io

    def call(method, path, body=None):
        raw = b'' if body is None else json.dumps(body).encode()
        environ = dict(headers, REQUEST_METHOD=method, PATH_INFO=path,
                       QUERY_STRING='', SERVER_NAME='127.0.0.1',
                       SERVER_PORT='80', SERVER_PROTOCOL='HTTP/1.1',
                       HTTP_HOST='127.0.0.1:80',
                       CONTENT_LENGTH=str(len(raw)))
        if body is not None:
            environ['CONTENT_TYPE'] = 'application/json'
        environ['wsgi.url_scheme'] = 'http'
        environ['wsgi.input'] = io.BytesIO(raw)
        status = []
        out = b''.join(app(environ, lambda s, h, e=None: status.append(s)))
        return int(status[0][:3]), out
    return call
