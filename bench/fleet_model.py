"""The fleet bench's model, shared with bench/fleet_processes.py and
bench/change_cost.py: the simulated hosts' reports (``Fleet``), the
conductor under test with its counters (``Conductor``), and the
configuration they run under (``configure``).
"""
import collections
from concurrent import futures
import os
import random
import re
import threading
import time

import sqlalchemy as sa

from bench import common
from bench import cpu

REGION_TYPE = '9346116d5a7d4b3a9b1b8e5b5d7a1c2e'   # as the scheduler test
FUNCTION_ID = 'd8424dc4a4a3c413f89e433683f9040b'   # the fake's initial one
REGION_MEMORY_MB = 4096


def hostname(index):
    return 'fleet-%05d' % index


def device_record(card, regions, functions):
    """One FPGA card as the fake driver reports it (to_dict form)."""
    bus = '%02x' % (0x5e + card)
    address = '0000:%s:00.0' % bus
    deployables = []
    for region in range(regions):
        deployables.append({
            'name': 'region%d' % region,
            'resource_class': 'FPGA',
            'num_accelerators': 1,
            'region_type': REGION_TYPE,
            'function_id': functions[(card, region)],
            'function_name': None,
            'local_memory_mb': REGION_MEMORY_MB,
            'traits': ['CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_INTEL_PAC_A10'],
            'attributes': {'port': 'dfl-port.%d' % (card * regions + region)},
            'attach_handles': [{
                'attach_type': 'PCI',
                'attach_info': {'domain': '0000', 'bus': bus,
                                'device': '00', 'function': str(region + 1)},
            }],
        })
    return {
        'type': 'FPGA', 'vendor': '0x8086', 'model': 'Intel PAC Arria 10 GX',
        'identity': address, 'pci_address': address, 'health': 'healthy',
        'std_board_info': {'vendor_id': '0x8086', 'device_id': '0x09c4'},
        'vendor_board_info': {'ports': regions, 'simulated': True},
        'deployables': deployables,
    }


class Fleet:
    """The report of every host; ``change(pct)`` reprograms some regions.

    ``functions`` 0: every region starts with the fake's function and each
    change loads a function never seen before (a new trait for Placement
    each time: the worst case). N >= 2: the fleet's N bitstreams, loaded
    round-robin at the start, and a change loads another of them (traits
    Placement already has: a fleet's usual day)."""

    def __init__(self, hosts, cards, regions, seed=42, functions=0):
        self.hosts = hosts
        self.cards = cards
        self.regions = regions
        self.random = random.Random(seed)
        self.pool = ['%032x' % self.random.getrandbits(128)
                     for _ in range(functions)]
        keys = [(h, c, r) for h in range(hosts) for c in range(cards)
                for r in range(regions)]
        self.functions = {
            key: self.pool[i % len(self.pool)] if self.pool else FUNCTION_ID
            for i, key in enumerate(keys)}

    def report(self, host):
        functions = {(c, r): self.functions[(host, c, r)]
                     for c in range(self.cards) for r in range(self.regions)}
        return [{'driver': 'fake', 'ok': True, 'error': None,
                 'devices': [device_record(c, self.regions, functions)
                             for c in range(self.cards)]}]

    def change(self, pct):
        """Load a new function into ``pct``% of all regions; the keys."""
        keys = sorted(self.functions)
        count = max(1, round(len(keys) * pct / 100.0))
        changed = self.random.sample(keys, count)
        for key in changed:
            self.functions[key] = self._another(self.functions[key])
        return changed

    def _another(self, current):
        if not self.pool:
            return '%032x' % self.random.getrandbits(128)
        return self.random.choice([f for f in self.pool if f != current])


class StatementCounter:
    """SQL statements by first keyword, from the engine's cursor events."""

    def __init__(self, engine):
        self.counts = collections.Counter()
        self._lock = threading.Lock()
        sa.event.listen(engine, 'before_cursor_execute', self._count)

    def _count(self, conn, cursor, statement, *args):
        kind = statement.lstrip().split(None, 1)[0].upper()
        with self._lock:
            self.counts[kind] += 1

    def snapshot(self):
        counts = dict(self.counts)
        writes = sum(counts.get(k, 0) for k in ('INSERT', 'UPDATE',
                                                 'DELETE'))
        return {'statements': sum(counts.values()), 'writes': writes,
                'by_kind': counts}

    def reset(self):
        self.counts.clear()


def configure(state_dir, placement_url, db_url=None):
    from keystoneauth1 import loading as ks_loading

    from cyborg_lite.common import config
    from cyborg_lite.conf import CONF
    config.parse_args([], default_config_files=[])
    CONF.set_override('connection', db_url or 'sqlite:///%s' % os.path.join(
        state_dir, 'cyborg_lite.sqlite'), group='database')
    CONF.set_override('state_path', state_dir)
    CONF.register_opts(
        ks_loading.get_auth_plugin_conf_options('admin_token'),
        group='placement')
    for name, value in (('auth_type', 'admin_token'), ('token', 'admin'),
                        ('endpoint_override', placement_url),
                        ('create_compute_node_rp', True)):
        CONF.set_override(name, value, group='placement')
    return CONF


class TimedClient:
    """Wraps PlacementClient.request: time spent per request kind."""

    _UUID = re.compile('[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                       '[0-9a-f]{12}')

    def __init__(self, client):
        self._request = client.request
        client.request = self.request
        self.seconds = collections.Counter()
        self.calls = collections.Counter()
        self._lock = threading.Lock()

    def kind(self, method, url):
        path, _, query = url.partition('?')
        path = self._UUID.sub('{uuid}', path)
        if path.startswith(('/traits/', '/resource_classes/')):
            path = path.rsplit('/', 1)[0] + '/{name}'
        params = sorted(p.split('=', 1)[0] for p in query.split('&') if p)
        return '%s %s%s' % (method, path,
                            ('?' + '&'.join(params)) if params else '')

    def request(self, method, url, *args, **kwargs):
        start = time.perf_counter()
        try:
            return self._request(method, url, *args, **kwargs)
        finally:
            elapsed = time.perf_counter() - start
            kind = self.kind(method, url)
            with self._lock:
                self.seconds[kind] += elapsed
                self.calls[kind] += 1

    def snapshot(self):
        with self._lock:
            return {k: {'calls': self.calls[k],
                        'total_s': round(self.seconds[k], 3),
                        'mean_ms': round(self.seconds[k] * 1000 /
                                         self.calls[k], 2)}
                    for k in sorted(self.calls)}

    def reset(self):
        with self._lock:
            self.seconds.clear()
            self.calls.clear()


class Conductor:
    """The conductor's report endpoint with the real Placement sync.

    ``workers`` > 1 applies reports from that many threads at once, as
    the conductor's RPC server (a thread pool) does with concurrent
    agents. NOTE: the bench's Placement runs on SQLite, which refuses
    concurrent writers ("database is locked", HTTP 500, counted in
    ``sync_failures``); more than one worker needs a Placement on
    PostgreSQL or MySQL, so the default is one.
    """

    def __init__(self, conf, workers=1, parties=None):
        from cyborg_lite.conductor import manager
        from cyborg_lite.conductor import publishing
        from cyborg_lite.placement import sink as sink_mod
        from cyborg_lite.db.sql import session
        self.sync = sink_mod.PlacementSink.from_conf(conf)
        # As the conductor service: the publish serves the report's
        # publish request.
        self.publisher = publishing.Publisher([self.sync])
        self.timing = TimedClient(self.sync.client)
        self.manager = manager.ConductorManager(
            'bench-conductor', after_report=self._after_report)
        self.sql = StatementCounter(session.get_engine())
        self.sync_failures = []
        self.workers = workers
        # CPU seconds by process: this one (the conductor), Placement, its
        # database.
        self.parties = parties or cpu.Parties({})

    def trust(self, trusted):
        """[conductor]trust_own_publish, for the A/B rounds."""
        self.publisher.trust_own_publish = trusted

    def _after_report(self, host):
        [result] = self.publisher.publish_host(host)
        if result is None or not result.ok:
            self.sync_failures.append('%s: %s' % (
                host, 'no result' if result is None else result.error))

    def round(self, name, fleet, hosts):
        failures_before = len(self.sync_failures)
        self.sync.client.reset_counts()
        self.timing.reset()
        self.sql.reset()
        acks = collections.Counter()
        lock = threading.Lock()
        cpu_before = self.parties.sample()

        def report(host):
            ack = self.manager.report(None, hostname(host),
                                      fleet.report(host))
            with lock:
                acks['changed' if ack['changed'] else 'unchanged'] += 1
                for key in ('created', 'updated', 'deleted'):
                    acks[key] += ack[key]

        with common.Timer() as t:
            if self.workers > 1:
                with futures.ThreadPoolExecutor(self.workers) as pool:
                    list(pool.map(report, hosts))
            else:
                for host in hosts:
                    report(host)
        cpu_s = self.parties.spent(cpu_before)
        cpu_s['conductor'] = cpu_s.pop('self')
        counts = dict(self.sync.client.counts)
        placement_writes = self.sync.client.writes
        result = {
            'round': name, 'hosts': len(hosts),
            'wall_s': round(t.elapsed, 3),
            'per_host_ms': round(t.elapsed * 1000 / max(1, len(hosts)), 3),
            'acks': dict(acks),
            'placement': {'requests': sum(counts.values()),
                          'writes': placement_writes, 'by_method': counts,
                          'by_kind': self.timing.snapshot()},
            'db': self.sql.snapshot(),
            'sync_failures': len(self.sync_failures) - failures_before,
            'cpu_s': cpu_s,
        }
        common.log('%-16s %5d hosts %9.2f s  %7.2f ms/host  placement %6d '
                   'req (%5d writes)  sql %7d (%5d writes)  cpu s %s'
                   % (name, len(hosts), t.elapsed, result['per_host_ms'],
                      result['placement']['requests'], placement_writes,
                      result['db']['statements'], result['db']['writes'],
                      cpu_s))
        return result
