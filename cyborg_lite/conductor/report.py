"""Applying an agent report: validate all of it, then one diff transaction.

The message (ConductorAPI.report, RPC 1.0)::

    hostname = 'node1'
    driver_reports = [
        {'driver': 'fake', 'ok': True, 'error': None,
         'devices': [DeviceRecord.to_dict(), ...]},
        {'driver': 'nvidia', 'ok': False, 'devices': [],
         'error': 'nvidia-smi -q -x exited 9'},
    ]

A driver the agent leaves out, or one with ``ok`` false, changes nothing:
the devices it reported last stay until a successful scan of that driver
no longer lists them. The answer is the acknowledgement::

    {'hostname': 'node1', 'changed': True,
     'drivers': {'fake': 'applied', 'nvidia': 'scan failed'},
     'created': 7, 'updated': 0, 'deleted': 0, 'kept_in_use': 0,
     'returned': 0}

``returned``: kept regions the host reports again (out of its driver's
view until now); the conductor then starts the clean any of them waits
for (db/cleaning.py). An agent reads ``changed`` only.

Any bad part (malformed record, unknown type, duplicate identity, absurd
value) rejects the whole report with InvalidReport before a row changes.

A host's report equal, in its exact form, to its last valid one (nearly
every periodic report) is neither validated nor turned into rows again:
``ValidReports`` remembers the rows it stood for. The database is still
compared every time; only the work that depends on the report alone is
skipped. A report that differs from the host's remembered one goes
straight to the writer (db/inventory.apply_report, ``expect_change``),
without first comparing the database read-only: that comparison only
spares an unchanged report the writer, and the writer compares again.
"""
import collections
import json
import marshal
import re
import threading

from oslo_log import log as logging

from cyborg_lite.common import canonical_json
from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import resources
from cyborg_lite.common import shared_functions
from cyborg_lite.common import topology
from cyborg_lite.conductor import health
from cyborg_lite.conf import CONF
from cyborg_lite.db import cleaning as cleaning_db
from cyborg_lite.db import host_topology
from cyborg_lite.db import inventory
from cyborg_lite.placement import naming

LOG = logging.getLogger(__name__)

# Standard names (FPGA, PGPU, VGPU, ...) and CUSTOM_* ones, as Placement
# spells them; anything else Placement would refuse later, less clearly.
_PLACEMENT_NAME_RE = re.compile(r'^[A-Z][A-Z0-9_]{0,254}$')
# Attribute keys the conductor itself writes: from resource_class /
# traits, and the note of a kept region its host no longer reports.
_RESERVED_ATTRIBUTE_RE = re.compile(r'^(rc|trait[0-9]+|%s)$'
                                    % re.escape(cleaning_db.UNREPORTED))
MAX_DRIVERS = 64
MAX_DEVICES_PER_DRIVER = 4096
MAX_COLUMN = 255


class ValidReports:
    """The last valid report of each host and the rows it stands for.

    A report is keyed by its exact form: marshal's bytes (version 2, which
    has no back-references, so the bytes depend on the values only).
    marshal keeps apart every type validation tells apart (True from 1,
    1.0 from 1, a tuple from a list, an int key from a str one) and
    refuses subclasses, so equal bytes are an input validation would
    answer exactly the same way (validation and the rows depend on the
    hostname and the report only). A report marshal cannot write is
    validated every time. The rows are kept marshalled too: each caller
    gets its own copy, and a host costs ~20 KB (8 cards x 2 regions).
    """

    def __init__(self):
        self._lock = threading.Lock()
        # hostname -> (form, ((driver, ok, error), ...), marshalled scans)
        self._last = collections.OrderedDict()

    @staticmethod
    def form(hostname, driver_reports):
        """The exact form of a report, or None."""
        try:
            return marshal.dumps((hostname, driver_reports), 2)
        except ValueError:
            return None

    def get(self, hostname, form):
        """(drivers, scans) if ``form`` is the host's last valid report."""
        with self._lock:
            last = self._last.get(hostname)
            if last is None or last[0] != form:
                return None
            self._last.move_to_end(hostname)
        return last[1], marshal.loads(last[2])

    def remembers(self, hostname):
        """Whether a valid report of ``hostname`` is remembered."""
        with self._lock:
            return hostname in self._last

    def put(self, hostname, form, drivers, scans, hosts):
        """Remember a valid report; at most ``hosts`` hosts, the least
        recently reporting forgotten first."""
        entry = (form, drivers, marshal.dumps(scans, 2))
        with self._lock:
            self._last[hostname] = entry
            self._last.move_to_end(hostname)
            while len(self._last) > hosts:
                self._last.popitem(last=False)

    def clear(self):
        with self._lock:
            self._last.clear()


VALID_REPORTS = ValidReports()


# A valid report: (driver, ok, error) per entry, {driver: [wanted
# device]}, and whether it is not the host's last valid report (so its
# rows are expected to differ from the stored ones).
Checked = collections.namedtuple('Checked', ['drivers', 'scans', 'new'])


def _checked(hostname, driver_reports):
    """The Checked of a valid report; raises InvalidReport."""
    hosts = CONF.conductor.report_memo_hosts
    form = ValidReports.form(hostname, driver_reports) if hosts else None
    if form is not None:
        known = VALID_REPORTS.get(hostname, form)
        if known is not None:
            return Checked(*known, new=False)
    entries = validate(hostname, driver_reports)
    drivers = tuple((e['driver'], e['ok'], e['error']) for e in entries)
    scans = {e['driver']: [desired_device(hostname, r)
                           for r in e['devices']]
             for e in entries if e['ok']}
    # NOTE: a host with nothing remembered (a conductor just started, or
    # the memo off) is most likely unchanged: not new.
    new = form is not None and VALID_REPORTS.remembers(hostname)
    if form is not None:
        VALID_REPORTS.put(hostname, form, drivers, scans, hosts)
    return Checked(drivers, scans, new)


def _checked_nodes(hostname, numa_nodes):
    if numa_nodes is None:
        return None
    try:
        return topology.check_numa_nodes(numa_nodes)
    except exception.Invalid as exc:
        raise _invalid(hostname, exc.kwargs.get('reason', str(exc)))


def handle_report(hostname, driver_reports, numa_nodes=None):
    """Validate and apply one report; return the acknowledgement dict.

    ``numa_nodes``: the host's NUMA nodes (common/topology.py), None when
    the agent sent none (unchanged since acknowledged, or an older
    agent)."""
    try:
        nodes = _checked_nodes(hostname, numa_nodes)
        drivers, scans, new = _checked(hostname, driver_reports)
        for driver, ok, error in drivers:
            if not ok:
                LOG.warning('Driver %s on %s failed its scan (%s); keeping '
                            'the devices it reported last', driver,
                            hostname, error)
        changes = inventory.apply_report(
            hostname, scans, attempts=CONF.conductor.report_retries,
            expect_change=new)
    except exception.InvalidReport as exc:
        LOG.error('%s', exc)
        raise
    if changes:
        LOG.info('Applied report of %s: %s', hostname, changes)
    nodes_changed = nodes is not None and host_topology.save(hostname, nodes)
    if nodes_changed:
        LOG.info('Stored the %d NUMA nodes of %s', len(nodes), hostname)
    _tell_holders(hostname, changes.health_moves)
    return {
        'hostname': hostname,
        'changed': bool(changes) or nodes_changed,
        'drivers': {driver: 'applied' if ok else 'scan failed'
                    for driver, ok, _error in drivers},
        'created': changes.created, 'updated': changes.updated,
        'deleted': changes.deleted, 'kept_in_use': changes.kept_in_use,
        'returned': changes.returned,
    }


def _tell_holders(hostname, moves):
    if not moves:
        return
    try:
        health.tell_holders(hostname, moves)
    except Exception:
        # NOTE: the rows are committed; a holder not named in the log
        # must not fail the report (the agent would send it again).
        LOG.exception('Could not name the holders of %s after a change '
                      'of health', hostname)


def _invalid(hostname, reason):
    return exception.InvalidReport(host=hostname, reason=reason)


def validate(hostname, driver_reports):
    """Return the entries with ``devices`` as DeviceRecords, or raise."""
    if not isinstance(hostname, str) or not 0 < len(hostname) <= MAX_COLUMN:
        raise _invalid(hostname, 'hostname must be a non-empty string')
    if not isinstance(driver_reports, list) or \
            len(driver_reports) > MAX_DRIVERS:
        raise _invalid(hostname, 'driver_reports must be a list of at most '
                                 '%d entries' % MAX_DRIVERS)
    entries = [_validate_entry(hostname, e, i)
               for i, e in enumerate(driver_reports)]
    seen_drivers = set()
    owners = {}
    for entry in entries:
        if entry['driver'] in seen_drivers:
            raise _invalid(hostname, 'driver %s appears twice'
                           % entry['driver'])
        seen_drivers.add(entry['driver'])
        for record in entry['devices']:
            other = owners.setdefault(record.identity, entry['driver'])
            if other != entry['driver']:
                raise _invalid(hostname, 'device %s is reported by both '
                               '%s and %s' % (record.identity, other,
                                              entry['driver']))
    return entries


def _validate_entry(hostname, entry, index):
    path = 'driver_reports[%d]' % index
    if not isinstance(entry, dict):
        raise _invalid(hostname, '%s must be an object' % path)
    driver = entry.get('driver')
    if not isinstance(driver, str) or not 0 < len(driver) <= 64:
        raise _invalid(hostname, '%s.driver must be a name of at most 64 '
                                 'characters, got %r' % (path, driver))
    ok = entry.get('ok')
    error = entry.get('error')
    if not isinstance(ok, bool) or not (error is None or
                                        isinstance(error, str)):
        raise _invalid(hostname, '%s: ok must be true or false and error a '
                                 'string or null' % path)
    if not ok:
        return {'driver': driver, 'ok': False, 'devices': [],
                'error': (error or 'unknown error')[:1000]}
    devices = entry.get('devices')
    if not isinstance(devices, list) or \
            len(devices) > MAX_DEVICES_PER_DRIVER:
        raise _invalid(hostname, '%s.devices must be a list of at most %d '
                                 'devices' % (path, MAX_DEVICES_PER_DRIVER))
    records = []
    for i, data in enumerate(devices):
        try:
            record = device_records.DeviceRecord.from_dict(
                data, '%s(%s).devices[%d]' % (path, driver, i))
        except exception.Invalid as exc:
            raise _invalid(hostname, exc.kwargs.get('reason', str(exc)))
        _check_device(hostname, driver, record)
        records.append(record)
    identities = [r.identity for r in records]
    dups = sorted({i for i in identities if identities.count(i) > 1})
    if dups:
        raise _invalid(hostname, 'driver %s reports identities %s more than '
                                 'once' % (driver, ', '.join(dups)))
    return {'driver': driver, 'ok': True, 'devices': records, 'error': None}


def _check_device(hostname, driver, record):
    where = 'driver %s device %s' % (driver, record.identity)
    for dep in record.deployables:
        here = '%s deployable %s' % (where, dep.name)
        if len(device_records.deployable_db_name(
                hostname, record.identity, dep.name)) > MAX_COLUMN:
            raise _invalid(hostname, '%s: name too long' % here)
        for name in [dep.resource_class] + dep.traits:
            if not _PLACEMENT_NAME_RE.match(name):
                raise _invalid(hostname, '%s: %r is not a valid resource '
                                         'class or trait name' % (here, name))
        for key in dep.attributes:
            if _RESERVED_ATTRIBUTE_RE.match(key) or len(key) > MAX_COLUMN:
                raise _invalid(hostname, '%s: attribute key %r is reserved '
                                         'or too long' % (here, key))
        infos = [canonical_json.dumps(h.attach_info)
                 for h in dep.attach_handles]
        if len(set(infos)) != len(infos):
            raise _invalid(hostname, '%s: duplicate attach handles' % here)
        if any(len(info) > MAX_COLUMN for info in infos):
            raise _invalid(hostname, '%s: attach_info longer than %d '
                                     'characters' % (here, MAX_COLUMN))


def desired_device(hostname, record):
    """The rows one validated DeviceRecord stands for (inventory's input)."""
    shared = record.shared_groups()
    cpid_info = None
    if record.pci_address:
        domain, bus, rest = record.pci_address.split(':')
        device, function = rest.split('.')
        cpid_info = canonical_json.dumps({'domain': domain, 'bus': bus,
                                          'device': device,
                                          'function': function})
    return {
        'identity': record.identity,
        'health': record.health,
        'health_reason': record.health_reason,
        'cpid_info': cpid_info,
        'values': {
            'type': record.type, 'vendor': record.vendor,
            'model': record.model, 'pci_address': record.pci_address,
            'std_board_info': canonical_json.dumps(record.std_board_info),
            'vendor_board_info': canonical_json.dumps(
                record.vendor_board_info),
            'rp_uuid': naming.rp_uuid(naming.device_rp_name(
                hostname, record.identity)),
            **_topology_values(record.topology, with_bus_id=False),
        },
        'deployables': {
            device_records.deployable_db_name(
                hostname, record.identity, dep.name): _desired_deployable(
                    hostname, record.identity, dep,
                    _rp_name(hostname, record, dep, shared),
                    dep.topology or record.topology)
            for dep in record.deployables},
    }


def _rp_name(hostname, record, dep, shared):
    """The provider offering ``dep`` (``shared``: the record's
    shared_groups()): the provider tree's (placement/tree.py), so a
    stored rp_uuid is never rewritten."""
    if shared_functions.offered_by_card(
            (d.name, d.traits) for d in record.deployables):
        return naming.device_rp_name(hostname, record.identity)
    group = shared.get(dep.name)
    if group is None or dep.resource_class in \
            resources.WHOLE_DEVICE_RESOURCE_CLASSES:
        return naming.deployable_rp_name(hostname, record.identity,
                                         dep.name, dep.resource_class)
    return shared_functions.carrier_rp_name(
        naming.device_rp_name(hostname, record.identity), dep.name, group,
        [d.name for d in record.deployables])


_NO_TOPOLOGY = device_records.TopologyRecord()


def _topology_values(place, with_bus_id=True):
    """The topology columns of a device (its bus id is pci_address) or of
    a deployable (its own function's place, else its device's)."""
    place = place or _NO_TOPOLOGY
    values = {'numa_node': place.numa_node,
              'local_cpulist': place.local_cpulist,
              'socket': place.socket, 'pcie_root': place.pcie_root}
    if with_bus_id:
        values['pci_bus_id'] = place.pci_bus_id
    return values


def _desired_deployable(hostname, identity, dep, rp_name, place):
    attributes = {'rc': dep.resource_class}
    # NOTE: sorted, so a driver listing traits in another order is no change.
    for i, trait in enumerate(sorted(set(dep.traits))):
        attributes['trait%d' % i] = trait
    for key, value in dep.attributes.items():
        attributes[key] = value if isinstance(value, str) else \
            json.dumps(value)
    return {
        'health': dep.health,
        'health_reason': dep.health_reason,
        'values': {
            'num_accelerators': dep.num_accelerators,
            'region_type': dep.region_type,
            'function_id': dep.function_id,
            'function_name': dep.function_name,
            'local_memory_mb': dep.local_memory_mb,
            'rp_uuid': naming.rp_uuid(rp_name),
            **_topology_values(place),
        },
        'attributes': attributes,
        'handles': {canonical_json.dumps(h.attach_info): h.attach_type
                    for h in dep.attach_handles},
    }
