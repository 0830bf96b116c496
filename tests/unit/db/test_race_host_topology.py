"""Two conductors storing the first NUMA nodes of one host at once, on
PostgreSQL, both held after reading that the host has none: one INSERT
wins, the other meets its row (a unique violation), reads it and writes
over it; one row, no error, each change with its publish request."""
import threading

import pytest

from cyborg_lite.db import host_topology
from cyborg_lite.db import models
from cyborg_lite.db.sql import session

pytestmark = pytest.mark.postgresql


def _nodes(distance):
    return [{'node': 0, 'cpulist': '0-3', 'socket': 0,
             'distances': [10, distance]},
            {'node': 1, 'cpulist': '4-7', 'socket': 1,
             'distances': [distance, 10]}]


def test_first_nodes_of_a_host_from_two_conductors(pg_db, monkeypatch):
    barrier = threading.Barrier(2, timeout=30)
    new_row = host_topology._new_row
    held = threading.local()

    def held_row(hostname, text):
        # Both have read "no row" in their own transaction.
        if not getattr(held, 'done', False):
            held.done = True
            barrier.wait()
        return new_row(hostname, text)

    monkeypatch.setattr(host_topology, '_new_row', held_row)
    results = [None, None]

    def run(i):
        try:
            results[i] = host_topology.save('node1', _nodes(20 + i))
        except Exception as exc:  # the assertion shows it
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == [True, True]
    with session.reader() as s:
        rows = s.query(models.HostTopology).all()
        requests = s.query(models.PublishRequest).filter_by(
            hostname='node1').count()
    assert len(rows) == 1
    assert requests == 2
