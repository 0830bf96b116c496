"""The API's HTTP server: cheroot (the all-in-one's) against waitress.

    .venv/bin/python -m bench.http_servers --output servers.json
    # defaults: --devices 1000 --requests 300 --list-requests 20
    #           --concurrency 4 --rounds 3

One process serves one WSGI application (``deploy.loadapp``, noauth,
a SQLite database seeded by bench/seed.py) twice, on two loopback ports:
with ``cyborg_lite.api.server`` (cheroot, 8 threads) and with waitress
(8 threads, as bench/ours_server.py and the all-in-one used to). The
load generator of bench/api.py (``--concurrency`` threads, keep-alive
http.client) runs the API bench's request scenarios against each in
turn, alternating which server goes first every round; figures pool
the rounds. Same app, same database, same client: only the server
differs. (The bind scenario is left out: it measures the conductor.)
"""
import argparse
import os
import sys
import tempfile
import threading

from bench import api as api_bench
from bench import api_servers
from bench import common
from bench import seed

SERVERS = ('cheroot', 'waitress')
SCENARIOS = ('list_devices', 'show_device', 'create_profile', 'create_arq')


class Scenarios(api_bench.Scenarios):
    def show_device(self, base, i):
        row = seed.row(i % self.devices)
        status, body = api_servers.request(
            base, 'GET', '/v2/devices/' + row['device_uuid'])
        api_servers._expect(status, body, (200,), 'GET /v2/devices/{uuid}')


def _serve(app):
    """{server name: (base url, stop)}."""
    import waitress.server

    from cyborg_lite.api import server

    ours = server.Server(app, '127.0.0.1', 0).start()
    theirs = waitress.server.create_server(
        app, host='127.0.0.1', port=0, threads=server.THREADS,
        clear_untrusted_proxy_headers=True)
    threading.Thread(target=theirs.run, daemon=True).start()
    return {
        'cheroot': ('http://127.0.0.1:%d' % ours.port, ours.stop),
        'waitress': ('http://127.0.0.1:%s' % theirs.effective_port,
                     theirs.close),
    }


def _app(workdir, devices):
    from cyborg_lite.api import deploy
    from cyborg_lite.common import config
    from cyborg_lite.conf import CONF
    from cyborg_lite.db import migration

    config.parse_args([], default_config_files=[])
    url = 'sqlite:///%s' % os.path.join(workdir, 'servers.sqlite')
    CONF.set_override('state_path', workdir)
    CONF.set_override('connection', url, group='database')
    CONF.set_override('auth_strategy', 'noauth', group='api')
    CONF.set_override('max_limit', devices, group='api')
    common.quiet()
    migration.upgrade(url=url)
    seed.seed_ours(url, devices)
    return deploy.loadapp(CONF, conductor_factory=lambda: None)


def _run(scenarios, name, base, count, concurrency):
    action = getattr(scenarios, name)
    latencies, errors = [], []
    lock = threading.Lock()
    counter = iter(range(count))

    def worker():
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            with common.Timer() as timer:
                try:
                    action(base, i)
                except Exception as exc:  # counted, reported
                    with lock:
                        errors.append(str(exc)[:300])
                    continue
            with lock:
                latencies.append(timer.elapsed)

    with common.Timer() as wall:
        threads = [threading.Thread(target=worker)
                   for _ in range(concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return latencies, wall.elapsed, errors


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--devices', type=int, default=1000)
    parser.add_argument('--requests', type=int, default=300)
    parser.add_argument('--list-requests', type=int, default=20)
    parser.add_argument('--concurrency', type=int, default=4)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--output')
    args = parser.parse_args(argv)

    machine = common.machine()
    pooled = {s: {n: ([], 0.0, []) for n in SCENARIOS} for s in SERVERS}
    with tempfile.TemporaryDirectory(prefix='http-servers-') as workdir:
        app = _app(workdir, args.devices)
        served = _serve(app)
        try:
            for server_name in SERVERS:
                Scenarios(server_name, args.devices).ensure_bind_profile(
                    served[server_name][0])
            for index in range(args.rounds):
                order = SERVERS if index % 2 == 0 else SERVERS[::-1]
                for name in SCENARIOS:
                    count = args.list_requests if name == 'list_devices' \
                        else args.requests
                    for server_name in order:
                        lat, wall, err = _run(
                            Scenarios(server_name, args.devices), name,
                            served[server_name][0], count,
                            args.concurrency)
                        old = pooled[server_name][name]
                        pooled[server_name][name] = (
                            old[0] + lat, old[1] + wall, old[2] + err)
        finally:
            for _, stop in served.values():
                stop()
    result = {
        'bench': 'http_servers', 'machine': machine,
        'params': vars(args),
        'servers': {s: {n: dict(common.latency_summary(lat, wall),
                                errors=len(err), first_errors=err[:3])
                        for n, (lat, wall, err) in pooled[s].items()}
                    for s in SERVERS},
    }
    for name in SCENARIOS:
        result.setdefault('ratio_rps_cheroot_over_waitress', {})[name] = \
            common.ratio(result['servers']['cheroot'][name]['rps'],
                         result['servers']['waitress'][name]['rps'])
    _table(result)
    common.emit(result, args.output)
    return 0


def _table(result):
    print('%-16s %28s %28s' % ('scenario', 'cheroot rps / p50 / p99 ms',
                               'waitress rps / p50 / p99 ms'),
          file=sys.stderr)
    for name in SCENARIOS:
        cells = []
        for server_name in SERVERS:
            s = result['servers'][server_name][name]
            cells.append('%s / %s / %s' % (s['rps'], s['p50_ms'],
                                           s['p99_ms']))
        print('%-16s %28s %28s' % (name, cells[0], cells[1]),
              file=sys.stderr)


if __name__ == '__main__':
    sys.exit(main())
