"""API speed, cyborg_lite side by side with OpenStack Cyborg 17, and
with another checkout of cyborg_lite.

    .venv/bin/python -m bench.api [--devices 10000] [--requests 200]
        [--list-requests 30] [--binds 100] [--concurrency 4]
        [--baseline TREE] [--no-placement-sink] [--scenarios bind,delete]
        [--no-cyborg] [--output api.json]

``--baseline TREE`` adds a third side, ``baseline``: the same server
(this tree's bench/ours_server.py) on the code of the checkout TREE
(``git worktree add /tmp/base <commit>``), its database migrated and
seeded by that code (common.run_in_tree, common.tree_env), so one run
measures before and after a change beside Cyborg. Both processes of a
side import that tree's cyborg_lite and its bench.seed, bench.serving
and bench.common, whose interfaces (``seed_ours(url, n)``,
``serve(name, app, port, threads)``) therefore stay stable.

All sides get the same machine, client, data and serving conditions:

- the same inventory (bench/seed.py: ``--devices`` FPGA cards, one region,
  one attach handle each), written into each one's own SQLite database;
- API and conductor in one process over the same in-process messaging,
  the all-in-one's ``inproc://`` (oslo.messaging's ``fake://`` driver
  woken on delivery; ``--cyborg-transport fake`` gives Cyborg
  ``fake://``, whose 50 ms polls the runs before this option measured),
  served by the same HTTP server, the all-in-one's cheroot with 8
  threads (``--server waitress``: waitress), noauth (cyborg_lite:
  bench/ours_server.py; Cyborg: bench/cyborg_server.py in its own venv,
  ``bench/.cyborg-venv``, created here with
  ``pip install openstack-cyborg==17.0.0 cheroot waitress`` unless
  ``--cyborg-python`` names another interpreter);
- the same Nova stand-in for the accelerator-request-bound event
  (bench/fake_nova.py); a real Placement for Cyborg's conductor
  start-up (Cyborg calls it on none of these routes), and one for each
  cyborg_lite side, its conductor's inventory sink (as in the
  all-in-one), to which the hosts of the cards the binds take are
  published before the run, as their agents' reports would have
  (``--no-placement-sink``: no sink, as the runs before issue 30);
- the same load generator (this file: ``--concurrency`` threads with
  keep-alive http.client connections), the same headers
  (X-Roles admin, a project and user id, API version 2.3 / Cyborg's
  latest), and service logging at WARNING on both.

Scenarios (each first for one service, then the other, ``--rounds``
times alternating which goes first; figures pool every round):

- ``list_devices``: GET /v2/devices returning all ``--devices`` rows
  (cyborg_lite with [api] max_limit = 10000; Cyborg does not page);
- ``create_profile``: POST /v2/device_profiles, a new name each time;
- ``create_arq``: POST /v2/accelerator_requests for a one-group profile;
- ``bind``: one at a time, POST an ARQ, PATCH the bind to the region
  provider of a card nobody used yet, GET until Bound; the latency is
  POST start to Bound seen, the profile asks for no programming;
- ``delete``: one at a time, DELETE /v2/accelerator_requests?instance=
  of an instance the binds bound, as Nova deletes an instance's ARQs;
  the latency is the DELETE's. cyborg_lite frees the handle, reserves
  the region until it is wiped and (since issue 30) answers once its
  conductor published that to Placement; Cyborg frees the handle. After
  each answer (untimed) a cyborg_lite side's Placement is asked whether
  it still offers the region (``still_offered``: should be 0 once the
  publish is synchronous), and one PUT of an inventory is timed on that
  Placement (``placement_put_*``: the one write such a delete adds, by
  itself, under the same load).

Prints requests/s, p50/p99 per scenario and side, and the ratios
between sides.
"""
import argparse
import collections
import http.client
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid

from bench import api_servers
from bench import common
from bench import fake_nova
from bench import seed
from bench import serving

PROFILE_GROUP = {'resources:FPGA': '1',
                 'trait:CUSTOM_FPGA_INTEL': 'required'}
BIND_PROFILE = 'bench-bind'
SCENARIOS = ('list_devices', 'create_profile', 'create_arq', 'bind',
             'delete')
# (key, side expected faster, the other) of the ratios of each scenario.
PAIRS = (('ratio', 'ours', 'cyborg'),
         ('ratio_baseline', 'ours', 'baseline'),
         ('ratio_baseline_cyborg', 'baseline', 'cyborg'),
         # --observability: above 1, metrics and notifications cost nothing.
         ('ratio_on_off', 'on', 'off'))


class Scraper:
    """Scrapes GET /metrics every ``interval`` seconds, as Prometheus
    would, while the scenarios run; its own connection."""

    def __init__(self, base, interval):
        self.base = base
        self.interval = interval
        self.durations, self.sizes, self.errors = [], [], []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        host = self.base.split('//', 1)[1]
        while not self._stop.wait(self.interval):
            conn = http.client.HTTPConnection(host, timeout=120)
            started = time.perf_counter()
            try:
                conn.request('GET', '/metrics')
                resp = conn.getresponse()
                body = resp.read()
                if resp.status != 200:
                    self.errors.append(resp.status)
                    continue
                self.durations.append(time.perf_counter() - started)
                self.sizes.append(len(body))
            except OSError as exc:
                self.errors.append(str(exc))
            finally:
                conn.close()

    def stop(self):
        self._stop.set()
        self._thread.join()

    def summary(self):
        return {'interval_s': self.interval, 'count': len(self.durations),
                'seconds': [round(d, 3) for d in self.durations],
                'bytes': self.sizes[-1] if self.sizes else None,
                'errors': self.errors[:3]}


# -- scenarios --------------------------------------------------------------

# What a scenario returns when it timed itself (work after the timed
# request, such as a check, is not its latency).
Latency = collections.namedtuple('Latency', ['seconds'])


class Scenarios:
    def __init__(self, side, devices, placement_url=None):
        self.side = side
        self.devices = devices
        self.tag = uuid.uuid4().hex[:8]
        self.names = itertools.count()
        self.next_card = 0
        self.card_lock = threading.Lock()
        # (instance uuid, region provider) of each Bound ARQ, oldest first.
        self.bound = collections.deque()
        self.placement_url = placement_url
        self.still_offered = []
        self.placement_puts = []
        self._scratch = None   # [uuid, generation] of a provider to write

    def list_devices(self, base, i):
        status, body = api_servers.request(base, 'GET', '/v2/devices')
        api_servers._expect(status, body, (200,), 'GET /v2/devices')
        if len(body['devices']) != self.devices:
            raise RuntimeError('GET /v2/devices returned %d devices, not %d'
                               % (len(body['devices']), self.devices))

    def create_profile(self, base, i):
        status, body = api_servers.request(
            base, 'POST', '/v2/device_profiles', [{
                'name': 'bench-%s-%d' % (self.tag, next(self.names)),
                'groups': [PROFILE_GROUP]}])
        api_servers._expect(status, body, (201,), 'POST /v2/device_profiles')

    def ensure_bind_profile(self, base):
        status, body = api_servers.request(
            base, 'POST', '/v2/device_profiles', [{
                'name': BIND_PROFILE, 'groups': [PROFILE_GROUP]}])
        api_servers._expect(status, body, (201, 409), 'POST bind profile')

    def create_arq(self, base, i):
        status, body = api_servers.request(
            base, 'POST', '/v2/accelerator_requests',
            {'device_profile_name': BIND_PROFILE})
        api_servers._expect(status, body, (201,),
                            'POST /v2/accelerator_requests')
        return body['arqs'][0]['uuid']

    def bind(self, base, i):
        with self.card_lock:
            card = self.next_card
            self.next_card += 1
        row = seed.row(card)
        instance = str(uuid.uuid4())
        arq = self.create_arq(base, i)
        patch = {arq: [{'op': 'add', 'path': '/hostname',
                        'value': row['hostname']},
                       {'op': 'add', 'path': '/device_rp_uuid',
                        'value': row['rp_uuid']},
                       {'op': 'add', 'path': '/instance_uuid',
                        'value': instance}]}
        status, body = api_servers.request(
            base, 'PATCH', '/v2/accelerator_requests', patch)
        api_servers._expect(status, body, (202,), 'PATCH bind')
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status, body = api_servers.request(base, 'GET',
                                   '/v2/accelerator_requests/' + arq)
            api_servers._expect(status, body, (200,), 'GET ARQ')
            if body['state'] == 'Bound':
                self.bound.append((instance, row['rp_uuid']))
                return
            if body['state'] == 'BindFailed':
                raise RuntimeError('bind failed: %s' % json.dumps(body))
            time.sleep(0.002)
        raise RuntimeError('ARQ %s not Bound after 30 s' % arq)

    def delete(self, base, i):
        """Delete the ARQs of the instance bound longest ago, as Nova
        does; then, untimed, whether Placement still offers its region."""
        instance, rp_uuid = self.bound.popleft()
        start = time.perf_counter()
        status, body = api_servers.request(base, 'DELETE',
                               '/v2/accelerator_requests?instance='
                               + instance)
        latency = time.perf_counter() - start
        api_servers._expect(status, body, (204,), 'DELETE ARQs of an instance')
        if self.placement_url:
            self.still_offered.append(
                api_servers.placement_offers(self.placement_url, rp_uuid))
            self.placement_puts.append(self._time_placement_put(i))
        return Latency(latency)

    def _time_placement_put(self, i):
        """Seconds of one PUT of a bench provider's inventory (reserved
        flipped each time) on this side's Placement."""
        if self._scratch is None:
            rp_uuid = str(uuid.uuid4())
            status, body = api_servers.request(
                self.placement_url, 'POST', '/resource_providers',
                {'name': 'bench-%s' % rp_uuid, 'uuid': rp_uuid},
                headers=common.PLACEMENT_HEADERS)
            api_servers._expect(status, body, (200,), 'POST a bench provider')
            self._scratch = [rp_uuid, body['generation']]
        rp_uuid, generation = self._scratch
        start = time.perf_counter()
        status, body = api_servers.request(
            self.placement_url, 'PUT',
            '/resource_providers/%s/inventories' % rp_uuid,
            {'resource_provider_generation': generation,
             'inventories': {'FPGA': {'total': 1, 'reserved': i % 2}}},
            headers=common.PLACEMENT_HEADERS)
        seconds = time.perf_counter() - start
        api_servers._expect(status, body, (200,), 'PUT a bench inventory')
        self._scratch[1] = body['resource_provider_generation']
        return seconds


def measure(sides, args, placements=None):
    """``sides``: {name: Server}; ``placements``: {name: Placement URL}
    of the sides whose deletes are checked against their Placement."""
    placements = placements or {}
    plan = [(name, count, concurrency) for name, count, concurrency in (
            ('list_devices', args.list_requests, args.concurrency),
            ('create_profile', args.requests, args.concurrency),
            ('create_arq', args.requests, args.concurrency),
            ('bind', args.binds, 1),
            ('delete', args.binds, 1)) if name in args.scenarios]
    pooled = {name: {side: {'latencies': [], 'wall': 0.0, 'errors': 0,
                            'first_errors': []}
                     for side in sides} for name, _, _ in plan}
    scenarios = {side: Scenarios(side, args.devices, placements.get(side))
                 for side in sides}
    for side, server in sides.items():
        scenarios[side].ensure_bind_profile(server.url)
        # Warm-up: imports, first connections, SQLite page cache.
        for _ in range(3):
            scenarios[side].list_devices(server.url, 0)
            scenarios[side].create_arq(server.url, 0)
    order = list(sides)
    for rnd in range(args.rounds):
        for name, count, concurrency in plan:
            per_round = max(1, count // args.rounds)
            for side in (order if rnd % 2 == 0 else order[::-1]):
                func = getattr(scenarios[side], name)
                result = _run_collect(sides[side].url, func, per_round,
                                      concurrency)
                into = pooled[name][side]
                into['latencies'] += result['latencies']
                into['wall'] += result['wall']
                into['errors'] += result['errors']
                into['first_errors'] += result['first_errors']
                common.log('round %d %-15s %-7s %5d req %7.1f req/s'
                           % (rnd + 1, name, side, per_round,
                              per_round / result['wall']))
    report = {}
    for name, _, concurrency in plan:
        report[name] = {'concurrency': concurrency}
        for side in sides:
            p = pooled[name][side]
            summary = common.latency_summary(p['latencies'], p['wall'])
            summary.update(errors=p['errors'],
                           first_errors=p['first_errors'][:3])
            report[name][side] = summary
            if name == 'delete' and side in placements:
                checked = scenarios[side].still_offered
                # (The wall time is not the puts'; only the latencies.)
                puts = common.latency_summary(
                    scenarios[side].placement_puts, 1)
                summary.update(placement_checked=len(checked),
                               still_offered=sum(checked),
                               placement_put_p50_ms=puts['p50_ms'],
                               placement_put_p99_ms=puts['p99_ms'])
        for key, faster, slower in PAIRS:
            if faster in sides and slower in sides:
                report[name][key] = _ratios(report[name], faster, slower)
    return report


def _ratios(entry, faster, slower):
    """``faster``'s throughput over ``slower``'s, ``slower``'s p50 and
    p99 over ``faster``'s (above 1: ``faster`` is faster)."""
    a, b = entry[faster], entry[slower]
    return {'rps_%s_over_%s' % (faster, slower): common.ratio(a['rps'],
                                                               b['rps']),
            'p50_%s_over_%s' % (slower, faster): common.ratio(b['p50_ms'],
                                                              a['p50_ms']),
            'p99_%s_over_%s' % (slower, faster): common.ratio(b['p99_ms'],
                                                              a['p99_ms'])}


def _run_collect(base, func, count, concurrency):
    latencies, errors = [], []
    lock = threading.Lock()
    counter = iter(range(count))

    def worker():
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            start = time.perf_counter()
            try:
                result = func(base, i)
            except Exception as exc:  # noqa: BLE001 - reported, counted
                with lock:
                    errors.append(str(exc)[:300])
                continue
            elapsed = time.perf_counter() - start
            if isinstance(result, Latency):
                elapsed = result.seconds
            with lock:
                latencies.append(elapsed)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    with common.Timer() as t:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    return {'latencies': latencies, 'wall': t.elapsed,
            'errors': len(errors), 'first_errors': errors[:3]}


def print_table(report, sides):
    common.log('\n%-15s %-8s %9s %9s %9s'
               % ('scenario', 'side', 'req/s', 'p50 ms', 'p99 ms'))
    for name, entry in report.items():
        for side in sides:
            s = entry[side]
            notes = []
            if s['errors']:
                notes.append('errors=%d' % s['errors'])
            if 'still_offered' in s:
                notes.append('still offered after the answer: %d of %d; '
                             "Placement's PUT p50 %s p99 %s ms" % (
                                 s['still_offered'], s['placement_checked'],
                                 s['placement_put_p50_ms'],
                                 s['placement_put_p99_ms']))
            common.log('%-15s %-8s %9s %9s %9s  %s' % (
                name, side, s['rps'], s['p50_ms'], s['p99_ms'],
                ', '.join(notes)))
        for key, faster, slower in PAIRS:
            if key in entry:
                r = list(entry[key].values())
                common.log('%-15s %s vs %s: throughput x%s, p50 %sx '
                           'faster, p99 %sx' % ('', faster, slower, *r))


def _scenario_list(text):
    names = [n for n in text.split(',') if n]
    unknown = sorted(set(names) - set(SCENARIOS))
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            'scenarios are a comma-separated list of %s'
            % ', '.join(SCENARIOS))
    if 'delete' in names and 'bind' not in names:
        raise argparse.ArgumentTypeError('delete deletes what bind bound: '
                                         'name both')
    return names


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--devices', type=int, default=10000)
    parser.add_argument('--requests', type=int, default=200,
                        help='per side, for each create scenario')
    parser.add_argument('--list-requests', type=int, default=30)
    parser.add_argument('--binds', type=int, default=100,
                        help='per side, for bind and for delete')
    parser.add_argument('--concurrency', type=int, default=4)
    parser.add_argument('--rounds', type=int, default=2)
    parser.add_argument('--scenarios', type=_scenario_list,
                        default=list(SCENARIOS),
                        help='comma-separated, of %s (default: all)'
                             % ', '.join(SCENARIOS))
    parser.add_argument('--baseline',
                        help='a checkout of cyborg_lite to measure too '
                             '(side "baseline")')
    parser.add_argument('--no-placement-sink', action='store_true',
                        help='cyborg_lite sides publish nowhere')
    parser.add_argument('--no-cyborg', action='store_true',
                        help='measure cyborg_lite only (no Cyborg venv)')
    parser.add_argument('--cyborg-python',
                        help='python of an existing Cyborg 17 venv')
    parser.add_argument('--cyborg-transport', choices=('inproc', 'fake'),
                        default='inproc',
                        help="Cyborg's in-process oslo.messaging driver: "
                             "inproc (ours, as cyborg_lite's side) or "
                             "fake (oslo.messaging's, 50 ms polls)")
    parser.add_argument('--server', choices=serving.SERVERS,
                        default='cheroot',
                        help="all sides' HTTP server (8 threads each)")
    parser.add_argument('--observability', action='store_true',
                        help='cyborg_lite with metrics and notifications '
                             'on against off (no Cyborg): sides "on" and '
                             '"off"')
    parser.add_argument('--scrape-interval', type=float, default=30.0,
                        help='with --observability: seconds between two '
                             'scrapes of the "on" side\'s /metrics')
    parser.add_argument('--notifications-url', default=None,
                        help='with --observability: the notifications\' '
                             'transport_url (default: inproc://, sent in '
                             'the process)')
    parser.add_argument('--workdir', help='keep databases and logs here')
    parser.add_argument('--output')
    args = parser.parse_args(argv)
    if args.binds > args.devices:
        parser.error('--binds may not exceed --devices (one card each)')
    if args.baseline and not os.path.isdir(
            os.path.join(args.baseline, 'cyborg_lite')):
        parser.error('--baseline %s: no cyborg_lite/ there' % args.baseline)
    return args


def main(argv=None):
    args = parse_args(argv)
    trees = {'ours': api_servers.ROOT}
    if args.baseline:
        trees['baseline'] = os.path.abspath(args.baseline)
    machine = common.machine()
    workdir = args.workdir or tempfile.mkdtemp(prefix='bench-api-')
    os.makedirs(workdir, exist_ok=True)
    nova = fake_nova.FakeNova().start()
    placements = {}
    servers = {}
    scraper = None
    try:
        if args.observability:
            servers.update(api_servers.start_observed(workdir, args, nova.url))
            trees = {}
        for side, root in trees.items():
            if not args.no_placement_sink:
                placements[side] = api_servers.start_placement(workdir,
                                                   'placement-' + side)
            servers[side] = api_servers.start_ours(
                workdir, args.devices, nova.url, args.server, root=root,
                name=side, publish_cards=args.binds,
                placement_url=(placements[side].endpoint
                               if side in placements else None))
        cyborg_version = None
        if not args.no_cyborg and not args.observability:
            python = args.cyborg_python or api_servers.ensure_cyborg_venv()
            cyborg_version = subprocess.run(
                [python, '-c', 'import cyborg; print(cyborg.__version__)'],
                check=True, capture_output=True, text=True).stdout.strip()
            # Cyborg's conductor needs one at start-up, and calls it on
            # none of the routes measured.
            placements['cyborg'] = api_servers.start_placement(
                workdir, 'placement')
            servers['cyborg'] = api_servers.start_cyborg(
                workdir, args.devices, nova.url,
                placements['cyborg'].endpoint, python,
                args.cyborg_transport, args.server)
        for server in servers.values():
            server.wait_ready()
        checked = {side: placements[side].endpoint for side in trees
                   if side in placements}
        for url in checked.values():
            api_servers.check_published(url, args.binds)
        if args.observability:
            scraper = Scraper(servers['on'].url, args.scrape_interval)
        report = measure(servers, args, checked)
        if scraper is not None:
            scraper.stop()
        # NOTE: a bind's Nova event follows its Bound, which the client
        # may see first; a server stops after the calls in flight, so
        # once all have stopped every event has been sent.
        for server in servers.values():
            server.stop()
        print_table(report, list(servers))
        result = {'bench': 'api', 'machine': machine,
                  'params': {k: v for k, v in vars(args).items()
                             if k not in ('output', 'workdir')},
                  'trees': {side: {'root': root,
                                   'commit': api_servers.tree_commit(root)}
                            for side, root in trees.items()},
                  'placement_sink': not args.no_placement_sink,
                  'cyborg_version': cyborg_version,
                  'nova_events': nova.events,
                  'scenarios': report}
        if scraper is not None:
            result['scrapes'] = scraper.summary()
        common.emit(result, args.output)
    finally:
        if scraper is not None:
            scraper.stop()
        for server in servers.values():
            server.stop()
        for placement in placements.values():
            placement.stop()
        nova.stop()
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
    main()
