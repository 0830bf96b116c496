"""The agent's health monitor (agent/health.py): what it keeps across a
restart, when it writes its file, vanished devices, drivers without
health signals, and reports that stay unchanged while readings move."""
import json
import os

import pytest

from cyborg_lite.agent import health as health_mod
from cyborg_lite.agent import manager as agent_manager
from cyborg_lite.common import health
from cyborg_lite.drivers import base
from tests.unit.agent.scripted_driver import ScriptedDriver
from tests.unit.conductor import report_helpers as h

CARD = '0000:5e:00.0'


class SignalDriver(ScriptedDriver, base.HealthInterface):
    """A scripted driver whose health readings the test sets."""

    def __init__(self, conf, devices):
        super().__init__(conf, 'sig', devices)
        self.readings = {}      # identity -> [readings]
        self.region_readings = {}
        self.vanished = set()
        self.read_error = None

    def read_health(self, devices, missing):
        if self.read_error:
            raise self.read_error
        signals = {d.identity: health.Signals(
            list(self.readings.get(d.identity, [])),
            self.region_readings.get(d.identity, {})) for d in devices}
        for record in missing:
            if record.identity in self.vanished:
                signals[record.identity] = health.Signals([
                    health.Condition('pci', 'unhealthy', 'pci %s is gone '
                                     'from the PCI bus' % record.identity)])
        return signals


def _temp(value):
    return health.Gauge('temperature', value, '°C', (90.0, 'max'),
                        (95.0, 'crit'))


@pytest.fixture
def conf2(conf):
    conf.set_override('readings_to_fault', 2, group='health')
    conf.set_override('readings_to_clear', 2, group='health')
    return conf


def _monitor(conf, clock=None):
    kwargs = {'clock': clock} if clock else {}
    return health_mod.HealthMonitor(conf, 'node1', **kwargs)


def _apply(monitor, driver):
    return {r.identity: (r.health, r.health_reason)
            for r in monitor.apply(driver, driver.discover())}


def test_the_state_outlives_a_restart(conf2):
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    driver.readings[CARD] = [_temp(97.0)]
    first = _monitor(conf2)
    _apply(first, driver)
    assert _apply(first, driver)[CARD] == (
        'unhealthy', 'temperature 97 °C ≥ crit 95 °C')
    # Restarted with the card cool: still unhealthy, then recovering
    # after the window, never healthy at once.
    driver.readings[CARD] = [_temp(40.0)]
    second = _monitor(conf2)
    assert _apply(second, driver)[CARD][0] == 'unhealthy'
    assert _apply(second, driver)[CARD][0] == 'recovering'


def test_a_counter_that_grew_while_the_agent_was_down(conf2):
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    fatal = lambda n: [health.Counter('aer_dev_fatal', n, 'unhealthy')]
    driver.readings[CARD] = fatal(1)
    _apply(_monitor(conf2), driver)
    driver.readings[CARD] = fatal(3)
    restarted = _monitor(conf2)
    _apply(restarted, driver)
    assert _apply(restarted, driver)[CARD] == (
        'unhealthy', 'aer_dev_fatal grew from 1 to 3')


def test_the_file_is_written_only_when_something_changes(conf2,
                                                          monkeypatch):
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    monitor = _monitor(conf2)
    writes = []
    real = os.replace
    monkeypatch.setattr(os, 'replace',
                        lambda a, b: (writes.append(b), real(a, b)))
    # A temperature that moves every scan, below its thresholds.
    for value in range(40, 80):
        driver.readings[CARD] = [_temp(float(value)),
                                 health.Gauge('power', value * 1.5, 'W')]
        _apply(monitor, driver)
    assert len(writes) == 1          # the first state
    driver.readings[CARD] = [_temp(97.0)]
    _apply(monitor, driver)
    assert len(writes) == 2          # a finding: what unreadable keeps
    _apply(monitor, driver)
    assert len(writes) == 3          # the move to unhealthy
    for value in range(97, 120):
        driver.readings[CARD] = [_temp(float(value))]
        _apply(monitor, driver)
    assert len(writes) == 3


def test_readings_that_change_no_state_leave_the_report_unchanged(conf2):
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    agent = agent_manager.AgentManager(conf2, host='node1',
                                       drivers=[driver],
                                       conductor_api=object())
    hashes = set()
    for value in [40.0, 97.0, 96.0, 99.0, 98.5, 101.0, 97.5]:
        driver.readings[CARD] = [_temp(value)]
        [entry] = agent.scan()
        hashes.add(agent_manager.entry_hash(entry))
    # healthy (1st reading), then unhealthy once the window agreed.
    assert len(hashes) == 2
    assert entry['devices'][0]['health'] == 'unhealthy'
    # The reading that made the move; later values rewrite nothing.
    assert entry['devices'][0]['health_reason'] == \
        'temperature 96 °C ≥ crit 95 °C'


def test_a_region_s_own_signals(conf2):
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    driver.region_readings[CARD] = {'region1': [health.Condition(
        'port_errors', 'unhealthy', 'port_errors 0x1')]}
    monitor = _monitor(conf2)
    records = monitor.apply(driver, driver.discover())
    [region0, region1] = records[0].deployables
    assert records[0].health == 'healthy'
    assert (region0.health, region1.health, region1.health_reason) == (
        'healthy', 'unhealthy', 'port_errors 0x1')


GONE = ('unhealthy', 'pci 0000:5e:00.0 is gone from the PCI bus')


def _card_vanished(conf2, now):
    """(driver, monitor) after CARD left the bus, reported unhealthy;
    ``now``: the monitor's clock, [seconds]."""
    conf2.set_override('vanished_report_seconds', 60, group='health')
    driver = SignalDriver(conf2, [h.fpga(CARD), h.fpga('0000:af:00.0')])
    monitor = _monitor(conf2, clock=lambda: now[0])
    _apply(monitor, driver)
    driver.devices, driver.vanished = [h.fpga('0000:af:00.0')], {CARD}
    _apply(monitor, driver)
    assert _apply(monitor, driver)[CARD] == GONE
    return driver, monitor


def test_a_vanished_device_is_reported_then_dropped(conf2):
    now = [1000.0]
    driver, _first = _card_vanished(conf2, now)
    # Across a restart too: the state file keeps it.
    restarted = _monitor(conf2, clock=lambda: now[0])
    assert _apply(restarted, driver)[CARD][0] == 'unhealthy'
    now[0] += 61
    assert CARD not in _apply(restarted, driver)


def test_a_vanished_device_outlives_a_failed_read(conf2):
    now = [1000.0]
    driver, monitor = _card_vanished(conf2, now)
    # No reading says it came back: still reported, still unhealthy,
    # until its time is up.
    driver.read_error = RuntimeError('bug')
    assert _apply(monitor, driver)[CARD] == GONE
    now[0] += 61
    assert CARD not in _apply(monitor, driver)


def test_a_device_that_comes_back(conf2):
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    monitor = _monitor(conf2)
    _apply(monitor, driver)
    driver.devices, driver.vanished = [], {CARD}
    _apply(monitor, driver)
    _apply(monitor, driver)
    driver.devices, driver.vanished = [h.fpga(CARD)], set()
    assert _apply(monitor, driver)[CARD][0] == 'unhealthy'
    assert monitor.vanished['sig'] == {}


def test_a_device_merely_unlisted_is_not_kept(conf2):
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    monitor = _monitor(conf2)
    _apply(monitor, driver)
    driver.devices = []
    assert _apply(monitor, driver) == {}


def test_a_driver_without_signals_says_its_records_health(conf2):
    plain = ScriptedDriver(conf2, 'plain', [dict(
        h.fpga(CARD), health='degraded', health_reason='fan 2 stopped')])
    monitor = _monitor(conf2)
    assert _apply(monitor, plain)[CARD] == ('degraded', 'fan 2 stopped')


def test_a_driver_whose_health_read_fails_keeps_its_states(conf2, caplog):
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    driver.readings[CARD] = [_temp(97.0)]
    driver.region_readings[CARD] = {'region1': [health.Condition(
        'port_errors', 'unhealthy', 'port_errors 0x1')]}
    monitor = _monitor(conf2)
    _apply(monitor, driver)
    _apply(monitor, driver)
    unhealthy = ('unhealthy', 'temperature 97 °C ≥ crit 95 °C')
    driver.read_error = RuntimeError('bug')
    # A failed read is no reading: not a clear one either, however many
    # scans it lasts; the inventory still reaches the conductor.
    for _ in range(3 * conf2.health.readings_to_clear):
        [record] = monitor.apply(driver, driver.discover())
        assert (record.health, record.health_reason) == unhealthy
        assert [(d.health, d.health_reason) for d in record.deployables] == [
            ('healthy', None), ('unhealthy', 'port_errors 0x1')]
    failed = [r for r in caplog.records
              if 'failed to read health signals' in r.getMessage()]
    assert len(failed) == 1
    # Readable and cool again: the clear window starts only now.
    driver.read_error = None
    driver.readings[CARD] = [_temp(40.0)]
    assert _apply(monitor, driver)[CARD] == unhealthy
    assert _apply(monitor, driver)[CARD][0] == 'recovering'


def test_an_unreadable_state_file_starts_afresh(conf2):
    path = os.path.join(conf2.health.state_dir, 'node1.json')
    os.makedirs(os.path.dirname(path))
    for text in ('{', json.dumps({'version': 99}),
                 json.dumps({'version': 1, 'machines': {
                     '["sig", "x"]': ['sick', None, []]},
                     'memory': {}, 'vanished': {}})):
        with open(path, 'w') as f:
            f.write(text)
        monitor = _monitor(conf2)
        assert monitor.machines == {} and monitor.vanished == {}


def test_health_off_reports_what_drivers_say(conf2):
    conf2.set_override('enabled', False, group='health')
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    driver.readings[CARD] = [_temp(120.0)]
    monitor = _monitor(conf2)
    assert _apply(monitor, driver)[CARD] == ('healthy', None)
    assert not os.path.exists(conf2.health.state_dir)


# --- a device or region out of the host driver's view (handed over) ------

FATAL = health.Condition('catfatal_errors', 'unhealthy', 'catfatal_errors 0x4')


def test_a_device_handed_over_comes_back_in_the_state_it_left(conf2):
    """unhealthy -> unlisted while its function stays on the bus (bound to
    vfio-pci) -> back at a normal reading: still unhealthy, then
    recovering, never healthy at once."""
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    driver.readings[CARD] = [FATAL]
    monitor = _monitor(conf2)
    _apply(monitor, driver)
    assert _apply(monitor, driver)[CARD][0] == 'unhealthy'
    driver.devices = []
    for _ in range(20):
        assert _apply(monitor, driver) == {}
    assert list(monitor.absent['sig']) == [CARD]
    # An agent restart meanwhile keeps it too.
    monitor = _monitor(conf2)
    driver.devices, driver.readings[CARD] = [h.fpga(CARD)], []
    assert [_apply(monitor, driver)[CARD][0] for _ in range(4)] == [
        'unhealthy', 'recovering', 'recovering', 'healthy']
    assert monitor.absent['sig'] == {}


def test_a_device_that_leaves_in_a_scan_whose_read_fails_is_kept(conf2):
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    driver.readings[CARD] = [FATAL]
    monitor = _monitor(conf2)
    _apply(monitor, driver)
    _apply(monitor, driver)
    driver.devices, driver.read_error = [], RuntimeError('bug')
    _apply(monitor, driver)
    driver.devices, driver.read_error = [h.fpga(CARD)], None
    driver.readings[CARD] = []
    assert _apply(monitor, driver)[CARD][0] == 'unhealthy'


def test_a_region_in_a_guest_keeps_its_machine(conf2):
    region1 = {'region1': [health.Condition('port_errors', 'degraded',
                                            'port_errors 0x1')]}
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    driver.region_readings[CARD] = region1
    monitor = _monitor(conf2)
    _apply(monitor, driver)
    _apply(monitor, driver)
    card = h.fpga(CARD)
    # region1's VF handed to a guest: the card lists region0 only.
    driver.devices = [h.changed(card, deployables=card['deployables'][:1])]
    driver.region_readings[CARD] = {}
    for _ in range(10):
        monitor.apply(driver, driver.discover())
    driver.devices = [card]
    [record] = monitor.apply(driver, driver.discover())
    assert record.deployables[1].health == 'degraded'


def test_a_counter_that_grew_while_its_device_was_handed_over(conf2):
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    driver.readings[CARD] = [health.Counter('aer_dev_fatal', 1,
                                            'unhealthy')]
    monitor = _monitor(conf2)
    _apply(monitor, driver)
    driver.devices = []
    _apply(monitor, driver)
    driver.devices = [h.fpga(CARD)]
    driver.readings[CARD] = [health.Counter('aer_dev_fatal', 4,
                                            'unhealthy')]
    _apply(monitor, driver)
    assert _apply(monitor, driver)[CARD] == (
        'unhealthy', 'aer_dev_fatal grew from 1 to 4')


def test_a_device_handed_over_then_gone_from_the_bus(conf2):
    now = [1000.0]
    conf2.set_override('vanished_report_seconds', 60, group='health')
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    monitor = _monitor(conf2, clock=lambda: now[0])
    _apply(monitor, driver)
    driver.devices = []
    _apply(monitor, driver)
    driver.vanished = {CARD}
    _apply(monitor, driver)
    assert _apply(monitor, driver)[CARD] == GONE
    assert monitor.absent['sig'] == {}
    now[0] += 61
    assert _apply(monitor, driver) == {}
    # Gone for good: nothing of it kept (a new device if it comes back).
    assert [k for k in monitor.machines if k[1] == CARD] == []


def test_absent_devices_are_bounded(conf2, monkeypatch):
    monkeypatch.setattr(health_mod, 'MAX_ABSENT', 1)
    now = [1000.0]
    other = '0000:af:00.0'
    driver = SignalDriver(conf2, [h.fpga(CARD), h.fpga(other)])
    monitor = _monitor(conf2, clock=lambda: now[0])
    _apply(monitor, driver)
    driver.devices = [h.fpga(other)]
    _apply(monitor, driver)
    now[0] += 1
    driver.devices = []
    _apply(monitor, driver)
    # The one absent longest is forgotten first.
    assert list(monitor.absent['sig']) == [other]
    assert {k[1] for k in monitor.machines} == {other}


# --- an unreadable signal across a restart --------------------------------

UNREADABLE = health.Unreadable('catfatal_errors', 'EIO')


def test_an_unreadable_signal_keeps_its_finding_across_a_restart(conf2):
    """unhealthy -> its sensor unreadable -> restart: still unhealthy for
    as long as it cannot be read, not recovering then healthy."""
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    driver.readings[CARD] = [FATAL]
    monitor = _monitor(conf2)
    _apply(monitor, driver)
    _apply(monitor, driver)
    driver.readings[CARD] = [UNREADABLE]
    _apply(monitor, driver)
    restarted = _monitor(conf2)
    for _ in range(3 * conf2.health.readings_to_clear):
        assert _apply(restarted, driver)[CARD] == (
            'unhealthy', 'catfatal_errors 0x4')
    driver.readings[CARD] = []
    assert [_apply(restarted, driver)[CARD][0] for _ in range(4)] == [
        'unhealthy', 'recovering', 'recovering', 'healthy']


def test_a_restart_keeps_every_last_finding_not_only_the_state_s(conf2):
    """A finding that explains no state yet (one degraded reading), or
    one of another level than the state's, is kept across a restart as
    without one: the restart changes nothing of what is decided."""
    hot = _temp(93.0)                    # degraded: >= max 90
    unreadable_temp = health.Unreadable('temperature', 'EIO')
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    monitor = _monitor(conf2)
    driver.readings[CARD] = [_temp(40.0)]
    _apply(monitor, driver)
    driver.readings[CARD] = [hot]
    assert _apply(monitor, driver)[CARD][0] == 'healthy'
    driver.readings[CARD] = [unreadable_temp]
    restarted = _monitor(conf2)
    assert [_apply(restarted, driver)[CARD][0] for _ in range(3)] == [
        'healthy', 'degraded', 'degraded']

    # Unhealthy (catfatal) and hot (degraded); both unreadable over a
    # restart; then catfatal reads clear, the temperature still not.
    driver.readings[CARD] = [FATAL, hot]
    _apply(restarted, driver)
    assert _apply(restarted, driver)[CARD][0] == 'unhealthy'
    driver.readings[CARD] = [UNREADABLE, unreadable_temp]
    _apply(restarted, driver)
    again = _monitor(conf2)
    driver.readings[CARD] = [unreadable_temp]
    assert [_apply(again, driver)[CARD][0] for _ in range(4)] == [
        'unhealthy', 'recovering', 'recovering', 'degraded']


def test_a_file_of_the_previous_release_keeps_the_fault_too(conf2):
    """Its file has no last findings: what explains each unhealthy or
    degraded machine stands in for them."""
    path = os.path.join(conf2.health.state_dir, 'node1.json')
    os.makedirs(os.path.dirname(path))
    with open(path, 'w') as f:
        json.dump({'version': 1, 'machines': {
            json.dumps(['sig', CARD]): ['unhealthy', 'catfatal_errors 0x4',
                                        ['catfatal_errors']]},
            'memory': {}, 'vanished': {}}, f)
    driver = SignalDriver(conf2, [h.fpga(CARD)])
    driver.readings[CARD] = [UNREADABLE]
    monitor = _monitor(conf2)
    for _ in range(3 * conf2.health.readings_to_clear):
        assert _apply(monitor, driver)[CARD][0] == 'unhealthy'


def _previous_release_reads(path, to_fault=2, to_clear=2):
    """What the previous release's HealthMonitor._load takes from the
    file (its code, condensed): version 1, machines as [state, reason,
    signals], memory as dicts, vanished as {driver: {identity: [since,
    record]}}; anything else raises, and it starts afresh."""
    from cyborg_lite.common import device_records
    from cyborg_lite.common import states
    with open(path) as f:
        data = json.load(f)
    assert data.get('version') == 1
    machines = {tuple(json.loads(k)): states.HealthMachine(
        to_fault, to_clear, state, reason, signals)
        for k, (state, reason, signals) in data['machines'].items()}
    memory = {tuple(json.loads(k)): dict(v)
              for k, v in data['memory'].items()}
    for entries in data['vanished'].values():
        for _since, record in entries.values():
            device_records.DeviceRecord.from_dict(record)
    return machines, memory


def test_the_previous_release_reads_the_new_file(conf2):
    driver = SignalDriver(conf2, [h.fpga(CARD), h.fpga('0000:af:00.0')])
    driver.readings[CARD] = [FATAL, health.Counter('aer_dev_fatal', 2)]
    monitor = _monitor(conf2)
    _apply(monitor, driver)
    _apply(monitor, driver)
    driver.devices = [h.fpga(CARD)]
    _apply(monitor, driver)
    with open(monitor.path) as f:
        data = json.load(f)
    assert data['last'] and data['absent']['sig']
    machines, memory = _previous_release_reads(monitor.path)
    assert machines[('sig', CARD)].state == 'unhealthy'
    assert memory[('sig', CARD)]['counters'] == {'aer_dev_fatal': 2}
