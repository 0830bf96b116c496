"""Bad reports are rejected whole: error logged, nothing stored changes."""
import logging

import pytest

from cyborg_lite.common import exception
from cyborg_lite.conductor import report
from tests.unit.conductor import report_helpers as h

HOST = 'node1'
CARD0 = '0000:5e:00.0'
CARD1 = '0000:af:00.0'


BAD = 'xilinx'


def _with_dep(**fields):
    card = h.fpga(CARD1)
    card['deployables'][0].update(fields)
    return [h.ok(BAD, card)]


def _dup_handles():
    card = h.fpga(CARD1)
    card['deployables'][0]['attach_handles'] *= 2
    return [h.ok(BAD, card)]


# case -> (bad entries, what the error names)
BAD_REPORTS = {
    'duplicate identity': (lambda: [h.ok(BAD, h.fpga(CARD1),
                                         h.fpga(CARD1))],
                           'more than once'),
    'unknown device type': (lambda: [h.ok(BAD, h.changed(
        h.fpga(CARD1), type='TPU'))], "type: must be one of .*'TPU'"),
    'negative memory': (lambda: _with_dep(local_memory_mb=-1),
                        'local_memory_mb'),
    'absurd accelerators': (lambda: _with_dep(num_accelerators=10 ** 9),
                            'num_accelerators'),
    'missing vendor': (lambda: [h.ok(BAD, h.changed(h.fpga(CARD1),
                                                     vendor=None))],
                       'vendor'),
    'devices not a list': (lambda: [dict(h.ok(BAD), devices='x')],
                           'devices must be a list'),
    'entry not an object': (lambda: [BAD], 'must be an object'),
    'ok not a boolean': (lambda: [dict(h.ok(BAD), ok='yes')],
                         'ok must be true or false'),
    'bad pci address': (lambda: [h.ok(BAD, h.changed(
        h.fpga(CARD1), pci_address='5e:00.0'))], 'pci_address'),
    'bad trait': (lambda: _with_dep(traits=['not a trait']),
                  'not a valid resource class or trait'),
    'reserved attribute': (lambda: _with_dep(attributes={'trait0': 'x'}),
                           'reserved'),
    'unreported note': (lambda: _with_dep(attributes={
        'unreported_since': 'x'}), 'reserved'),
    'duplicate attach handles': (_dup_handles, 'duplicate attach handles'),
    'driver twice': (lambda: [h.ok('fpga')], 'appears twice'),
    'identity in two drivers': (lambda: [h.ok(BAD, h.fpga(CARD1)),
                                         h.ok('pci', h.fpga(CARD1))],
                                'reported by both'),
}


@pytest.mark.parametrize('case', sorted(BAD_REPORTS))
def test_bad_report_changes_nothing(db, caplog, case):
    report.handle_report(HOST, [h.ok('fpga', h.fpga(CARD0))])
    before = h.snapshot()
    entries, message = BAD_REPORTS[case]
    # A good change rides along; it must not be stored either.
    bad = [h.ok('fpga', h.changed(h.fpga(CARD0), model='new'))] + entries()

    with caplog.at_level(logging.ERROR):
        with pytest.raises(exception.InvalidReport, match=message) as info:
            report.handle_report(HOST, bad)

    assert h.snapshot() == before
    assert HOST in str(info.value)
    assert str(info.value) in caplog.text


def test_device_claimed_by_another_driver_changes_nothing(db, caplog):
    # Found only in the database, after a good new device was inserted.
    report.handle_report(HOST, [h.ok('fpga', h.fpga(CARD0))])
    before = h.snapshot()

    with caplog.at_level(logging.ERROR):
        with pytest.raises(exception.InvalidReport,
                           match='driver fpga already reported'):
            report.handle_report(HOST, [h.ok('aaa', h.fpga(CARD1)),
                                        h.ok('pci', h.fpga(CARD0))])

    assert h.snapshot() == before
    assert 'already reported' in caplog.text


def test_bad_hostname_is_rejected(sqlite_db):
    with pytest.raises(exception.InvalidReport, match='hostname'):
        report.handle_report('', [h.ok('fpga', h.fpga(CARD0))])
    assert h.devices() == []
