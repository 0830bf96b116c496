"""Health readings as drivers report them, and what they mean.

A driver reads its hardware's own signals (drivers/base.HealthInterface)
and returns, per device, ``Signals``: readings of the device as a whole
and of each of its deployables where a signal is the region's own. Four
kinds of reading:

* ``Gauge`` - a value compared with thresholds the hardware gives
  (temperature against ``temp1_max`` / ``temp1_crit``); a value without
  thresholds (power) is only carried, for metrics;
* ``Counter`` - a cumulative count (AER errors, ECC errors): a fault is a
  count that grew since the last reading, never a count above zero;
* ``Condition`` - something wrong now (an error mask that is not zero, an
  FPGA manager in an error state, a link narrower than it can be);
* ``Unreadable`` - the signal could not be read this time: it changes
  nothing, the last finding of that signal stands.

``classify(readings, memory, hold)`` turns one scan's readings into
``Finding``s, the input of common/states.HealthMachine. ``memory`` is
what must outlive a scan (the last value of each counter, a grown
counter's finding held for ``hold`` readings so that one growth is seen
by the hysteresis window); it is plain data the agent keeps on disk.

Signal names are Kubernetes label values (letters, digits, ``-_.``): the
first one of a reason names the device taint's value.
"""
import dataclasses
import re

LEVELS = ('degraded', 'unhealthy')
SIGNAL_RE = re.compile(r'[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?')


def _check_signal(signal):
    if not isinstance(signal, str) or not SIGNAL_RE.fullmatch(signal):
        raise ValueError('bad signal name %r' % (signal,))


def _check_level(level):
    if level not in LEVELS:
        raise ValueError('bad health level %r' % (level,))


@dataclasses.dataclass(frozen=True)
class Finding:
    """What one reading says is wrong now."""
    signal: str
    level: str
    text: str


@dataclasses.dataclass(frozen=True)
class Gauge:
    """``value`` in ``unit``; ``warn`` and ``fault`` are (threshold, name)
    pairs or None: at or above ``warn`` the device is degraded, at or
    above ``fault`` unhealthy."""
    signal: str
    value: float
    unit: str
    warn: tuple | None = None
    fault: tuple | None = None

    def __post_init__(self):
        _check_signal(self.signal)


@dataclasses.dataclass(frozen=True)
class Counter:
    """A cumulative count; growth of at least ``step`` since the last
    reading is a finding of ``level`` (None: carried for metrics only),
    described by ``text`` when the count alone says little (the time of
    the newest error). ``counts`` is False for a value that only grows
    with each event without counting them (the time of the newest
    error): metrics leave it out."""
    signal: str
    value: int
    level: str | None = None
    step: int = 1
    text: str | None = None
    counts: bool = True

    def __post_init__(self):
        _check_signal(self.signal)
        if self.level is not None:
            _check_level(self.level)


@dataclasses.dataclass(frozen=True)
class Condition:
    """Something wrong now, with the text a person reads."""
    signal: str
    level: str
    text: str

    def __post_init__(self):
        _check_signal(self.signal)
        _check_level(self.level)


@dataclasses.dataclass(frozen=True)
class Unreadable:
    """The signal could not be read this time (the error, for the log)."""
    signal: str
    error: str

    def __post_init__(self):
        _check_signal(self.signal)


@dataclasses.dataclass
class Signals:
    """One device's readings: its own, and {deployable name: readings}
    for signals a region has of its own."""
    device: list = dataclasses.field(default_factory=list)
    deployables: dict = dataclasses.field(default_factory=dict)


def _number(value):
    return '%g' % value


def _gauge_finding(reading):
    for level, limit in (('unhealthy', reading.fault),
                         ('degraded', reading.warn)):
        if limit is not None and reading.value >= limit[0]:
            return Finding(reading.signal, level, '%s %s %s ≥ %s %s %s' % (
                reading.signal, _number(reading.value), reading.unit,
                limit[1], _number(limit[0]), reading.unit))
    return None


def _counter_finding(reading, memory, hold):
    counters = memory.setdefault('counters', {})
    previous = counters.get(reading.signal)
    counters[reading.signal] = reading.value
    if previous is None or reading.value - previous < max(reading.step, 1) \
            or reading.level is None:
        # NOTE: the first reading is the baseline, and a count that went
        # down was reset (a driver reload): neither is a new error.
        return
    memory.setdefault('held', {})[reading.signal] = [
        reading.level, reading.text or '%s grew from %d to %d' % (
            reading.signal, previous, reading.value), hold]


def classify(readings, memory, hold):
    """The findings of one scan's ``readings``, updating ``memory`` (a
    dict, kept between scans by the caller); ``hold``: how many readings
    a grown counter's finding lasts."""
    findings = []
    last = memory.get('last', {})
    now = {}
    for reading in readings:
        found = None
        if isinstance(reading, Gauge):
            found = _gauge_finding(reading)
        elif isinstance(reading, Counter):
            _counter_finding(reading, memory, hold)
        elif isinstance(reading, Condition):
            found = Finding(reading.signal, reading.level, reading.text)
        elif isinstance(reading, Unreadable):
            kept = last.get(reading.signal)
            found = Finding(*kept) if kept else None
        else:
            raise TypeError('not a health reading: %r' % (reading,))
        if found is not None:
            now[found.signal] = [found.signal, found.level, found.text]
            findings.append(found)
    # NOTE: what this scan found, and no more: a signal that is fine now
    # (a mask back to 0 reads as no Condition) leaves nothing to carry.
    memory['last'] = now
    held = memory.get('held', {})
    for signal in sorted(held):
        level, text, left = held[signal]
        findings.append(Finding(signal, level, text))
        if left <= 1:
            del held[signal]
        else:
            held[signal][2] = left - 1
    return findings


def metric_readings(readings):
    """The readings metrics show: the gauges, and the counters that
    count."""
    return tuple(r for r in readings if isinstance(r, Gauge) or (
        isinstance(r, Counter) and r.counts))
