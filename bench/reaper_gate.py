"""The bind reaper's gate over many ARQs: the migrated schema's look for a
BindStarted ARQ (db/arq_binds.any_started) against the same look without
the index on ``accelerator_requests.state`` (alembic 0020), in one run.

    .venv/bin/python -m bench.reaper_gate [--arqs 100000] [--looks 50]

SQLite in a temp directory: ``--arqs`` ARQs over the cards of
bench.seed, every one Bound (none BindStarted: a busy cloud between
binds, the gate's common case), then the gate timed with the index, the
index dropped, and timed again.
"""
import argparse
import sys
import tempfile
import time

import sqlalchemy as sa

from bench import common
from bench import seed
from cyborg_lite.db import arq_binds
from cyborg_lite.db import migration
from cyborg_lite.conf import CONF

INDEX = 'ix_accelerator_requests_state'


def _gate_ms(looks):
    start = time.perf_counter()
    for _ in range(looks):
        arq_binds.any_started()
    return (time.perf_counter() - start) / looks * 1000.0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--arqs', type=int, default=100000)
    parser.add_argument('--looks', type=int, default=50)
    parser.add_argument('--output', help='write the JSON result here')
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    url = 'sqlite:///%s/gate.db' % tempfile.mkdtemp()
    migration.upgrade(url=url)
    seed.seed_ours(url, args.arqs)
    seed.seed_ours_arqs(url, args.arqs, 'bench')
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE accelerator_requests SET "
                             "state = 'Bound'")
    CONF.set_override('connection', url, group='database')
    indexed = _gate_ms(args.looks)
    with engine.begin() as conn:
        conn.exec_driver_sql('DROP INDEX %s' % INDEX)
    scanned = _gate_ms(args.looks)
    result = {'bench': 'reaper_gate', 'arqs': args.arqs,
              'indexed_ms': round(indexed, 4),
              'without_index_ms': round(scanned, 4),
              'ratio': round(scanned / indexed, 1)}
    print('gate over %d ARQs: %.4f ms indexed, %.4f ms without the index '
          '(x%.1f)' % (args.arqs, indexed, scanned, scanned / indexed),
          file=sys.stderr)
    common.emit(result, args.output)
    return result


if __name__ == '__main__':
    main()
