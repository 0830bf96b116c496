"""db/inventory.py writes a report that only changes values of stored
rows as UPDATEs by id and version (``_apply_values``), without loading
the host as ORM objects; one that adds or removes rows takes the ORM
path. Both must store exactly the same."""
import json

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import exc as orm_exc

from cyborg_lite.conductor import report
from cyborg_lite.db import inventory
from cyborg_lite.db import models
from cyborg_lite.db.sql import conditional
from cyborg_lite.db.sql import session
from tests.unit.conductor import report_helpers as h
from tests.unit.conductor import test_report_unchanged as unchanged

HOST = unchanged.HOST
VALUE_EDITS = ['device value', 'health', 'health reason', 'region health',
               'board info', 'region value',
               'region memory', 'attribute value', 'handle type']
STRUCTURAL_EDITS = sorted(set(unchanged.EDITS) - set(VALUE_EDITS))


def _edited(edit):
    return [h.ok('fpga', unchanged._edit(edit), h.fpga(unchanged.CARD1)),
            h.ok('gpu')]


@pytest.fixture
def orm_loads(monkeypatch):
    """How many times the writing path loaded the host as ORM objects."""
    calls = []
    stored = inventory._Stored

    def counting(*args):
        calls.append(args[1])
        return stored(*args)
    monkeypatch.setattr(inventory, '_Stored', counting)
    return calls


@pytest.mark.parametrize('edit', VALUE_EDITS)
def test_a_value_change_is_written_without_orm_objects(db, edit, orm_loads):
    unchanged._stored()
    del orm_loads[:]
    ack = report.handle_report(HOST, _edited(edit))
    assert ack['changed'] is True and ack['updated'] >= 1
    assert (ack['created'], ack['deleted']) == (0, 0)
    assert orm_loads == []
    # What was written is what the report says: the same report again
    # is unchanged.
    with h.count_writes() as writes:
        assert report.handle_report(HOST, _edited(edit))['changed'] is False
    assert writes == []


def _moved(card, functions_too):
    """``card`` in another slot: its PCI address (and its functions' with
    ``functions_too``) on bus 5f; its identity (a serial, say) stays."""
    card = h.changed(card, pci_address='0000:5f:00.0')
    for region in card['deployables'] if functions_too else ():
        for handle in region['attach_handles']:
            handle['attach_info']['bus'] = '5f'
    return card


@pytest.mark.parametrize('functions_too', [False, True],
                         ids=['device only', 'with its functions'])
def test_a_moved_pci_address_is_written(db, functions_too, orm_loads):
    unchanged._stored()
    del orm_loads[:]
    [before] = [d for d in h.devices(HOST)
                if d.identity == unchanged.CARD0]
    moved = [h.ok('fpga', _moved(h.fpga(unchanged.CARD0), functions_too),
                  h.fpga(unchanged.CARD1)), h.ok('gpu')]
    with session.writer() as s:
        s.execute(sa.delete(models.PublishRequest))

    ack = report.handle_report(HOST, moved)

    assert ack['changed'] is True
    # Values of stored rows only, unless its functions' handles moved.
    assert orm_loads == ([HOST] if functions_too else [])
    [after] = [d for d in h.devices(HOST) if d.identity == unchanged.CARD0]
    assert (after.id, after.pci_address) == (before.id, '0000:5f:00.0')
    [cpid] = h.rows(models.ControlpathId, device_id=after.id)
    assert json.loads(cpid.cpid_info) == {
        'domain': '0000', 'bus': '5f', 'device': '00', 'function': '0'}
    with session.reader() as s:
        assert s.scalars(sa.select(models.PublishRequest.hostname)).all() \
            == [HOST]
    with h.count_writes() as writes:
        assert report.handle_report(HOST, moved)['changed'] is False
    assert writes == []


@pytest.mark.parametrize('edit', STRUCTURAL_EDITS)
def test_rows_added_or_removed_take_the_orm_path(db, edit, orm_loads):
    unchanged._stored()
    del orm_loads[:]
    assert report.handle_report(HOST, _edited(edit))['changed'] is True
    assert orm_loads == [HOST]


def _content():
    """Every inventory row but its random uuid and timestamps."""
    rows = {}
    with session.reader() as s:
        for model in h.INVENTORY:
            table = model.__table__
            columns = [c for c in table.c
                       if c.name not in ('uuid', 'created_at', 'updated_at',
                                         'health_since')]
            rows[table.name] = [tuple(r) for r in s.execute(
                sa.select(*columns).order_by(table.c.id))]
    return rows


@pytest.mark.parametrize('edit', VALUE_EDITS)
def test_the_update_path_stores_what_the_orm_path_stores(
        conf, tmp_path, monkeypatch, sqlite_template, edit):
    results = []
    for path in ('updates', 'orm'):
        conf.set_override('connection', sqlite_template.copy(
            tmp_path / (path + '.sqlite')), group='database')
        if path == 'orm':
            monkeypatch.setattr(inventory, '_apply_values',
                                lambda *args: None)
        unchanged._stored()
        ack = report.handle_report(HOST, _edited(edit))
        results.append((ack, _content()))
    session.dispose_all()
    assert results[0] == results[1]


def test_a_row_changed_meanwhile_starts_the_report_over(db, monkeypatch):
    unchanged._stored()
    update = conditional.update
    refused = []

    def stale_once(s, model, *args, **kwargs):
        if not refused:
            refused.append(model)
            return 0
        return update(s, model, *args, **kwargs)
    monkeypatch.setattr(conditional, 'update', stale_once)
    monkeypatch.setattr(inventory.time, 'sleep', lambda seconds: None)

    ack = report.handle_report(HOST, _edited('region value'))
    assert refused == [models.Deployable]
    assert ack['changed'] is True and ack['updated'] == 1
    assert [d.function_id for d in h.rows(models.Deployable)
            if d.function_id] == ['ab' * 16]


def test_a_stale_row_is_a_retryable_conflict():
    assert issubclass(orm_exc.StaleDataError, inventory._RETRYABLE)
