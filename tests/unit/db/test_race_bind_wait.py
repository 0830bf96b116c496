"""Binds waiting for a warm region (conductor/bind_wait.py,
db/arq_waits.py) at their points of conflict, on PostgreSQL: one
simulated card of three regions on their own VFs, all running the
function the binds ask for, offered by the card's provider
([fake_driver] whole_card), as the conductor stores its report.

- Two binds deciding at once to wait for the one busy region: the
  second waits on the region's row lock, then counts the first, and
  does not wait (one waiting bind per busy region).
- Two binds waiting for the one region that frees: exactly one is Bound
  to it; the other is bound as a new bind would be, elsewhere.
- Two conductors resuming the same waiting bind: one takes it.
"""
import pytest
import sqlalchemy as sa

from cyborg_lite.conductor import bind_wait
from cyborg_lite.db import arq_binds
from cyborg_lite.db import arq_waits
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.unit.conductor import bind_helpers as h
from tests.unit.db.held import Held
from tests.unit.db.held import blocked_behind
from tests.unit.db.held import race
from tests.unit.db.test_race_whole_card import _held_after_claim

pytestmark = pytest.mark.postgresql

FUNCTION = 'd8424dc4a4a3c413f89e433683f9040b'   # every region runs it


@pytest.fixture
def regions(pg_db, conf, tmp_path):
    """{name: region row} of the card's three regions."""
    return h.report_fake_card(conf, tmp_path, regions_per_card=3,
                              sriov=True, whole_card=True,
                              initial_function_id=FUNCTION)


def _started(regions, count):
    """``count`` binds of the card's provider, started by a conductor."""
    profile = h.make_profile([{'resources:FPGA': '1',
                               'accel:function_id': FUNCTION}])
    target = {'rp_uuid': regions['region0'].rp_uuid}
    started, refused = arq_binds.begin_binds(
        {h.make_arq(profile_id=profile): h.binding(target)
         for _ in range(count)}, 'cond-test')
    assert not refused
    return started


def _marking_held(monkeypatch):
    """Hold the first bind that marks itself waiting, its transaction
    open (its locks held)."""
    held, real = Held(), arq_waits.conditional.update

    class Holding:
        @staticmethod
        def update(*args, **kwargs):
            changed = real(*args, **kwargs)
            if not held.holding.is_set():
                held.hold()
            return changed
    monkeypatch.setattr(arq_waits, 'conditional', Holding)
    return held


def test_two_binds_deciding_at_once_wait_once_for_one_region(
        regions, monkeypatch):
    first, second = _started(regions, 2)
    busy = [regions['region1'].id]

    def decide(started):
        return lambda: arq_waits.start_waiting(started, busy, 1.0, 20.0)
    results = blocked_behind(_marking_held(monkeypatch), decide(first),
                             decide(second))

    assert results['first'].region_id == regions['region1'].id, results
    assert results['second'] is None, results
    assert [w.started.uuid for w in arq_waits.waiting()] == [first.uuid]


def _waiting_for(started, region):
    """A bind waiting for ``region``, as the marker records it (two can:
    one counted when a second busy region ran the function too)."""
    with session.writer() as s:
        s.execute(sa.update(models.AcceleratorRequest)
                  .where(models.AcceleratorRequest.uuid == started.uuid)
                  .values(bind_waits_for_id=region.id,
                          version=started.version + 1))
    [found] = [w for w in arq_waits.waiting()
               if w.started.uuid == started.uuid]
    return found


def test_two_binds_waiting_for_the_region_that_frees_bind_it_once(
        regions, monkeypatch):
    region1 = regions['region1']
    waits = [_waiting_for(started, region1)
             for started in _started(regions, 2)]

    def resume(waiting):
        return lambda: bind_wait._resume(waiting, True, None, None, [])
    results = blocked_behind(_held_after_claim(monkeypatch, region1.id),
                             resume(waits[0]), resume(waits[1]))

    assert results == {'first': 'Bound', 'second': 'Bound'}, results
    winner, other = (h.get_arq(w.started.uuid) for w in waits)
    assert winner.deployable_id == region1.id
    # The other, bound as a new bind would be: a free region running the
    # function, with no programming.
    assert other.deployable_id in (regions['region0'].id,
                                   regions['region2'].id)
    assert arq_waits.waiting() == []
    h.check_no_handle_double_use()


def test_two_conductors_resuming_one_waiting_bind_take_it_once(
        regions, monkeypatch):
    [started] = _started(regions, 1)
    waiting = _waiting_for(started, regions['region1'])

    results = race(monkeypatch, 'accelerator_requests',
                   lambda: arq_waits.take(waiting),
                   lambda: arq_waits.take(waiting))

    assert sorted(r is None for r in results) == [False, True], results
    assert arq_waits.waiting() == []


def test_the_binds_waiting_on_hosts_are_those_of_the_hosts_asked(regions):
    """waiting(hostnames=...) keeps to those hosts, oldest first, at
    most ``limit`` (its statement is built once: names and limit are
    its parameters)."""
    started = _started(regions, 2)
    for bind in started:
        _waiting_for(bind, regions['region1'])
    host = h.get_arq(started[0].uuid).hostname

    def uuids(**which):
        return [w.started.uuid for w in arq_waits.waiting(**which)]

    assert sorted(uuids(hostnames=[host])) == sorted(
        s.uuid for s in started)
    assert uuids(hostnames=['elsewhere', host], limit=1) == \
        uuids(hostnames=[host])[:1]
    assert uuids(hostnames=['elsewhere']) == []
