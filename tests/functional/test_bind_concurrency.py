"""Concurrent binds: correctness comes from the database, not from locks.

Threads share nothing but the database, as conductors on different hosts
would; the last test runs real conductor processes and kills one with
SIGKILL half way through a burst.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from cyborg_lite.conductor import bind
from tests.unit.conductor import bind_helpers as h

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def _bind_at_once(pairs):
    """Bind each (arq, binding) from its own thread, all released at once."""
    barrier = threading.Barrier(len(pairs))
    notifier = h.RecordingNotifier()
    results, errors = {}, []

    def run(arq_uuid, wanted):
        try:
            barrier.wait(timeout=60)
            results.update(bind.bind_arqs(None, {arq_uuid: wanted},
                                          notifier=notifier))
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)
    threads = [threading.Thread(target=run, args=pair) for pair in pairs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert errors == [] and not any(t.is_alive() for t in threads)
    return results, notifier


def _count(results, state):
    return sum(1 for s in results.values() if s == state)


def test_two_binds_to_one_single_region(db):
    region = h.make_region(handles=1)
    arqs = h.make_arqs(2)
    results, notifier = _bind_at_once([(a, h.binding(region)) for a in arqs])
    assert sorted(results.values()) == ['BindFailed', 'Bound']
    assert h.states(arqs) == results
    assert len(notifier.events) == 2
    [loser] = [a for a, s in results.items() if s == 'BindFailed']
    assert 'no free attach handle' in h.get_arq(loser).error
    assert len(h.check_no_handle_double_use()) == 1


def test_forty_binds_to_four_single_regions(db):
    regions = [h.make_region(handles=1) for _ in range(4)]
    arqs = h.make_arqs(40)
    pairs = [(a, h.binding(regions[i % 4])) for i, a in enumerate(arqs)]
    results, notifier = _bind_at_once(pairs)
    assert (_count(results, 'Bound'), _count(results, 'BindFailed')) == (4,
                                                                        36)
    assert h.states(arqs) == results
    assert len(h.check_no_handle_double_use()) == 4
    for region in regions:
        assert [x.in_use for x in h.handles_of(region)] == [True]
    assert len(notifier.by_arq()) == 40


_CONDUCTOR = r'''
import json, sys, time
from cyborg_lite.conf import CONF
CONF([], project='cyborg_lite', default_config_files=[])
CONF.set_override('connection', sys.argv[1], group='database')
from cyborg_lite.conductor import bind

def program(ctxt, **kwargs):
    # Stands for a conductor that hangs while it programs a region.
    print('programming', flush=True)
    time.sleep(3600)

bind.bind_arqs(None, json.loads(sys.argv[2]), programmer=program)
print('done', flush=True)
'''


def _start_conductor(db_url, bindings):
    return subprocess.Popen(
        [sys.executable, '-c', _CONDUCTOR, db_url, json.dumps(bindings)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True)


@pytest.mark.slow
def test_killed_conductor_leaves_nothing_stuck(db):
    """Conductor A dies (SIGKILL) in a bind while B binds the same regions.

    After the reaper, every ARQ is Bound or BindFailed, each region is
    bound exactly once, and no attach handle is used twice.
    """
    regions = [h.make_region(handles=1) for _ in range(4)]
    needs_programming = h.make_profile([{'accel:function_id': 'f-new'}])
    a_plain = h.make_arqs(6)
    a_hangs = h.make_arq(profile_id=needs_programming)
    a_after = h.make_arqs(4)
    b_arqs = h.make_arqs(20)
    a_order = a_plain + [a_hangs] + a_after
    a_bindings = {a: h.binding(regions[i % 4]) for i, a in enumerate(a_order)}
    b_bindings = {a: h.binding(regions[i % 4]) for i, a in enumerate(b_arqs)}

    conductor_a = _start_conductor(db, a_bindings)
    conductor_b = _start_conductor(db, b_bindings)
    try:
        assert conductor_a.stdout.readline().strip() == 'programming'
        os.kill(conductor_a.pid, signal.SIGKILL)
        assert conductor_b.wait(timeout=120) == 0
    finally:
        for proc in (conductor_a, conductor_b):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()

    everything = a_order + b_arqs
    left = [a for a, s in h.states(everything).items()
            if s not in ('Bound', 'BindFailed')]
    # A recorded its whole request as BindStarted before it died.
    assert set(left) == {a_hangs, *a_after}
    # Every bind A took is older than now by the database's clock (the one
    # the reaper reads): a zero timeout reaps them without waiting one out.
    notifier = h.RecordingNotifier()
    assert set(bind.reap_stale_binds(0, notifier=notifier)) == set(left)
    assert {e['status'] for e in notifier.events} == {'failed'}

    final = h.states(everything)
    assert set(final.values()) == {'Bound', 'BindFailed'}
    assert _count(final, 'Bound') == 4
    assert len(h.check_no_handle_double_use()) == 4
