"""API speed, cyborg_lite side by side with OpenStack Cyborg 17.

    .venv/bin/python -m bench.api [--devices 10000] [--requests 200]
        [--list-requests 30] [--binds 100] [--concurrency 4]
        [--no-cyborg] [--output api.json]

Both services get the same machine, client, data and serving conditions:

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
  (bench/fake_nova.py), the same real Placement for Cyborg's conductor
  start-up (cyborg_lite's does not need it for these routes);
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
  POST start to Bound seen, the profile asks for no programming.

Prints requests/s, p50/p99 per scenario and side, and ours/theirs ratios.
"""
import argparse
import http.client
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid

from bench import common
from bench import fake_nova
from bench import seed
from bench import serving
from cyborg_lite.common import processes

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CYBORG_VENV = os.path.join(HERE, '.cyborg-venv')
CYBORG_REQUIREMENT = 'openstack-cyborg==17.0.0'
HEADERS = {'X-Roles': 'admin,member',
           'X-Project-Id': '9b1deb4d3b7d4bad9bdd2b0d7b3dcb6d',
           'X-User-Id': '1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed',
           'Content-Type': 'application/json',
           'Accept': 'application/json',
           'OpenStack-API-Version': 'accelerator 2.3',
           # Cyborg binds only for a service (Nova); auth_token would set
           # this from the service token, noauth takes it as sent.
           'X-Service-Roles': 'service'}
PROFILE_GROUP = {'resources:FPGA': '1',
                 'trait:CUSTOM_FPGA_INTEL': 'required'}
BIND_PROFILE = 'bench-bind'


# -- the Cyborg venv --------------------------------------------------------

def ensure_cyborg_venv(venv=CYBORG_VENV):
    """The python of a venv holding openstack-cyborg 17, cheroot and
    waitress."""
    python = os.path.join(venv, 'bin', 'python')
    marker = os.path.join(venv, '.bench-ready')
    if os.path.exists(marker):
        return python
    common.log('creating %s with %s (once; a few minutes)'
               % (venv, CYBORG_REQUIREMENT))
    if not os.path.exists(python):
        subprocess.run([sys.executable, '-m', 'venv', '--without-pip',
                        venv], check=True)
        subprocess.run([python, '-m', 'ensurepip', '--upgrade'],
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run([python, '-m', 'pip', 'install', '-q',
                    CYBORG_REQUIREMENT, 'cheroot', 'waitress'], check=True)
    with open(marker, 'w') as f:
        f.write(CYBORG_REQUIREMENT + '\n')
    return python


# -- servers ----------------------------------------------------------------

class Server:
    """A bench server subprocess; ``url`` once ready."""

    def __init__(self, name, argv, port, workdir, env=None):
        self.name = name
        self.port = port
        self.url = 'http://127.0.0.1:%d' % port
        self.log_path = os.path.join(workdir, '%s.log' % name)
        self._log = open(self.log_path, 'w')
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=self._log,
                                     stderr=subprocess.STDOUT, env=env)

    def wait_ready(self, timeout=300):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError('%s exited (%s); log:\n%s' % (
                    self.name, self.proc.returncode, self.tail()))
            try:
                status, _ = request(self.url, 'GET', '/v2')
                if status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        raise TimeoutError('%s not ready; log:\n%s'
                           % (self.name, self.tail()))

    def tail(self):
        with open(self.log_path, errors='replace') as f:
            return f.read()[-3000:]

    def stop(self):
        processes.stop(self.proc, 15)
        self._log.close()


def start_ours(workdir, devices, nova_url, http_server='cheroot',
               name='ours', extra=()):
    from cyborg_lite.common import config
    from cyborg_lite.conf import CONF
    from cyborg_lite.db import migration
    from cyborg_lite.db import session
    db = 'sqlite:///%s' % os.path.join(workdir, '%s.sqlite' % name)
    config.parse_args([], default_config_files=[])
    common.quiet()
    CONF.set_override('connection', db, group='database')
    migration.upgrade()
    seed.seed_ours(db, devices)
    session.dispose_all()
    from cyborg_lite.common import placement_server
    port = placement_server.free_port()
    return Server(name, [sys.executable, '-m', 'bench.ours_server',
                         '--db', db, '--port', str(port),
                         '--nova-url', nova_url, '--server', http_server]
                  + list(extra), port, workdir)


CYBORG_LOGGERS = ('cyborg', 'oslo_messaging', 'keystoneauth', 'urllib3',
                  'stevedore', 'oslo_policy', 'openstack',
                  'oslo.privsep.daemon')
CYBORG_CONF = """[DEFAULT]
transport_url = fake://
host = bench-cyborg
log_file = {workdir}/cyborg-service.log
default_log_levels = {log_levels}
[database]
connection = sqlite:///{workdir}/cyborg.sqlite
[api]
api_paste_config = {paste}
[nova]
auth_type = none
endpoint_override = {nova}
[placement]
auth_type = admin_token
token = admin
endpoint_override = {placement}
"""


def start_cyborg(workdir, devices, nova_url, placement_url, python,
                 transport='inproc', http_server='cheroot'):
    from bench import cyborg_server
    conf = os.path.join(workdir, 'cyborg.conf')
    with open(conf, 'w') as f:
        f.write(CYBORG_CONF.format(
            log_levels=','.join('%s=WARNING' % n for n in CYBORG_LOGGERS),
            workdir=workdir, nova=nova_url, placement=placement_url,
            paste=cyborg_server.write_paste(workdir)))
    # NOTE: `cyborg-dbsync upgrade` fails on SQLite (a migration runs
    # ALTER TABLE ... ALTER COLUMN ... SET NOT NULL); create_schema is
    # Cyborg's own command for a fresh database (metadata.create_all +
    # stamp head), the schema its unit tests use.
    dbsync = os.path.join(os.path.dirname(python), 'cyborg-dbsync')
    subprocess.run([dbsync, '--config-file', conf, 'create_schema'],
                   check=True, capture_output=True)
    seed.seed_cyborg(os.path.join(workdir, 'cyborg.sqlite'), devices)
    from cyborg_lite.common import placement_server
    port = placement_server.free_port()
    argv = [python, os.path.join(HERE, 'cyborg_server.py'),
            '--config-file', conf, '--port', str(port),
            '--server', http_server]
    if transport == 'inproc':
        # NOTE: the file says fake:// for cyborg-dbsync, which loads the
        # transport too; the server alone is told to use inproc://.
        argv += ['--inproc-dir', os.path.join(workdir, 'inproc-driver')]
    return Server('cyborg', argv, port, workdir)


def start_observed(workdir, args, nova_url):
    """Two cyborg_lite servers on the same data: "off" (no metrics, no
    notifications) and "on" (metrics, notifications through
    oslo.messaging's messagingv2 driver)."""
    on = ['--notifications', 'messagingv2']
    if args.notifications_url:
        on += ['--notifications-url', args.notifications_url]
    return {'off': start_ours(workdir, args.devices, nova_url, args.server,
                              name='off', extra=['--no-metrics']),
            'on': start_ours(workdir, args.devices, nova_url, args.server,
                             name='on', extra=on)}


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


# -- the client -------------------------------------------------------------

_local = threading.local()


def request(base, method, path, body=None):
    """One request on this thread's keep-alive connection: (status, json)."""
    conns = getattr(_local, 'conns', None)
    if conns is None:
        conns = _local.conns = {}
    host = base.split('//', 1)[1]
    for attempt in (1, 2):
        conn = conns.get(host)
        if conn is None:
            conn = conns[host] = http.client.HTTPConnection(host, timeout=120)
        try:
            conn.request(method, path,
                         body=None if body is None else json.dumps(body),
                         headers=HEADERS)
            resp = conn.getresponse()
            data = resp.read()
            break
        except (http.client.HTTPException, ConnectionError):
            conn.close()
            conns.pop(host, None)
            if attempt == 2:
                raise
    return resp.status, (json.loads(data) if data else None)


def _expect(status, body, wanted, what):
    if status not in wanted:
        raise RuntimeError('%s: HTTP %s %s'
                           % (what, status, json.dumps(body)[:500]))


# -- scenarios --------------------------------------------------------------

class Scenarios:
    def __init__(self, side, devices):
        self.side = side
        self.devices = devices
        self.tag = uuid.uuid4().hex[:8]
        self.names = itertools.count()
        self.next_card = 0
        self.card_lock = threading.Lock()

    def list_devices(self, base, i):
        status, body = request(base, 'GET', '/v2/devices')
        _expect(status, body, (200,), 'GET /v2/devices')
        if len(body['devices']) != self.devices:
            raise RuntimeError('GET /v2/devices returned %d devices, not %d'
                               % (len(body['devices']), self.devices))

    def create_profile(self, base, i):
        status, body = request(base, 'POST', '/v2/device_profiles', [{
            'name': 'bench-%s-%d' % (self.tag, next(self.names)),
            'groups': [PROFILE_GROUP]}])
        _expect(status, body, (201,), 'POST /v2/device_profiles')

    def ensure_bind_profile(self, base):
        status, body = request(base, 'POST', '/v2/device_profiles', [{
            'name': BIND_PROFILE, 'groups': [PROFILE_GROUP]}])
        _expect(status, body, (201, 409), 'POST bind profile')

    def create_arq(self, base, i):
        status, body = request(base, 'POST', '/v2/accelerator_requests',
                               {'device_profile_name': BIND_PROFILE})
        _expect(status, body, (201,), 'POST /v2/accelerator_requests')
        return body['arqs'][0]['uuid']

    def bind(self, base, i):
        with self.card_lock:
            card = self.next_card
            self.next_card += 1
        row = seed.row(card)
        arq = self.create_arq(base, i)
        status, body = request(base, 'PATCH', '/v2/accelerator_requests', {
            arq: [{'op': 'add', 'path': '/hostname',
                   'value': row['hostname']},
                  {'op': 'add', 'path': '/device_rp_uuid',
                   'value': row['rp_uuid']},
                  {'op': 'add', 'path': '/instance_uuid',
                   'value': str(uuid.uuid4())}]})
        _expect(status, body, (202,), 'PATCH bind')
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status, body = request(base, 'GET',
                                   '/v2/accelerator_requests/' + arq)
            _expect(status, body, (200,), 'GET ARQ')
            if body['state'] == 'Bound':
                return
            if body['state'] == 'BindFailed':
                raise RuntimeError('bind failed: %s' % json.dumps(body))
            time.sleep(0.002)
        raise RuntimeError('ARQ %s not Bound after 30 s' % arq)


def measure(sides, args):
    plan = [('list_devices', args.list_requests, args.concurrency),
            ('create_profile', args.requests, args.concurrency),
            ('create_arq', args.requests, args.concurrency),
            ('bind', args.binds, 1)]
    pooled = {name: {side: {'latencies': [], 'wall': 0.0, 'errors': 0,
                            'first_errors': []}
                     for side in sides} for name, _, _ in plan}
    scenarios = {side: Scenarios(side, args.devices) for side in sides}
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
        if 'on' in sides and 'off' in sides:
            on, off = report[name]['on'], report[name]['off']
            report[name]['ratio'] = {
                'rps_on_over_off': common.ratio(on['rps'], off['rps']),
                'p50_on_over_off': common.ratio(on['p50_ms'], off['p50_ms']),
            }
        if 'ours' in sides and 'cyborg' in sides:
            ours, theirs = report[name]['ours'], report[name]['cyborg']
            report[name]['ratio'] = {
                'rps_ours_over_cyborg': common.ratio(ours['rps'],
                                                     theirs['rps']),
                'p50_cyborg_over_ours': common.ratio(theirs['p50_ms'],
                                                     ours['p50_ms']),
                'p99_cyborg_over_ours': common.ratio(theirs['p99_ms'],
                                                     ours['p99_ms']),
            }
    return report


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
                func(base, i)
            except Exception as exc:  # noqa: BLE001 - reported, counted
                with lock:
                    errors.append(str(exc)[:300])
                continue
            with lock:
                latencies.append(time.perf_counter() - start)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    with common.Timer() as t:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    return {'latencies': latencies, 'wall': t.elapsed,
            'errors': len(errors), 'first_errors': errors[:3]}


def print_table(report, sides):
    common.log('\n%-15s %-7s %9s %9s %9s   ratio (ours vs cyborg)'
               % ('scenario', 'side', 'req/s', 'p50 ms', 'p99 ms'))
    for name, entry in report.items():
        for side in sides:
            s = entry[side]
            common.log('%-15s %-7s %9s %9s %9s %s' % (
                name, side, s['rps'], s['p50_ms'], s['p99_ms'],
                ('  errors=%d' % s['errors']) if s['errors'] else ''))
        if 'ratio' in entry and 'rps_on_over_off' in entry['ratio']:
            r = entry['ratio']
            common.log('%-15s %-7s throughput on/off x%s, p50 on/off x%s'
                       % ('', 'ratio', r['rps_on_over_off'],
                          r['p50_on_over_off']))
        elif 'ratio' in entry:
            r = entry['ratio']
            common.log('%-15s %-7s throughput x%s, p50 %s x faster, p99 %s x'
                       % ('', 'ratio', r['rps_ours_over_cyborg'],
                          r['p50_cyborg_over_ours'],
                          r['p99_cyborg_over_ours']))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--devices', type=int, default=10000)
    parser.add_argument('--requests', type=int, default=200,
                        help='per side, for each create scenario')
    parser.add_argument('--list-requests', type=int, default=30)
    parser.add_argument('--binds', type=int, default=100)
    parser.add_argument('--concurrency', type=int, default=4)
    parser.add_argument('--rounds', type=int, default=2)
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
                        help="both sides' HTTP server (8 threads each)")
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

    workdir = args.workdir or tempfile.mkdtemp(prefix='bench-api-')
    os.makedirs(workdir, exist_ok=True)
    nova = fake_nova.FakeNova().start()
    placement = None
    servers = {}
    scraper = None
    try:
        cyborg_version = None
        if args.observability:
            servers.update(start_observed(workdir, args, nova.url))
        else:
            servers['ours'] = start_ours(workdir, args.devices, nova.url,
                                         args.server)
        if not args.no_cyborg and not args.observability:
            python = args.cyborg_python or ensure_cyborg_venv()
            cyborg_version = subprocess.run(
                [python, '-c', 'import cyborg; print(cyborg.__version__)'],
                check=True, capture_output=True, text=True).stdout.strip()
            from cyborg_lite.common import placement_server
            placement = placement_server.PlacementServer(
                basedir=os.path.join(workdir, 'placement'))
            os.makedirs(placement.basedir, exist_ok=True)
            placement.start()
            servers['cyborg'] = start_cyborg(workdir, args.devices, nova.url,
                                             placement.endpoint, python,
                                             args.cyborg_transport,
                                             args.server)
        for server in servers.values():
            server.wait_ready()
        if args.observability:
            scraper = Scraper(servers['on'].url, args.scrape_interval)
        report = measure(servers, args)
        if scraper is not None:
            scraper.stop()
        # NOTE: a bind's Nova event follows its Bound, which the client
        # may see first; a server stops after the calls in flight, so
        # once all have stopped every event has been sent.
        for server in servers.values():
            server.stop()
        print_table(report, list(servers))
        result = {'bench': 'api', 'machine': common.machine(),
                  'params': {k: v for k, v in vars(args).items()
                             if k not in ('output', 'workdir')},
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
        if placement is not None:
            placement.stop()
        nova.stop()
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
    main()
