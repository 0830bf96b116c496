"""The agent's health monitor: drivers' signals to each device's health.

On every scan, for each driver that found its devices, the monitor asks
the driver for their health signals (drivers/base.HealthInterface),
classifies them (common/health.classify: a counter is compared with its
last reading, a gauge with its thresholds) and feeds the findings to one
common/states.HealthMachine per device and per region. The records the
agent reports then carry the machines' states and reasons, never the
readings: a temperature that changes every scan leaves the report, and so
the conductor's database, Placement and Kubernetes, untouched.

A device a successful scan no longer lists is asked about once more: if
its PCI function is gone from the bus, it is reported (its last known
inventory) with that finding for ``[health]vanished_report_seconds``, so
schedulers see it unhealthy instead of silently losing it.

What must outlive the agent (each machine's state and reason, counters'
last values, vanished devices) is kept in ``[health]state_dir``/<host>
.json, rewritten whole (write and rename) only when it changed.
"""
import collections
import copy
import json
import logging
import os
import time

from cyborg_lite.common import device_records
from cyborg_lite.common import health
from cyborg_lite.common import states
from cyborg_lite.drivers import base

LOG = logging.getLogger(__name__)
FORMAT_VERSION = 1


# What metrics show of a device's last reading: its own gauges and
# counters, and {deployable name: gauges and counters} of its regions.
Readings = collections.namedtuple('Readings', ['device', 'regions'])


def _key(driver, identity, deployable=None):
    """(driver, identity) of a device, (driver, identity, name) of a
    region; a JSON list in the state file."""
    return (driver, identity) if deployable is None else \
        (driver, identity, deployable)


class HealthMonitor:
    """One per agent; ``apply`` is called with each driver's scan."""

    def __init__(self, conf, host, clock=time.time):
        group = conf.health
        self.enabled = group.enabled
        self.to_fault = group.readings_to_fault
        self.to_clear = group.readings_to_clear
        self.path = os.path.join(group.state_dir,
                                 '%s.json' % host.replace(os.sep, '_'))
        self.vanished_for = group.vanished_report_seconds
        self.clock = clock
        self.machines = {}        # key -> HealthMachine
        self.memory = {}          # key -> classify memory
        self.seen = {}            # driver -> {identity: DeviceRecord}
        self.vanished = {}        # driver -> {identity: [since, record]}
        # driver -> {identity: Readings} of the last scan, for metrics
        # (agent/health_metrics.py); each driver's
        # dict is replaced whole, never changed, so a scrape from
        # another thread reads one scan.
        self.values = {}
        self.failing = set()      # drivers whose last health read failed
        self._written = None
        self._load()

    # --- a scan ------------------------------------------------------------

    def apply(self, driver, records):
        """The records to report for one driver's successful scan:
        ``records`` with their health, and the vanished devices."""
        if not self.enabled:
            return records
        name = driver.name
        current = {r.identity: r for r in records}
        missing = {i: r for i, r in self.seen.get(name, {}).items()
                   if i not in current}
        for identity, (_since, record) in self.vanished.get(name,
                                                             {}).items():
            if identity not in current and identity not in missing:
                missing[identity] = device_records.DeviceRecord.from_dict(
                    record)
        missing = list(missing.values())
        signals = self._read(driver, records, missing)
        if signals is None:
            # No observation: every machine keeps its state and reason.
            kept = self._still_vanished(name, current)
            touched = set().union(*(self._recall(name, r)
                                    for r in records + kept))
            self.values[name] = {}
        else:
            kept = self._vanished(name, missing, signals, current)
            touched = self._observe_all(driver, records + kept, signals)
        self.seen[name] = {r.identity: r for r in records}
        self._forget(name, touched)
        self._save()
        return records + kept

    def _observe_all(self, driver, records, signals):
        """Feed one reading to the machines of ``records``; the keys of
        the machines fed."""
        touched, values = set(), {}
        own_signals = isinstance(driver, base.HealthInterface)
        for record in records:
            own = signals.get(record.identity, health.Signals())
            touched |= self._observe_device(driver.name, record, own,
                                            own_signals)
            values[record.identity] = Readings(
                health.metric_readings(own.device),
                {dep.name: health.metric_readings(
                    own.deployables.get(dep.name, ()))
                 for dep in record.deployables})
        self.values[driver.name] = values
        return touched

    def _read(self, driver, records, missing):
        """{identity: Signals}, or None when the driver failed to read."""
        if not isinstance(driver, base.HealthInterface):
            return {}
        try:
            signals = driver.read_health(records, missing) or {}
        except Exception:
            # NOTE: a driver's bug must not stop its inventory reaching
            # the conductor, nor pass for readings that all cleared
            # (an unhealthy device offered again): the scan is no
            # observation. Said once per run of failures.
            if driver.name not in self.failing:
                LOG.exception('Driver %s failed to read health signals; its '
                              'devices keep their health states until a '
                              'read succeeds', driver.name)
            self.failing.add(driver.name)
            return None
        if driver.name in self.failing:
            LOG.info('Driver %s reads health signals again', driver.name)
            self.failing.discard(driver.name)
        return signals

    def _recall(self, name, record):
        """Give ``record`` and its regions their machines' states and
        reasons without a reading; a device with no machine yet keeps what
        its driver said until its first reading."""
        touched = set()
        for target, key in [(record, _key(name, record.identity))] + [
                (dep, _key(name, record.identity, dep.name))
                for dep in record.deployables]:
            machine = self.machines.get(key)
            if machine is not None:
                target.health, target.health_reason = (machine.state,
                                                       machine.reason)
                touched.add(key)
        return touched

    def _still_vanished(self, name, current):
        """The vanished devices to keep reporting when no reading says
        whether they are still gone from the bus."""
        now = self.clock()
        return [device_records.DeviceRecord.from_dict(record)
                for identity, (since, record) in
                self.vanished.get(name, {}).items()
                if identity not in current
                and now - since < self.vanished_for]

    def _vanished(self, name, missing, signals, current):
        """The missing records to keep reporting: gone from the bus, and
        not for longer than vanished_report_seconds."""
        now = self.clock()
        known = self.vanished.setdefault(name, {})
        kept = []
        for record in missing:
            own = signals.get(record.identity)
            if own is None or not own.device:
                known.pop(record.identity, None)
                continue
            since = known.get(record.identity, [now])[0]
            if now - since >= self.vanished_for:
                LOG.warning('Device %s of driver %s vanished %d s ago; no '
                            'longer reported', record.identity, name,
                            now - since)
                known.pop(record.identity, None)
                continue
            if record.identity not in known:
                LOG.warning('Device %s of driver %s vanished: %s',
                            record.identity, name,
                            '; '.join(getattr(r, 'text', r.signal)
                                      for r in own.device))
            known[record.identity] = [since, record.to_dict()]
            kept.append(copy.deepcopy(record))
        for identity in list(known):
            if identity in current:
                LOG.info('Device %s of driver %s is back', identity, name)
                del known[identity]
        return kept

    def _observe_device(self, name, record, signals, own_signals):
        extra = () if own_signals else _driver_findings(name, record)
        key = _key(name, record.identity)
        record.health, record.health_reason = self._observe(
            key, signals.device, extra)
        touched = {key}
        for dep in record.deployables:
            key = _key(name, record.identity, dep.name)
            dep.health, dep.health_reason = self._observe(
                key, signals.deployables.get(dep.name, []))
            touched.add(key)
        return touched

    def _observe(self, key, readings, extra=()):
        memory = self.memory.setdefault(key, {})
        findings = health.classify(readings, memory, self.to_fault)
        findings += list(extra)
        machine = self.machines.get(key)
        if machine is None:
            machine = self.machines[key] = states.HealthMachine(
                self.to_fault, self.to_clear)
        before = machine.state
        if machine.observe(findings) and machine.state != before:
            LOG.info('Health of %s: %s -> %s after %s (%s)',
                     ' '.join(key), before or 'new', machine.state,
                     '%d readings' % machine.window if before else
                     'its first reading',
                     machine.reason or 'all signals clear')
        return machine.state, machine.reason

    def _forget(self, name, touched):
        for table in (self.machines, self.memory):
            for key in [k for k in table
                        if k[0] == name and k not in touched]:
                del table[key]

    # --- the state file ----------------------------------------------------

    def _snapshot(self):
        return {
            'version': FORMAT_VERSION,
            'machines': {json.dumps(k): [m.state, m.reason, list(m.signals)]
                         for k, m in sorted(self.machines.items())},
            # NOTE: the last findings ('last') are left out: a reading's
            # text changes with its value, and it is only a stand-in for
            # one unreadable scan.
            'memory': {json.dumps(k): {part: v[part]
                                       for part in ('counters', 'held')
                                       if v.get(part)}
                       for k, v in sorted(self.memory.items())
                       if v.get('counters') or v.get('held')},
            'vanished': {d: v for d, v in sorted(self.vanished.items())
                         if v},
        }

    def _save(self):
        text = json.dumps(self._snapshot(), sort_keys=True)
        if text == self._written:
            return
        tmp = '%s.tmp.%d' % (self.path, os.getpid())
        try:
            os.makedirs(os.path.dirname(self.path) or '.', exist_ok=True)
            with open(tmp, 'w') as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError as e:
            LOG.warning('Cannot keep the health state in %s (%s); a restart '
                        'will start it again from the next readings',
                        self.path, e)
            return
        self._written = text

    def _load(self):
        if not self.enabled:
            return
        try:
            with open(self.path) as f:
                text = f.read()
            data = json.loads(text)
            if data.get('version') != FORMAT_VERSION:
                raise ValueError('format %r' % (data.get('version'),))
            self.machines = {
                _stored_key(key): states.HealthMachine(
                    self.to_fault, self.to_clear, state, reason, signals)
                for key, (state, reason, signals) in
                data['machines'].items()}
            self.memory = {_stored_key(k): dict(v)
                           for k, v in data['memory'].items()}
            self.vanished = {d: dict(v) for d, v in
                             data['vanished'].items()}
            for entries in self.vanished.values():
                for since, record in entries.values():
                    device_records.DeviceRecord.from_dict(record)
        except FileNotFoundError:
            return
        except Exception as e:
            LOG.warning('Health state in %s is unreadable (%s: %s); each '
                        'device starts again from its next reading',
                        self.path, type(e).__name__, e)
            self.machines, self.memory, self.vanished = {}, {}, {}
            return
        self._written = json.dumps(self._snapshot(), sort_keys=True)


def _stored_key(text):
    key = tuple(json.loads(text))
    if len(key) not in (2, 3) or not all(isinstance(p, str) for p in key):
        raise ValueError('bad key %r' % text)
    return key


def _driver_findings(name, record):
    """A driver without HealthInterface says only ``record.health``."""
    level = {'degraded': 'degraded',
             'unhealthy': 'unhealthy'}.get(record.health)
    if level is None:
        return ()
    return (health.Finding('driver', level, record.health_reason or
                           'driver %s reports it %s' % (name, level)),)
