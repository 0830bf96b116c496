"""bench/fleet.py's conductor as several processes (``--conductor-processes
N``), as ``[conductor]workers = N`` runs it.

Each process is a bench/fleet_model ``Conductor`` (its own report
threads, Placement client and publisher) on a shared conductor database,
a PostgreSQL of its own: several processes writing one SQLite file would
wait in SQLite's busy handler, and a deployment of several conductors
uses PostgreSQL or MariaDB. As an RPC topic hands each message to any of
its consumers, every round gives each host to a process drawn at random
(seeded): a host's reports do not stick to one process, so a publisher
serves a host it did not serve last about (N-1)/N of the time and then
reads its tree.

``ConductorProcesses`` has ``Conductor``'s interface for bench/fleet.py:
``round`` (the processes' results summed; wall time measured here, from
the moment every process has its hosts to the last one done), ``trust``
and ``sync_failures``.
"""
import collections
import multiprocessing
import random

from bench import common
from bench import cpu


def _serve(pipe, state_dir, placement_url, db_url, workers, fleet_args):
    """A conductor process: runs the rounds the bench sends."""
    from bench import fleet_model
    fleet_model.configure(state_dir, placement_url, db_url=db_url)
    common.quiet()
    from cyborg_lite.conf import CONF
    conductor = fleet_model.Conductor(CONF, workers=workers)
    replica = fleet_model.Fleet(*fleet_args[:3], seed=fleet_args[3],
                                functions=fleet_args[4])
    pipe.send('ready')
    while True:
        command, arg = pipe.recv()
        if command == 'stop':
            return
        if command == 'functions':
            replica.functions.update(arg)
            pipe.send(None)
        elif command == 'trust':
            conductor.trust(arg)
            pipe.send(None)
        elif command == 'round':
            pipe.recv()     # the go, once every process has its hosts
            name, hosts = arg
            seen = len(conductor.sync_failures)
            result = conductor.round(name, replica, hosts)
            pipe.send((result, conductor.sync_failures[seen:]))


class ConductorProcesses:
    def __init__(self, count, state_dir, placement_url, db_url, workers,
                 fleet, seed, parties):
        context = multiprocessing.get_context('spawn')
        self.pipes, self.procs = [], []
        fleet_args = (fleet.hosts, fleet.cards, fleet.regions, seed,
                      len(fleet.pool))
        for _ in range(count):
            ours, theirs = context.Pipe()
            proc = context.Process(target=_serve, args=(
                theirs, state_dir, placement_url, db_url, workers,
                fleet_args), daemon=True)
            proc.start()
            self.pipes.append(ours)
            self.procs.append(proc)
        for pipe in self.pipes:
            if pipe.recv() != 'ready':
                raise RuntimeError('a conductor process did not start')
        self.sent = dict(fleet.functions)
        self.random = random.Random(seed)
        self.sync_failures = []
        pids = {proc.pid for proc in self.procs}
        self.parties = cpu.Parties(dict(
            parties.parties, conductor=lambda: set().union(
                *(cpu.children(pid) for pid in pids))))

    def _ask(self, command, arg):
        for pipe in self.pipes:
            pipe.send((command, arg))
        return [pipe.recv() for pipe in self.pipes]

    def trust(self, trusted):
        self._ask('trust', trusted)

    def round(self, name, fleet, hosts):
        changed = {k: v for k, v in fleet.functions.items()
                   if self.sent[k] != v}
        self._ask('functions', changed)
        self.sent.update(changed)
        shares = [[] for _ in self.pipes]
        for host in hosts:
            self.random.choice(shares).append(host)
        for pipe, share in zip(self.pipes, shares):
            pipe.send(('round', (name, share)))
        cpu_before = self.parties.sample()
        with common.Timer() as t:
            for pipe in self.pipes:
                pipe.send('go')
            answers = [pipe.recv() for pipe in self.pipes]
        cpu_s = self.parties.spent(cpu_before)
        results = [result for result, _ in answers]
        for _, failures in answers:
            self.sync_failures.extend(failures)
        cpu_s['bench'] = cpu_s.pop('self')
        merged = _merge(name, hosts, t.elapsed, results, cpu_s)
        common.log('%-16s %5d hosts %9.2f s over %d processes  placement '
                   '%6d req  sql %7d (%5d writes)  cpu s %s'
                   % (name, len(hosts), t.elapsed, len(self.pipes),
                      merged['placement']['requests'],
                      merged['db']['statements'], merged['db']['writes'],
                      cpu_s))
        return merged

    def stop(self):
        for pipe in self.pipes:
            pipe.send(('stop', None))
        for proc in self.procs:
            proc.join(30)


def _sum(dicts):
    total = collections.Counter()
    for d in dicts:
        total.update(d)
    return dict(total)


def _merge(name, hosts, wall, results, cpu_s):
    """One round's results of every process as one."""
    by_kind = {}
    for result in results:
        for kind, entry in result['placement']['by_kind'].items():
            into = by_kind.setdefault(kind, {'calls': 0, 'total_s': 0.0})
            into['calls'] += entry['calls']
            into['total_s'] = round(into['total_s'] + entry['total_s'], 3)
    for entry in by_kind.values():
        entry['mean_ms'] = round(entry['total_s'] * 1000 / entry['calls'], 2)
    placement = [r['placement'] for r in results]
    db = [r['db'] for r in results]
    return {
        'round': name, 'hosts': len(hosts), 'wall_s': round(wall, 3),
        'per_host_ms': round(wall * 1000 / max(1, len(hosts)), 3),
        'processes': len(results),
        'acks': _sum(r['acks'] for r in results),
        'placement': {'requests': sum(p['requests'] for p in placement),
                      'writes': sum(p['writes'] for p in placement),
                      'by_method': _sum(p['by_method'] for p in placement),
                      'by_kind': by_kind},
        'db': {'statements': sum(d['statements'] for d in db),
               'writes': sum(d['writes'] for d in db),
               'by_kind': _sum(d['by_kind'] for d in db)},
        'sync_failures': sum(r['sync_failures'] for r in results),
        'cpu_s': cpu_s,
    }
