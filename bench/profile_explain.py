"""A device profile's explain at fleet size, against its 200 ms limit.

    .venv/bin/python -m bench.profile_explain [--hosts 1000] [--runs 10]
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
and reported with its parts; the median of ``--runs`` against the
issue's limit of 200 ms per explain at 1,000 hosts.
"""
import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

from bench import common
from bench import seed

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


def prepare(workdir, hosts):
    from cyborg_lite.common import config
    from cyborg_lite.conf import CONF
    from cyborg_lite.db import migration
    from cyborg_lite.db.sql import session
    url = 'sqlite:///' + os.path.join(workdir, 'explain.sqlite')
    config.parse_args([], default_config_files=[])
    common.quiet()
    CONF.set_override('connection', url, group='database')
    migration.upgrade()
    cards = hosts * seed.CARDS_PER_HOST
    seed.seed_ours(url, cards)
    seed.seed_ours_arqs(url, cards, 'bench-project')
    _causes(url, cards)
    return url


def explain_once(name):
    """(read ms, funnel ms, the answer's blocking steps, CPU ms of this
    process for both: on a busy machine, less of the neighbours' load
    than the wall clock)."""
    from cyborg_lite.db import explain as explain_db
    from cyborg_lite.db.sql import pagination
    from cyborg_lite.placement import explain
    cpu = time.process_time()
    start = time.perf_counter()
    snap = explain_db.snapshot(pagination.ALL, name)
    read = time.perf_counter()
    groups = explain.explain(snap.groups, snap.fleet, snap.holders,
                             explain.Images(snap.bitstream_region_types,
                                            snap.function_region_types))
    done = time.perf_counter()
    return ((read - start) * 1000, (done - read) * 1000,
            [(g['blocking'] or {}).get('step') for g in groups],
            (time.process_time() - cpu) * 1000)


def measure(runs):
    report = {}
    for name in PROFILES:
        explain_once(name)      # warm: statements compiled, pool open
        timings = [explain_once(name) for _ in range(runs)]
        total = [r + f for r, f, _, _ in timings]
        report[name] = {
            'blocking': timings[0][2],
            'read_ms_median': round(statistics.median(
                r for r, _, _, _ in timings), 1),
            'funnel_ms_median': round(statistics.median(
                f for _, f, _, _ in timings), 1),
            'cpu_ms_median': round(statistics.median(
                c for _, _, _, c in timings), 1),
            'total_ms_median': round(statistics.median(total), 1),
            'total_ms_max': round(max(total), 1),
            'limit_ms': LIMIT_MS,
            'within_limit': statistics.median(total) <= LIMIT_MS}
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--runs', type=int, default=10)
    parser.add_argument('--output')
    args = parser.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix='bench-explain-')
    try:
        prepare(workdir, args.hosts)
        common.emit({'bench': 'profile_explain', 'machine': common.machine(),
                     'params': {'hosts': args.hosts, 'runs': args.runs,
                                'cards_per_host': seed.CARDS_PER_HOST},
                     'profiles': measure(args.runs)}, args.output)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
    main()
