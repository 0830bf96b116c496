"""The records of our Placement resource providers, on every backend."""
import logging

from cyborg_lite.common import outage
from cyborg_lite.db import placement_providers as records
from cyborg_lite.db.sql import session

Record = records.Record
A, B = 'a' * 8 + '-0000-0000-0000-' + 'a' * 12, 'b' * 36
INVENTORY = {'FPGA': {'total': 1, 'reserved': 0, 'min_unit': 1,
                      'max_unit': 1, 'step_size': 1,
                      'allocation_ratio': 1.0}}


def test_saved_records_load_as_they_were(db):
    records.save({A: Record(3, INVENTORY, frozenset({'CUSTOM_X',
                                                     'HW_FPGA'})),
                  B: Record(0, {}, frozenset())})
    assert records.load([A, B, 'c' * 36]) == {
        A: Record(3, INVENTORY, frozenset({'CUSTOM_X', 'HW_FPGA'})),
        B: Record(0, {}, frozenset())}
    assert records.load([]) == {}


def test_a_save_replaces_the_record_of_that_provider(db):
    records.save({A: Record(3, INVENTORY, frozenset({'CUSTOM_X'}))})
    # The provider made again (its uuid comes from names): generation 0.
    records.save({A: Record(0, {}, frozenset()),
                  B: Record(5, {}, frozenset({'CUSTOM_Y'}))})
    assert records.load([A, B]) == {A: Record(0, {}, frozenset()),
                                    B: Record(5, {}, frozenset({'CUSTOM_Y'}))}


def test_forgotten_records_are_gone(db):
    records.save({A: Record(1, {}, frozenset()),
                  B: Record(2, {}, frozenset())})
    records.forget([A])
    assert set(records.load([A, B])) == {B}


def test_the_store_takes_a_database_error_for_nothing_recorded(
        conf, caplog, monkeypatch):
    from tests import servers
    # An outage log of its own: this one's outage stays out of others'.
    monkeypatch.setattr(session, 'OUTAGE', outage.OutageLog(
        'Database', session.LOG))
    store = records.Store('postgresql+psycopg2://nobody@127.0.0.1:%d/x'
                          % servers.free_port())
    caplog.set_level(logging.WARNING, logger=records.__name__)
    try:
        assert store.load([A]) == {}
        assert store.save({A: Record(1, {}, frozenset())}) is False
        assert store.forget([A]) is False
    finally:
        session.dispose_all()
    assert len([r for r in caplog.records
                if r.name == records.__name__]) == 3
