"""OutageLog: an outage is logged once, then at a bounded rate, and its
end once."""
import logging

from cyborg_lite.common import outage


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _outage(caplog):
    clock = _Clock()
    log = logging.getLogger('test.outage')
    caplog.set_level(logging.INFO, logger='test.outage')
    return outage.OutageLog('Database', log, interval=30, clock=clock), clock


def _lines(caplog):
    return [(r.levelname, r.getMessage()) for r in caplog.records]


def test_a_thousand_failures_in_a_minute_make_three_lines(caplog):
    out, clock = _outage(caplog)
    for i in range(1000):
        clock.now = 1000 + i * 0.06   # 60 s of failures
        out.failed('connection refused')
        out.succeeded()   # a pooled connection that still answered
    assert out.down
    lines = _lines(caplog)
    assert len(lines) == 2
    assert lines[0] == ('ERROR', 'Database unreachable: connection refused '
                        '(logged again at most every 30 s until it is '
                        'back)')
    assert lines[1][0] == 'ERROR' and lines[1][1].startswith(
        'Database still unreachable after 30 s, ')
    clock.now += 2
    out.succeeded()
    assert not out.down
    assert _lines(caplog)[2] == (
        'WARNING', 'Database reachable again: the outage ended after 61.9 '
                   's, 1000 operations failed during it')


def test_successes_without_an_outage_log_nothing(caplog):
    out, _clock = _outage(caplog)
    for _ in range(5):
        out.succeeded()
    assert _lines(caplog) == []


def test_a_second_outage_is_logged_afresh(caplog):
    out, clock = _outage(caplog)
    out.failed('refused')
    clock.now += 2
    out.succeeded()
    clock.now += 5
    out.failed('reset by peer')
    assert [m for _l, m in _lines(caplog)][2].startswith(
        'Database unreachable: reset by peer')


def test_successes_between_failures_do_not_end_the_outage(caplog):
    """A server going down or coming up answers some and refuses others:
    one outage, ended by the first success 2 s after the last failure."""
    out, clock = _outage(caplog)
    for _ in range(10):
        out.failed('shutting down')
        clock.now += 0.5
        out.succeeded()
        clock.now += 0.5
    assert out.down and len(_lines(caplog)) == 1
    clock.now += 1.5
    out.succeeded()
    assert not out.down
    assert [l for l, _m in _lines(caplog)] == ['ERROR', 'WARNING']
