"""The API under gunicorn with 1, 2, 4 workers on PostgreSQL.

    .venv/bin/python -m bench.scale_out [--workers 1,2,4] [--devices 1000]
        [--requests 300] [--list-requests 30] [--concurrency 8]
        [--output scale.json]

A private PostgreSQL (tests/servers.py, fsync off as in the tests) holds
``--devices`` cards (bench/seed.py). For each worker count, gunicorn
serves ``cyborg_lite.api.wsgi:init_application()`` (sync workers, noauth,
``[api] max_limit = 10000``), and bench/api.py's load generator sends
``--concurrency`` requests at a time per route: GET /v2/devices (every
row), GET /v2/devices/{uuid}, POST /v2/device_profiles, POST
/v2/accelerator_requests.

To show the next bottleneck, the CPU seconds each party used during the
route are read from /proc: the gunicorn processes (API), the PostgreSQL
processes (DB), this process (the load generator). ``cores_busy`` is CPU
seconds over wall seconds; ``machine`` counts every process (other
people's too): on this 2-core machine a party at ~1 core per process it
can use, or the machine at ~2, is the limit.
"""
import argparse
import os
import shutil
import sys
import tempfile

from bench import api
from bench import api_servers
from bench import common
from bench import cpu
from bench import seed

ROOT = api_servers.ROOT
CONF_TEMPLATE = """[DEFAULT]
transport_url = fake://
default_log_levels = cyborg_lite=WARNING,oslo_messaging=WARNING
[database]
connection = {url}
[api]
auth_strategy = noauth
max_limit = 10000
"""


def start_gunicorn(workdir, conf_path, workers):
    from cyborg_lite.cmd import placement_server
    port = placement_server.free_port()
    env = dict(os.environ, CYBORG_LITE_CONFIG_FILE=conf_path)
    server = api_servers.Server('gunicorn-%d' % workers, [
        sys.executable, '-m', 'gunicorn', '-w', str(workers),
        '-b', '127.0.0.1:%d' % port, '--timeout', '120',
        'cyborg_lite.api.wsgi:init_application()'], port, workdir, env=env)
    return server


class Routes(api.Scenarios):
    def show_device(self, base, i):
        status, body = api_servers.request(
            base, 'GET', '/v2/devices/' + seed.row(i % self.devices)[
                'device_uuid'])
        api_servers._expect(status, body, (200,), 'GET /v2/devices/{uuid}')


def measure(server, args, pg_pids_of):
    routes = Routes('ours', args.devices)
    routes.ensure_bind_profile(server.url)
    for _ in range(3):
        routes.list_devices(server.url, 0)
        routes.create_arq(server.url, 0)
    plan = [('list_devices', args.list_requests),
            ('show_device', args.requests),
            ('create_profile', args.requests),
            ('create_arq', args.requests)]
    result = {}
    for name, count in plan:
        api_pids = cpu.children(server.proc.pid)
        db_pids = pg_pids_of()
        parties = cpu.Parties({'api': lambda: api_pids,
                               'db': lambda: db_pids})
        before = parties.sample()
        run = api._run_collect(server.url, getattr(routes, name), count,
                               args.concurrency)
        spent = parties.spent(before)
        spent['load_generator'] = spent.pop('self')
        wall = run['wall']
        entry = common.latency_summary(run['latencies'], wall)
        entry['errors'] = run['errors']
        entry['first_errors'] = run['first_errors']
        entry['cores_busy'] = {side: round(seconds / wall, 2)
                               for side, seconds in spent.items()}
        result[name] = entry
        common.log('%-15s %7.1f req/s p50 %7.2f ms p99 %7.2f ms  cores: '
                   'api %.2f db %.2f client %.2f machine %.2f' % (
                       name, entry['rps'] or 0, entry['p50_ms'] or 0,
                       entry['p99_ms'] or 0, entry['cores_busy']['api'],
                       entry['cores_busy']['db'],
                       entry['cores_busy']['load_generator'],
                       entry['cores_busy']['machine']))
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--workers', default='1,2,4')
    parser.add_argument('--devices', type=int, default=1000)
    parser.add_argument('--requests', type=int, default=300)
    parser.add_argument('--list-requests', type=int, default=30)
    parser.add_argument('--concurrency', type=int, default=8)
    parser.add_argument('--output')
    args = parser.parse_args(argv)
    workers = [int(w) for w in args.workers.split(',')]

    sys.path.insert(0, ROOT)
    from tests import servers
    from cyborg_lite.common import config
    from cyborg_lite.conf import CONF
    from cyborg_lite.db import migration
    from cyborg_lite.db.sql import session

    workdir = tempfile.mkdtemp(prefix='bench-scale-')
    pg = servers.PostgresServer().start()
    report = {}
    try:
        url = pg.create_database('cyborg_lite')
        config.parse_args([], default_config_files=[])
        common.quiet()
        CONF.set_override('connection', url, group='database')
        migration.upgrade(url=url)
        seed.seed_ours(url, args.devices)
        session.dispose_all()
        conf_path = os.path.join(workdir, 'cyborg_lite.conf')
        with open(conf_path, 'w') as f:
            f.write(CONF_TEMPLATE.format(url=url))
        postmaster = cpu.postmaster(pg)
        for count in workers:
            server = start_gunicorn(workdir, conf_path, count)
            try:
                server.wait_ready()
                common.log('-- gunicorn %d worker(s)' % count)
                report[str(count)] = measure(
                    server, args, lambda: cpu.children(postmaster))
            finally:
                server.stop()
        common.emit({'bench': 'scale_out', 'machine': common.machine(),
                     'params': {k: v for k, v in vars(args).items()
                                if k != 'output'},
                     'workers': report}, args.output)
    finally:
        pg.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
    main()
