"""conductor/report.py remembers each host's last valid report in its
exact form: the same report again skips validation and the building of
its rows, and anything validation would answer differently is validated
again."""
import logging

import pytest

from cyborg_lite.common import exception
from cyborg_lite.conductor import report
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.unit.conductor import report_helpers as h

HOST = 'node1'
CARD0 = '0000:5e:00.0'


@pytest.fixture
def validations(monkeypatch):
    """The reports validated, as (hostname, driver_reports)."""
    seen = []
    validate = report.validate

    def counting(hostname, driver_reports):
        seen.append(hostname)
        return validate(hostname, driver_reports)
    monkeypatch.setattr(report, 'validate', counting)
    return seen


def _report():
    return [h.ok('fpga', h.fpga(CARD0)), h.failed('gpu')]


def test_the_same_report_again_is_not_validated_again(sqlite_db,
                                                      validations):
    first = report.handle_report(HOST, _report())
    again = report.handle_report(HOST, _report())

    assert validations == [HOST]
    assert first['changed'] is True
    assert again == dict(first, changed=False, created=0)


def test_a_remembered_report_still_logs_its_failed_scans(sqlite_db, caplog):
    report.handle_report(HOST, _report())
    with caplog.at_level(logging.WARNING):
        ack = report.handle_report(HOST, _report())
    assert ack['drivers'] == {'fpga': 'applied', 'gpu': 'scan failed'}
    assert 'Driver gpu on node1 failed its scan' in caplog.text


def test_a_remembered_report_still_compares_the_database(sqlite_db):
    report.handle_report(HOST, _report())
    with session.writer() as s:
        s.query(models.Device).update({'model': 'edited'})
    ack = report.handle_report(HOST, _report())
    assert ack['changed'] is True
    assert [d.model for d in h.devices()] == ['PAC A10']


def _typed(kind):
    """The valid report with one value of a type validation refuses."""
    reports = _report()
    card = reports[0]['devices'][0]
    region = card['deployables'][0]
    if kind == 'bool for int':
        region['num_accelerators'] = True
    elif kind == 'float for int':
        region['local_memory_mb'] = 4096.0
    elif kind == 'tuple for list':
        card['deployables'] = tuple(card['deployables'])
    return reports


@pytest.mark.parametrize('kind', ['bool for int', 'float for int',
                                  'tuple for list'])
def test_a_report_equal_but_of_another_type_is_refused(sqlite_db, kind):
    report.handle_report(HOST, _report())
    before = h.snapshot()
    if kind != 'tuple for list':
        # What a memo keyed by == (or by JSON) would take for the same.
        assert _typed(kind) == _report()

    with pytest.raises(exception.InvalidReport):
        report.handle_report(HOST, _typed(kind))
    assert h.snapshot() == before


def test_a_bad_report_after_a_good_one_is_refused(sqlite_db):
    report.handle_report(HOST, _report())
    bad = _report()
    bad[0]['devices'][0]['deployables'][0]['traits'] = ['not a trait']
    with pytest.raises(exception.InvalidReport, match='not a valid'):
        report.handle_report(HOST, bad)


def test_each_caller_gets_its_own_rows(sqlite_db):
    form = report.ValidReports.form(HOST, _report())
    memo = report.ValidReports()
    memo.put(HOST, form, (), {'fpga': [{'values': {}}]}, hosts=1)
    drivers, scans = memo.get(HOST, form)
    scans['fpga'][0]['values']['model'] = 'changed by a caller'
    assert memo.get(HOST, form)[1] == {'fpga': [{'values': {}}]}


def test_the_least_recent_host_is_forgotten(sqlite_db, conf, validations):
    conf.set_override('report_memo_hosts', 1, group='conductor')
    report.handle_report('a', _report())
    report.handle_report('b', _report())
    report.handle_report('b', _report())
    report.handle_report('a', _report())
    assert validations == ['a', 'b', 'a']


def test_zero_hosts_validates_every_report(sqlite_db, conf, validations):
    conf.set_override('report_memo_hosts', 0, group='conductor')
    report.handle_report(HOST, _report())
    report.handle_report(HOST, _report())
    assert validations == [HOST, HOST]


@pytest.fixture
def read_only_compares(monkeypatch):
    """How many times apply_report compared the database read-only,
    before (and so without) the writer."""
    from cyborg_lite.db import inventory
    calls = []
    core_reader = session.core_reader

    def counting(*args, **kwargs):
        calls.append(kwargs)
        return core_reader(*args, **kwargs)
    monkeypatch.setattr(inventory.session, 'core_reader', counting)
    return calls


def _loaded(function_id):
    """The report with region0's function loaded."""
    reports = _report()
    reports[0]['devices'][0]['deployables'][0]['function_id'] = function_id
    return reports


def test_a_report_unlike_the_last_goes_to_the_writer(sqlite_db,
                                                     read_only_compares):
    report.handle_report(HOST, _report())
    # Nothing remembered yet for the host: compared read-only first.
    assert len(read_only_compares) == 1

    ack = report.handle_report(HOST, _loaded('f' * 32))
    assert ack['changed'] is True and ack['updated'] == 1
    assert len(read_only_compares) == 1
    [region] = [d for d in h.rows(models.Deployable) if d.name.endswith(
        'region0')]
    assert region.function_id == 'f' * 32

    # The same report again: compared read-only, no writer.
    with h.count_writes() as writes:
        again = report.handle_report(HOST, _loaded('f' * 32))
    assert again['changed'] is False and writes == []
    assert len(read_only_compares) == 2


def test_a_new_report_already_stored_writes_nothing(sqlite_db,
                                                    read_only_compares):
    """Another conductor applied this report already: the writer's own
    comparison finds nothing to write, and no publish is requested."""
    from cyborg_lite.db import inventory
    report.handle_report(HOST, _report())
    scans = {'fpga': [report.desired_device(HOST, r) for r in report.validate(
        HOST, _loaded('e' * 32))[0]['devices']]}
    assert inventory.apply_report(HOST, scans)   # the other conductor
    before = h.snapshot()

    with h.count_writes() as writes:
        ack = report.handle_report(HOST, _loaded('e' * 32))
    assert ack['changed'] is False
    assert writes == []
    assert h.snapshot() == before
    assert len(read_only_compares) == 2   # the first report, the other's


def test_a_host_not_remembered_is_compared_read_only(sqlite_db,
                                                     read_only_compares):
    report.handle_report(HOST, _report())
    report.VALID_REPORTS.clear()   # as after a restart
    with h.count_writes() as writes:
        ack = report.handle_report(HOST, _report())
    assert ack['changed'] is False and writes == []
    assert len(read_only_compares) == 2
