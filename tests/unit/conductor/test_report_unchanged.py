"""The read-only check (db/inventory_diff.py) that answers an unchanged
report without the writer: it must say "unchanged" for an equal report
and "changed" for every difference the writing path would write."""
import copy

import pytest

from cyborg_lite.conductor import report
from cyborg_lite.db import inventory
from cyborg_lite.db import inventory_diff
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.unit.conductor import report_helpers as h

HOST = 'node1'
CARD0 = '0000:5e:00.0'
CARD1 = '0000:af:00.0'


def _scans(*driver_reports):
    entries = report.validate(HOST, list(driver_reports))
    return {e['driver']: [report.desired_device(HOST, r)
                          for r in e['devices']] for e in entries}


def _matches(scans):
    with session.core_reader() as conn:
        return inventory_diff.Diff(conn, HOST, scans).unchanged


def _stored():
    report.handle_report(HOST, [h.ok('fpga', h.fpga(CARD0), h.fpga(CARD1)),
                                h.ok('gpu')])


def test_an_unchanged_report_never_opens_the_writing_path(db,
                                                          monkeypatch):
    _stored()

    def refuse(*args):
        raise AssertionError('an unchanged report reached the writer')
    monkeypatch.setattr(inventory, '_Stored', refuse)

    ack = report.handle_report(HOST, [h.ok('fpga', h.fpga(CARD1),
                                           h.fpga(CARD0)), h.ok('gpu')])
    assert ack['changed'] is False


def test_an_unchanged_report_is_three_selects(db):
    _stored()
    with h.count_statements() as statements:
        ack = report.handle_report(HOST, [h.ok('fpga', h.fpga(CARD0),
                                               h.fpga(CARD1)), h.ok('gpu')])
    assert ack['changed'] is False
    # Devices with their control paths, deployables with their attach
    # handles, attributes (besides the transaction's own statements).
    assert [s for s in statements if s.startswith('SELECT')] == [
        'SELECT'] * 3
    assert not set(statements) - {'SELECT', 'BEGIN', 'ROLLBACK'}


def test_a_second_control_path_takes_the_writing_path(db):
    _stored()
    with session.writer() as s:
        device = s.query(models.Device).order_by(models.Device.id)[0]
        s.add(models.ControlpathId(uuid='1' * 36, device_id=device.id,
                                   cpid_type='PCI', cpid_info='{}'))
    assert not _matches(_scans(h.ok('fpga', h.fpga(CARD0), h.fpga(CARD1)),
                               h.ok('gpu')))


def _region(card, index=0):
    return card['deployables'][index]


def _edit(name):
    """Each a difference ``_apply`` would write (or refuse)."""
    card = h.fpga(CARD0)
    if name == 'device value':
        card['model'] = 'PAC D5005'
    elif name == 'health':
        card['health'] = 'unhealthy'
    elif name == 'health reason':
        card.update(health='degraded', health_reason='temperature 91 °C')
    elif name == 'region health':
        _region(card).update(health='unhealthy',
                             health_reason='port_errors 0x1')
    elif name == 'board info':
        card['std_board_info'] = {'device_id': '0b2b'}
    elif name == 'no pci address':
        card['pci_address'] = None
    elif name == 'region value':
        _region(card)['function_id'] = 'ab' * 16
    elif name == 'region memory':
        _region(card)['local_memory_mb'] = 8192
    elif name == 'attribute value':
        _region(card)['attributes']['slot'] = 7
    elif name == 'attribute added':
        _region(card)['attributes']['extra'] = 'x'
    elif name == 'attribute removed':
        _region(card)['attributes'].clear()
    elif name == 'trait':
        _region(card)['traits'].append('CUSTOM_NEW')
    elif name == 'handle type':
        _region(card)['attach_handles'][0]['attach_type'] = 'MDEV'
    elif name == 'handle info':
        _region(card)['attach_handles'][0]['attach_info']['function'] = '7'
    elif name == 'handle added':
        handles = _region(card)['attach_handles']
        handles.append(copy.deepcopy(handles[0]))
        handles[1]['attach_info']['function'] = '6'
    elif name == 'region removed':
        card['deployables'].pop()
    elif name == 'region added':
        extra = copy.deepcopy(_region(card, 1))
        extra['name'] = 'region2'
        extra['attach_handles'][0]['attach_info']['function'] = '3'
        card['deployables'].append(extra)
    return card


EDITS = ['device value', 'health', 'health reason', 'region health',
         'board info', 'no pci address',
         'region value', 'region memory', 'attribute value',
         'attribute added', 'attribute removed', 'trait', 'handle type',
         'handle info', 'handle added', 'region removed', 'region added']


@pytest.mark.parametrize('edit', EDITS)
def test_every_difference_takes_the_writing_path(db, edit):
    _stored()
    assert _matches(_scans(h.ok('fpga', h.fpga(CARD0), h.fpga(CARD1)),
                           h.ok('gpu')))
    assert not _matches(_scans(h.ok('fpga', _edit(edit), h.fpga(CARD1)),
                               h.ok('gpu')))


@pytest.mark.parametrize('reports', [
    pytest.param(lambda: [h.ok('fpga', h.fpga(CARD0))], id='device gone'),
    pytest.param(lambda: [h.ok('fpga', h.fpga(CARD0), h.fpga(CARD1),
                                h.fpga('0000:b0:00.0'))], id='new device'),
    pytest.param(lambda: [h.ok('fpga', h.fpga(CARD0), h.fpga(CARD1)),
                          h.ok('gpu', h.fpga('0000:b0:00.0'))],
                 id='device of another driver'),
])
def test_devices_added_or_gone_take_the_writing_path(db, reports):
    _stored()
    assert not _matches(_scans(*reports()))


def test_a_stored_row_the_scan_lacks_is_seen(db):
    # A handle kept for an ARQ after its scan lost it: the stored tree
    # has more than the report, and the device is marked unhealthy.
    _stored()
    with session.writer() as s:
        dep = s.query(models.Deployable).order_by(models.Deployable.id)[0]
        s.add(models.AttachHandle(uuid='0' * 36, deployable_id=dep.id,
                                  in_use=True, attach_type='PCI',
                                  attach_info='{"kept":"1"}'))
    assert not _matches(_scans(h.ok('fpga', h.fpga(CARD0), h.fpga(CARD1)),
                               h.ok('gpu')))


def test_every_value_a_report_sets_is_compared(db):
    # The check reads only some columns; each value the report's rows set
    # must be one of them, or every report would take the writing path.
    _stored()
    [want] = _scans(h.ok('fpga', h.fpga(CARD0)))['fpga']
    health = {'health', 'health_reason'}
    assert set(want['values']) | health <= set(inventory_diff._DEV_COLUMNS)
    for dep in want['deployables'].values():
        assert set(dep['values']) | health <= set(
            inventory_diff._DEP_COLUMNS)


@pytest.mark.parametrize('row', ['device', 'deployable'])
def test_a_value_the_check_does_not_read_takes_the_writing_path(db, row):
    _stored()
    scans = _scans(h.ok('fpga', h.fpga(CARD0), h.fpga(CARD1)), h.ok('gpu'))
    [want, _] = scans['fpga']
    if row == 'device':
        want['values']['status'] = 'enabled'
    else:
        next(iter(want['deployables'].values()))['values'][
            'driver_name'] = 'fpga'

    assert not _matches(scans)
