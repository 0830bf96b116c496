"""CPU time of a command line that talks to nobody, e.g. ``--help``.

    .venv/bin/python -m bench.cli_startup [--runs 10] [--source DIR]
        [-- COMMAND ...]

Runs COMMAND (default: ``.venv/bin/cyborg-lite --help``) ``--runs`` times,
one after the other, and prints the user + system CPU seconds each run
cost (``resource.getrusage(RUSAGE_CHILDREN)`` before and after), min and
median: CPU, unlike wall time, does not count the waits of a machine
shared with other jobs. ``--source DIR`` runs another checkout of
cyborg_lite with the same virtualenv (its directory first on
PYTHONPATH, ahead of the editable install), to compare before and after.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys

DEFAULT = [os.path.join(os.path.dirname(sys.executable), 'cyborg-lite'),
           '--help']


def cpu_of(command, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((after.ru_utime - before.ru_utime) +
            (after.ru_stime - before.ru_stime))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--runs', type=int, default=10)
    parser.add_argument('--source', help='checkout to run instead')
    parser.add_argument('command', nargs='*', default=DEFAULT)
    args = parser.parse_args(argv)
    env = dict(os.environ)
    if args.source:
        env['PYTHONPATH'] = os.path.abspath(args.source)
    samples = [cpu_of(args.command, env) for _ in range(args.runs)]
    print('%s%s: CPU s over %d runs: min %.3f, median %.3f' % (
        ' '.join(args.command), ' (source %s)' % args.source
        if args.source else '', args.runs, min(samples),
        statistics.median(samples)))


if __name__ == '__main__':
    main()
