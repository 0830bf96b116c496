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

A device (or region) a scan no longer lists whose function stays on the
bus is merely out of the host driver's view: handed to vfio-pci for a
guest, or rebound. It is not reported, but its machines and readings'
memory are kept (``absent``), for as long as its function is on the bus,
so that it comes back in the state it left, a fault still a fault
(unhealthy, then recovering), a counter compared with its last value. A
region missing from a listed device keeps its machine while the device
is there. What is kept is bounded by the host's hardware: the devices
whose functions are on its bus, and the regions each of them has had
(at most MAX_ABSENT absent devices per driver, the oldest forgotten
first). A device that leaves the bus is forgotten once it is no longer
reported as vanished: put back, it is a new PCI device.

What must outlive the agent (each machine's state and reason, counters'
last values, the last findings, vanished and absent devices) is kept in
``[health]state_dir``/<host>.json, rewritten whole (write and rename)
only when it changed. The file's ``version`` stays 1: later releases
only add keys (``last``, ``absent``), which an earlier one ignores, and
read a file without them as before.
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
# Absent devices kept per driver (a safety net: a host's bus holds far
# fewer functions a driver serves).
MAX_ABSENT = 256
# A machine's state -> the level of the findings that explain it.
_STATE_LEVEL = {'degraded': 'degraded', 'unhealthy': 'unhealthy'}


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
        # driver -> {identity: [since, record]}: left the scan, still on
        # the bus (handed over); their machines and memory are kept.
        self.absent = {}
        # key -> the last findings as last written, see _last_to_save.
        self._saved_last = {}
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
        for table in (self.vanished, self.absent):
            for identity, (_since, record) in table.get(name, {}).items():
                if identity not in current and identity not in missing:
                    missing[identity] = \
                        device_records.DeviceRecord.from_dict(record)
        missing = list(missing.values())
        signals = self._read(driver, records, missing)
        if signals is None:
            # No observation: every machine keeps its state and reason.
            kept = self._still_vanished(name, current)
            for record in records + kept:
                self._recall(name, record)
            # Nothing says a device that left is gone from the bus.
            self._note_absent(name, [
                r for r in missing
                if r.identity not in self.vanished.get(name, {})], {},
                current)
            self.values[name] = {}
        else:
            kept = self._vanished(name, missing, signals, current)
            self._note_absent(name, missing, signals, current)
            self._observe_all(driver, records + kept, signals)
        self.seen[name] = {r.identity: r for r in records}
        self._forget(name, {r.identity for r in records + kept} |
                     set(self.absent.get(name, ())))
        self._save()
        return records + kept

    def _observe_all(self, driver, records, signals):
        """Feed one reading to the machines of ``records``."""
        values = {}
        own_signals = isinstance(driver, base.HealthInterface)
        for record in records:
            own = signals.get(record.identity, health.Signals())
            self._observe_device(driver.name, record, own, own_signals)
            values[record.identity] = Readings(
                health.metric_readings(own.device),
                {dep.name: health.metric_readings(
                    own.deployables.get(dep.name, ()))
                 for dep in record.deployables})
        self.values[driver.name] = values

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
        for target, key in [(record, _key(name, record.identity))] + [
                (dep, _key(name, record.identity, dep.name))
                for dep in record.deployables]:
            machine = self.machines.get(key)
            if machine is not None:
                target.health, target.health_reason = (machine.state,
                                                       machine.reason)

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

    def _note_absent(self, name, missing, signals, current):
        """Keep, as absent, the missing devices no reading says are gone
        from the bus (handed over); drop those back or gone."""
        absent = self.absent.setdefault(name, {})
        now = self.clock()
        for record in missing:
            own = signals.get(record.identity)
            if own is not None and own.device:
                absent.pop(record.identity, None)
            elif record.identity not in absent:
                LOG.info('Device %s of driver %s left the scan and is still '
                         'on the bus (handed over); its health is kept until '
                         'it is back', record.identity, name)
                absent[record.identity] = [now, record.to_dict()]
        for identity in [i for i in absent if i in current]:
            del absent[identity]
        for identity, _entry in sorted(
                absent.items(), key=lambda item: item[1][0])[:max(
                    0, len(absent) - MAX_ABSENT)]:
            LOG.warning('Forgetting the health of device %s of driver %s: '
                        'more than %d devices absent', identity, name,
                        MAX_ABSENT)
            del absent[identity]

    def _observe_device(self, name, record, signals, own_signals):
        extra = () if own_signals else _driver_findings(name, record)
        key = _key(name, record.identity)
        record.health, record.health_reason = self._observe(
            key, signals.device, extra)
        for dep in record.deployables:
            key = _key(name, record.identity, dep.name)
            dep.health, dep.health_reason = self._observe(
                key, signals.deployables.get(dep.name, []))

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

    def _forget(self, name, identities):
        """Drop the machines and memory of the driver's devices not in
        ``identities`` (those reported, and those absent), with their
        regions'. A region a kept device no longer lists keeps its own
        (its VF handed to a guest comes back to it)."""
        for table in (self.machines, self.memory, self._saved_last):
            for key in [k for k in table
                        if k[0] == name and k[1] not in identities]:
                del table[key]

    # --- the state file ----------------------------------------------------

    def _snapshot(self):
        last = {json.dumps(k): self._last_to_save(k, v.get('last'))
                for k, v in sorted(self.memory.items())}
        return {
            'version': FORMAT_VERSION,
            'machines': {json.dumps(k): [m.state, m.reason, list(m.signals)]
                         for k, m in sorted(self.machines.items())},
            'memory': {json.dumps(k): {part: v[part]
                                       for part in ('counters', 'held')
                                       if v.get(part)}
                       for k, v in sorted(self.memory.items())
                       if v.get('counters') or v.get('held')},
            'vanished': {d: v for d, v in sorted(self.vanished.items())
                         if v},
            # Added keys (an earlier release ignores them): the last
            # findings, which an unreadable signal keeps across a restart
            # (common/health.classify), and the absent devices.
            'last': {k: v for k, v in last.items() if v},
            'absent': {d: v for d, v in sorted(self.absent.items()) if v},
        }

    def _last_to_save(self, key, last):
        """The last findings of ``key`` to write: as written before while
        each signal keeps its level, so that a text that changes with its
        value (a temperature) never rewrites the file; its level is what
        an unreadable scan keeps."""
        if not last:
            self._saved_last.pop(key, None)
            return None
        before = self._saved_last.get(key)
        if before is not None and _levels(before) == _levels(last):
            return before
        self._saved_last[key] = copy.deepcopy(last)
        return self._saved_last[key]

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
            self.absent = {d: dict(v) for d, v in
                           data.get('absent', {}).items()}
            for table in (self.vanished, self.absent):
                for entries in table.values():
                    for since, record in entries.values():
                        device_records.DeviceRecord.from_dict(record)
            self._load_last(data)
        except FileNotFoundError:
            return
        except Exception as e:
            LOG.warning('Health state in %s is unreadable (%s: %s); each '
                        'device starts again from its next reading',
                        self.path, type(e).__name__, e)
            self.machines, self.memory, self.vanished = {}, {}, {}
            self.absent, self._saved_last = {}, {}
            return
        self._written = json.dumps(self._snapshot(), sort_keys=True)

    def _load_last(self, data):
        """The last findings into each key's memory: as written, or, from
        a file of an earlier release (no ``last``), what explains each
        degraded or unhealthy machine's state."""
        if 'last' in data:
            stored = {_stored_key(k): _checked_last(v)
                      for k, v in data['last'].items()}
        else:
            stored = {key: {signal: [signal, _STATE_LEVEL[m.state],
                                     m.reason or signal]
                            for signal in m.signals}
                      for key, m in self.machines.items()
                      if m.state in _STATE_LEVEL and m.signals}
        for key, last in stored.items():
            self.memory.setdefault(key, {})['last'] = last
            self._saved_last[key] = copy.deepcopy(last)


def _stored_key(text):
    key = tuple(json.loads(text))
    if len(key) not in (2, 3) or not all(isinstance(p, str) for p in key):
        raise ValueError('bad key %r' % text)
    return key


def _levels(last):
    return {signal: finding[1] for signal, finding in last.items()}


def _checked_last(last):
    """{signal: [signal, level, text]} as written, or ValueError."""
    for signal, finding in last.items():
        health.Finding(*finding)
        if finding[0] != signal or finding[1] not in health.LEVELS:
            raise ValueError('bad last finding %r' % (finding,))
    return {signal: list(finding) for signal, finding in last.items()}


def _driver_findings(name, record):
    """A driver without HealthInterface says only ``record.health``."""
    level = {'degraded': 'degraded',
             'unhealthy': 'unhealthy'}.get(record.health)
    if level is None:
        return ()
    return (health.Finding('driver', level, record.health_reason or
                           'driver %s reports it %s' % (name, level)),)
