"""Two conductors applying reports of one host at once do not corrupt it."""
import threading

from cyborg_lite.conductor import report
from cyborg_lite.db import models
from tests.unit.conductor import report_helpers as h

HOST = 'node1'
CARDS = ['0000:%02x:00.0' % bus for bus in (0x3b, 0x5e, 0xaf, 0xd8)]


def _race(*reports):
    """Apply each report from its own thread, all released at once."""
    barrier = threading.Barrier(len(reports))
    results = [None] * len(reports)

    def run(i, entries):
        barrier.wait()
        try:
            results[i] = report.handle_report(HOST, entries)
        except Exception as exc:  # reported by the assertion below
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i, r))
               for i, r in enumerate(reports)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def _assert_one_tree_per_card(models_expected):
    devs = h.devices(HOST)
    assert [d.identity for d in devs] == sorted(CARDS)
    assert sorted(d.model for d in devs) in models_expected
    assert len(h.rows(models.ControlpathId)) == len(CARDS)
    assert len(h.rows(models.Deployable)) == 2 * len(CARDS)
    assert len(h.rows(models.AttachHandle)) == 2 * len(CARDS)
    assert len(h.rows(models.Attribute)) == 2 * 4 * len(CARDS)


def test_same_first_report_twice_at_once(db):
    entries = [h.ok('fpga', *[h.fpga(c) for c in CARDS])]

    results = _race(entries, entries)

    assert all(isinstance(r, dict) for r in results), results
    # One of them created everything; the other found it done.
    assert sorted(r['changed'] for r in results) == [False, True]
    _assert_one_tree_per_card([['PAC A10'] * len(CARDS)])


def test_different_reports_at_once_leave_one_of_them(db):
    report.handle_report(HOST, [h.ok('fpga', *[h.fpga(c) for c in CARDS])])
    a = [h.ok('fpga', *[h.fpga(c, model='A') for c in CARDS])]
    b = [h.ok('fpga', *[h.fpga(c, model='B') for c in CARDS])]

    results = _race(a, b)

    assert all(isinstance(r, dict) for r in results), results
    # Serialised, not interleaved: all cards carry the last writer's model.
    _assert_one_tree_per_card([['A'] * len(CARDS), ['B'] * len(CARDS)])
