"""Experiment: what SQLite writer handling costs the API's create routes.

    .venv/bin/python -m bench.sqlite_writers [--requests 300]
        [--concurrency 4] [--modes as-is,lock,lock+wal]

Serves cyborg_lite's API in this process (waitress, 8 threads, noauth,
SQLite seeded with bench/seed.py) and times POST /v2/accelerator_requests
and POST /v2/device_profiles under three settings of db/sql/session.py,
patched here in memory only (the repository is not changed):

- ``as-is``: what session.py does now (since the change this bench
  measured: writers queue on a per-engine lock, then ``BEGIN IMMEDIATE``;
  before it, a writer that found the database locked waited in SQLite's
  busy handler, which sleeps in steps of up to 100 ms);
- ``lock``: writers of the process also take one ``threading.Lock``
  first, so they queue in Python instead of sleeping in SQLite;
- ``lock+wal``: the same plus ``journal_mode=WAL`` and
  ``synchronous=NORMAL`` (one fsync per checkpoint, not per commit).

It measured the change now in db/sql/session.py (docs/benchmarks-history.md 5,
"Hot spots elsewhere"); every mode runs in a fresh database.
"""
import argparse
import contextlib
import os
import shutil
import sqlite3
import tempfile
import threading

from bench import api as bench_api
from bench import api_servers
from bench import common
from bench import seed

MODES = ('as-is', 'lock', 'lock+wal')


def _patch(session, mode, path):
    if mode == 'as-is':
        return
    original = session._transaction
    lock = threading.Lock()

    @contextlib.contextmanager
    def serialised(url, is_writer, core=False):
        if not is_writer:
            with original(url, is_writer, core) as s:
                yield s
            return
        with lock:
            with original(url, is_writer, core) as s:
                yield s
    session._transaction = serialised
    if mode == 'lock+wal':
        conn = sqlite3.connect(path)
        conn.execute('PRAGMA journal_mode=WAL')
        conn.close()
        pragmas = session._sqlite_pragmas

        def with_normal_sync(dbapi_conn, record):
            pragmas(dbapi_conn, record)
            cursor = dbapi_conn.cursor()
            cursor.execute('PRAGMA synchronous=NORMAL')
            cursor.close()
        session._sqlite_pragmas = with_normal_sync


def run_mode(mode, args):
    """One mode in a child process (the patches are process-wide)."""
    import waitress.server

    from cyborg_lite.api import deploy
    from cyborg_lite.common import config
    from cyborg_lite.cmd import placement_server
    from cyborg_lite.conf import CONF
    from cyborg_lite.db.sql import session

    workdir = tempfile.mkdtemp(prefix='bench-sqlite-')
    try:
        path = os.path.join(workdir, 'db.sqlite')
        url = 'sqlite:///' + path
        config.parse_args([], default_config_files=[])
        common.quiet()
        CONF.set_override('connection', url, group='database')
        CONF.set_override('auth_strategy', 'noauth', group='api')
        CONF.set_override('transport_url', 'fake://')
        if args.seeded and os.path.exists(args.seeded):
            # An earlier mode's fresh database, copied before it served.
            shutil.copyfile(args.seeded, path)
        else:
            from cyborg_lite.db import migration
            migration.upgrade()
            seed.seed_ours(url, args.devices)
            session.dispose_all()
            if args.seeded:
                shutil.copyfile(path, args.seeded)
        session.dispose_all()
        _patch(session, mode, path)
        port = placement_server.free_port()
        server = waitress.server.create_server(
            deploy.loadapp(CONF), host='127.0.0.1', port=port, threads=8)
        threading.Thread(target=server.run, daemon=True).start()
        base = 'http://127.0.0.1:%d' % port
        scenarios = bench_api.Scenarios('ours', args.devices)
        scenarios.ensure_bind_profile(base)
        for _ in range(5):
            scenarios.create_arq(base, 0)
        result = {}
        for name in ('create_arq', 'create_profile'):
            run = bench_api._run_collect(base, getattr(scenarios, name),
                                         args.requests, args.concurrency)
            summary = common.latency_summary(run['latencies'], run['wall'])
            summary['errors'] = run['errors']
            result[name] = summary
            common.log('%-9s %-15s %7.1f req/s  p50 %6.1f ms  p99 %6.1f ms'
                       % (mode, name, summary['rps'], summary['p50_ms'],
                          summary['p99_ms']))
        server.close()
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--requests', type=int, default=300)
    parser.add_argument('--concurrency', type=int, default=4)
    parser.add_argument('--devices', type=int, default=1000)
    parser.add_argument('--modes', default=','.join(MODES))
    parser.add_argument('--mode', help=argparse.SUPPRESS)
    parser.add_argument('--seeded', help=argparse.SUPPRESS)
    parser.add_argument('--output')
    args = parser.parse_args(argv)
    if args.mode:
        common.emit(run_mode(args.mode, args), args.output)
        return
    for mode in args.modes.split(','):
        if mode not in MODES:
            parser.error('unknown mode %s' % mode)
    results = {}
    # The first mode migrates and seeds; the others start on a copy of
    # that fresh database.
    seeded_dir = tempfile.mkdtemp(prefix='bench-sqlite-seeded-')
    try:
        for mode in args.modes.split(','):
            results[mode] = _run_child(
                mode, args, os.path.join(seeded_dir, 'seeded.sqlite'))
    finally:
        shutil.rmtree(seeded_dir, ignore_errors=True)
    common.emit({'bench': 'sqlite_writers', 'machine': common.machine(),
                 'params': {'requests': args.requests,
                            'concurrency': args.concurrency,
                            'devices': args.devices},
                 'modes': results}, args.output)


def _run_child(mode, args, seeded):
    """One mode in its child process; its result."""
    import json
    import subprocess
    import sys
    # NOTE: the child's result comes back in a file: its stdout may
    # also carry what a server thread prints while it shuts down.
    with tempfile.NamedTemporaryFile(suffix='.json') as out:
        proc = subprocess.run(
            [sys.executable, '-m', 'bench.sqlite_writers', '--mode',
             mode, '--requests', str(args.requests), '--devices',
             str(args.devices), '--concurrency', str(args.concurrency),
             '--seeded', seeded, '--output', out.name],
            capture_output=True, text=True, check=True,
            cwd=api_servers.ROOT)
        result = json.load(out)
    sys.stderr.write('\n'.join(
        line for line in proc.stderr.splitlines()
        if line.startswith(mode + ' ')) + '\n')
    return result


if __name__ == '__main__':
    main()
