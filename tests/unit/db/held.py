"""Two transactions held at the point of conflict, on PostgreSQL.

``race``: each call in its own thread waits at its first conditional
UPDATE of a table (db/sql/conditional.before_update) until all have reached
theirs, so each has read the row before any writes it.

``blocked_behind``: the first call runs until it waits at a ``Held``
point (its writes done, its transaction open), the second until
PostgreSQL shows it waiting on a lock (pg_stat_activity, not a timing);
then the first is let go and both end.
"""
import threading

import sqlalchemy as sa

from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import session
from tests import waiting


def _run_all(calls):
    """Start a thread per (name, call); {name: result or exception} and
    the threads."""
    results = {}

    def run(name, call):
        try:
            results[name] = call()
        except Exception as exc:  # the assertions look at it
            results[name] = exc
    threads = [threading.Thread(target=run, args=item) for item in calls]
    return results, threads


def race(monkeypatch, table, *calls):
    """Run each call in its own thread; every one waits at its first
    conditional UPDATE of ``table`` until all have reached theirs.
    Returns each call's result, or the exception it raised."""
    barrier = threading.Barrier(len(calls), timeout=30)
    armed = threading.local()

    def hold(name):
        if name == table and getattr(armed, 'on', False):
            armed.on = False
            barrier.wait()

    monkeypatch.setattr(conditional, 'before_update', hold)

    def armed_call(call):
        def run():
            armed.on = True
            return call()
        return run
    results, threads = _run_all(
        (i, armed_call(call)) for i, call in enumerate(calls))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    outcome = [results.get(i) for i in range(len(calls))]
    assert not any(isinstance(r, threading.BrokenBarrierError)
                   for r in outcome), outcome
    return outcome


def waiting_on_a_lock():
    """How many sessions of the test's database wait on a lock now."""
    with session.reader() as s:
        return s.scalar(sa.text(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE wait_event_type = 'Lock' AND datname = current_database()"))


class Held:
    """A point a transaction waits at (``hold()``) until released."""

    def __init__(self):
        self.holding, self.release = threading.Event(), threading.Event()

    def hold(self):
        self.holding.set()
        self.release.wait(30)


def blocked_behind(held, first, second):
    """Run ``first`` until it holds at ``held``, then ``second`` until
    PostgreSQL shows it waiting on a lock; then release ``first``.
    {'first': its result or exception, 'second': the same}."""
    results, threads = _run_all([('first', first), ('second', second)])
    threads[0].start()
    assert held.holding.wait(30)
    threads[1].start()
    try:
        assert waiting.until(lambda: waiting_on_a_lock() >= 1, 30)
    finally:
        held.release.set()
        for thread in threads:
            thread.join(30)
    return results


def held_before_a_jobs_insert(monkeypatch):
    """A Held at a programming job's creation with its locks taken
    (db/programming_jobs.create_job, at its cleaning refusal), before
    its insert."""
    from cyborg_lite.db import cleaning
    held, refusal = Held(), cleaning.programming_refusal

    def held_refusal(s, deployable_id, label):
        held.hold()
        return refusal(s, deployable_id, label)
    monkeypatch.setattr(cleaning, 'programming_refusal', held_refusal)
    return held
