"""The health machine's hysteresis and the classification of readings
(common/states.HealthMachine, common/health.classify)."""
import random

import pytest

from cyborg_lite.common import health
from cyborg_lite.common import states

HOT = health.Finding('temperature', 'unhealthy',
                     'temperature 97 °C ≥ crit 95 °C')
WARM = health.Finding('temperature', 'degraded',
                      'temperature 91 °C ≥ max 90 °C')
FATAL = health.Finding('catfatal_errors', 'unhealthy', 'catfatal_errors 0x4')
LEVEL = {None: [], 'degraded': [WARM], 'unhealthy': [HOT]}


def _machine(to_fault=2, to_clear=3, state='healthy'):
    return states.HealthMachine(to_fault, to_clear, state)


def _run(machine, levels):
    """The states after each reading, and the readings that moved it."""
    moves, seen = [], []
    for index, level in enumerate(levels):
        before = machine.state
        machine.observe(LEVEL[level])
        if machine.state != before:
            assert states.HEALTH.allows(before, machine.state)
            moves.append(index)
        seen.append(machine.state)
    return seen, moves


def test_a_fault_takes_two_readings_and_the_way_back_passes_recovering():
    machine = _machine()
    seen, _moves = _run(machine, ['unhealthy'] * 2 + [None] * 6)
    assert seen == ['healthy', 'unhealthy', 'unhealthy', 'unhealthy',
                    'recovering', 'recovering', 'recovering', 'healthy']


def test_the_window_that_made_each_move():
    machine = _machine(2, 3)
    windows = []
    for level in ['unhealthy'] * 2 + [None] * 6 + ['degraded'] * 2:
        before = machine.state
        machine.observe(LEVEL[level])
        if machine.state != before:
            windows.append((machine.state, machine.window))
    assert windows == [('unhealthy', 2), ('recovering', 3), ('healthy', 3),
                       ('degraded', 2)]


def test_degraded_and_back():
    seen, _ = _run(_machine(), ['degraded', 'degraded', None, None, None])
    assert seen == ['healthy', 'degraded', 'degraded', 'degraded',
                    'healthy']


def test_a_fault_while_recovering_needs_the_window_again():
    machine = _machine(state='recovering')
    seen, _ = _run(machine, ['unhealthy', None, 'unhealthy', 'unhealthy'])
    assert seen == ['recovering', 'recovering', 'recovering', 'unhealthy']


def test_recovering_ends_degraded_when_a_warning_remains():
    machine = _machine(state='recovering')
    seen, _ = _run(machine, ['degraded', None, None])
    assert seen[-1] == 'degraded'


@pytest.mark.parametrize('pair', [(None, 'unhealthy'),
                                  ('degraded', 'unhealthy'),
                                  (None, 'degraded')])
def test_ten_thousand_readings_alternating_around_a_threshold(pair):
    # A sensor hovering at its threshold flips every scan: never two
    # readings in a row agree on a worse state, so nothing moves (the
    # warning side of a degraded/unhealthy pair moves once, to degraded).
    machine = _machine()
    _seen, moves = _run(machine, [pair[i % 2] for i in range(10000)])
    assert len(moves) <= 1
    assert machine.state in ('healthy', 'degraded')


@pytest.mark.parametrize('to_fault,to_clear', [(1, 1), (2, 3), (3, 2),
                                               (5, 5)])
def test_noise_never_moves_the_state_faster_than_its_window(to_fault,
                                                            to_clear):
    rng = random.Random(31 * to_fault + to_clear)
    machine = _machine(to_fault, to_clear)
    levels = [rng.choice([None, 'degraded', 'unhealthy'])
              for _ in range(10000)]
    _seen, moves = _run(machine, levels)
    gaps = [b - a for a, b in zip(moves, moves[1:])]
    assert moves and min(gaps) >= min(to_fault, to_clear)


def test_the_first_reading_sets_the_state_without_waiting():
    machine = states.HealthMachine(2, 3)
    assert machine.observe([FATAL]) is True
    assert (machine.state, machine.reason) == ('unhealthy',
                                               'catfatal_errors 0x4')
    fresh = states.HealthMachine(2, 3)
    fresh.observe([])
    assert (fresh.state, fresh.reason) == ('healthy', None)


def test_the_reason_is_the_readings_that_caused_the_move():
    machine = _machine()
    machine.observe([HOT])
    machine.observe([HOT, WARM])
    assert machine.reason == 'temperature 97 °C ≥ crit 95 °C'
    machine = _machine()
    both = [FATAL, HOT]
    machine.observe(both)
    machine.observe(both)
    assert machine.reason == ('catfatal_errors 0x4; '
                              'temperature 97 °C ≥ crit 95 °C')
    assert machine.signals == ('catfatal_errors', 'temperature')


def _unhealthy(finding):
    machine = _machine()
    machine.observe([finding])
    machine.observe([finding])
    assert machine.state == 'unhealthy'
    return machine


def test_a_value_that_changes_every_scan_keeps_the_reason():
    machine = _unhealthy(HOT)
    reason = machine.reason
    for temp in range(96, 120):
        hotter = health.Finding('temperature', 'unhealthy',
                                'temperature %d °C ≥ crit 95 °C' % temp)
        assert machine.observe([hotter]) is False
    assert machine.reason == reason


def test_another_cause_rewrites_the_reason_once_it_holds():
    machine = _unhealthy(HOT)
    # Alternating causes: the reason stays.
    for _ in range(50):
        assert machine.observe([FATAL]) is False
        assert machine.observe([HOT]) is False
    assert machine.observe([FATAL]) is False
    assert machine.observe([FATAL]) is True
    assert (machine.state, machine.reason) == ('unhealthy',
                                               'catfatal_errors 0x4')


def test_recovering_says_what_cleared_and_healthy_says_nothing():
    machine = _machine(2, 1)
    machine.observe([FATAL])
    machine.observe([FATAL])
    machine.observe([])
    assert (machine.state, machine.reason) == (
        'recovering', 'catfatal_errors 0x4 (cleared)')
    machine.observe([])
    assert (machine.state, machine.reason) == ('healthy', None)


def test_a_long_reason_is_cut_to_the_column():
    long = health.Finding('x', 'unhealthy', 'x' * 400)
    machine = states.HealthMachine(1, 1)
    machine.observe([long])
    assert len(machine.reason) == states.MAX_HEALTH_REASON
    machine.observe([])
    assert len(machine.reason) == states.MAX_HEALTH_REASON
    assert machine.reason.endswith('(cleared)')


def test_the_graph():
    assert states.HEALTH.states == ('healthy', 'degraded', 'unhealthy',
                                    'recovering')
    # Back from unhealthy only through recovering.
    assert states.HEALTH.targets('unhealthy') == ('recovering',)
    assert states.HEALTH.sources('healthy') == ('degraded', 'recovering')
    with pytest.raises(ValueError):
        states.HealthMachine(1, 1, 'sick')


# --- classify -----------------------------------------------------------

def _classify(readings, memory, hold=2):
    return [(f.signal, f.level, f.text)
            for f in health.classify(readings, memory, hold)]


def test_gauges_against_their_thresholds():
    def temp(value):
        return health.Gauge('temperature', value, '°C', (90.0, 'max'),
                            (95.0, 'crit'))
    memory = {}
    assert _classify([temp(40.0)], memory) == []
    assert _classify([temp(91.0)], memory) == [
        ('temperature', 'degraded', 'temperature 91 °C ≥ max 90 °C')]
    assert _classify([temp(97.0)], memory) == [
        ('temperature', 'unhealthy', 'temperature 97 °C ≥ crit 95 °C')]
    # At the threshold is at it.
    assert _classify([temp(95.0)], memory)[0][1] == 'unhealthy'
    # A gauge without thresholds is carried only.
    assert _classify([health.Gauge('power', 300.0, 'W')], memory) == []


def test_a_counter_that_grows_is_a_fault_held_for_the_window():
    memory = {}
    fatal = lambda n: [health.Counter('aer_dev_fatal', n, 'unhealthy')]
    # The first reading is the baseline, whatever it is.
    assert _classify(fatal(3), memory) == []
    assert _classify(fatal(3), memory) == []
    grown = [('aer_dev_fatal', 'unhealthy', 'aer_dev_fatal grew from 3 to 5')]
    assert _classify(fatal(5), memory, hold=2) == grown
    # Held for the window, then gone although the count stays at 5.
    assert _classify(fatal(5), memory, hold=2) == grown
    assert _classify(fatal(5), memory, hold=2) == []
    for _ in range(20):
        assert _classify(fatal(5), memory) == []


def test_a_counter_reset_or_one_without_a_level_is_no_fault():
    memory = {}
    _classify([health.Counter('ecc', 7, 'unhealthy')], memory)
    assert _classify([health.Counter('ecc', 0, 'unhealthy')], memory) == []
    assert _classify([health.Counter('ecc', 1, 'unhealthy')], memory)
    info = {}
    _classify([health.Counter('aer_dev_correctable', 1)], info)
    assert _classify([health.Counter('aer_dev_correctable', 9)], info) == []


def test_a_counter_step():
    memory = {}
    cor = lambda n: [health.Counter('aer_dev_correctable', n, 'degraded',
                                    step=10)]
    _classify(cor(0), memory)
    assert _classify(cor(9), memory) == []
    assert _classify(cor(19), memory)[0][2] == \
        'aer_dev_correctable grew from 9 to 19'


def test_an_unreadable_signal_keeps_its_last_finding():
    memory = {}
    mask = health.Condition('catfatal_errors', 'unhealthy',
                            'catfatal_errors 0x4')
    assert _classify([mask], memory)
    gone = health.Unreadable('catfatal_errors', 'EIO')
    assert _classify([gone], memory) == [
        ('catfatal_errors', 'unhealthy', 'catfatal_errors 0x4')]
    assert _classify([], memory) == []
    assert _classify([gone], memory) == []


def test_signal_names_are_label_values():
    with pytest.raises(ValueError):
        health.Condition('bad name', 'unhealthy', 'x')
    with pytest.raises(ValueError):
        health.Condition('x', 'sick', 'x')
    with pytest.raises(ValueError):
        health.Counter('x', 1, 'recovering')


def test_metrics_show_gauges_and_counts_never_a_time_or_a_condition():
    readings = [
        health.Gauge('temperature', 41.0, '°C'),
        health.Counter('aer_dev_fatal', 2, 'unhealthy'),
        # The time of the newest error (Xilinx's asynchronous errors)
        # grows with each but counts nothing.
        health.Counter('async_error', 1733371200, 'degraded', counts=False),
        health.Condition('link_width', 'degraded', 'link_width x8 < x16'),
        health.Unreadable('power', 'EIO')]
    assert health.metric_readings(readings) == tuple(readings[:2])
