"""Polling until a state settles, with each change reported once."""
import pytest

from cyborg_lite.cli import client
from cyborg_lite.cli import waiting


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_reports_each_change_and_returns_the_final_object():
    states = iter(['Initial', 'BindStarted', 'BindStarted', 'Bound'])
    changes = []
    clock = Clock()
    obj = waiting.wait_for_state(
        lambda: {'state': next(states)}, ('Bound', 'BindFailed'), 10,
        report=lambda old, new: changes.append((old, new)),
        clock=clock, sleep=clock.sleep)
    assert obj == {'state': 'Bound'}
    assert changes == [(None, 'Initial'), ('Initial', 'BindStarted'),
                       ('BindStarted', 'Bound')]


def test_times_out_with_the_last_state():
    clock = Clock()
    with pytest.raises(client.ClientError, match='still BindStarted'):
        waiting.wait_for_state(lambda: {'state': 'BindStarted'},
                               ('Bound',), 3, interval=1, clock=clock,
                               sleep=clock.sleep)
    assert clock.now == 3


def test_state_reporter_writes_lines():
    lines = []

    class Stream:
        def write(self, text):
            lines.append(text)

        def flush(self):
            pass
    report = waiting.state_reporter(Stream(), label='arq1: ')
    report(None, 'Initial')
    report('Initial', 'Bound')
    assert lines == ['arq1: (start) -> Initial\n', 'arq1: Initial -> Bound\n']
