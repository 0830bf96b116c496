"""The CPU that metrics and notifications cost the API bench's four
scenarios: the same code with them on and off, alternated in one run.

    .venv/bin/python -m bench.observability_cost [--devices 10000]
        [--requests 2000] [--lists 20] [--binds 200] [--trials 4]

bench/api.py ``--observability`` measures the same over HTTP, but its
throughput moves by a third between rounds on this shared machine, far
more than the few percent in question. CPU per request is what a
CPU-bound server's throughput is the inverse of, and it moves less.

Each trial is a child process, ``off`` ([metrics]enabled = false,
notifications off) or ``on`` (metrics on; [oslo_messaging_notifications]
driver = messagingv2 over ``--notifications-url``, by default the
process's ``inproc://``: the Notifier's whole path runs, but no broker's,
and with no listener in the process the in-process driver keeps nothing;
``rabbit://...`` measures RabbitMQ's driver too). A child seeds ``--devices`` cards into SQLite and runs what
bench/ours_server.py runs (the API's WSGI application, noauth, and the
conductor over ``inproc://``), then calls the application in process:
GET /v2/devices of every card, POST /v2/device_profiles, POST
/v2/accelerator_requests (4 threads, as the bench's clients), and a bind
(POST an ARQ, PATCH the bind, GET until Bound). The process CPU clock,
every thread's (the conductor's and the notifications' too), per
request; notifications are flushed before the clock stops. The ``on``
child also times one scrape of GET /metrics (the device series at
``--devices`` cards), which Prometheus makes once per scrape interval,
not per request.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid

from bench import common

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIND_PROFILE = 'bench-observability'
HEADERS = {'HTTP_X_ROLES': 'admin,member',
           'HTTP_X_PROJECT_ID': '9b1deb4d3b7d4bad9bdd2b0d7b3dcb6d',
           'HTTP_X_USER_ID': '1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed',
           'HTTP_ACCEPT': 'application/json',
           'HTTP_OPENSTACK_API_VERSION': 'accelerator 2.3'}


def _expect(result, wanted, what):
    status, body = result
    if status != wanted:
        raise RuntimeError('%s: %s %s' % (what, status, body[:300]))
    return body


def _configure(args, db):
    from cyborg_lite.common import config
    from cyborg_lite.conf import CONF
    config.parse_args([], default_config_files=[])
    common.quiet()
    overrides = {
        None: {'host': 'bench-observability', 'transport_url': 'inproc://'},
        'database': {'connection': db},
        'api': {'auth_strategy': 'noauth', 'max_limit': 100000},
        'arq': {'notifier': 'log'},
        'metrics': {'enabled': args.mode == 'on',
                    'api_unauthenticated': True},
    }
    if args.mode == 'on':
        overrides['oslo_messaging_notifications'] = {
            'driver': ['messagingv2'],
            'transport_url': args.notifications_url}
    for group, values in overrides.items():
        for name, value in values.items():
            CONF.set_override(name, value, group=group)
    return CONF


def _scenarios(call, args):
    from bench import api
    from bench import seed
    names = iter(range(10 ** 9))
    cards = iter(range(args.devices))

    def list_devices():
        _expect(call('GET', '/v2/devices'), 200, 'GET /v2/devices')

    def create_profile():
        _expect(call('POST', '/v2/device_profiles', [
            {'name': 'p%d' % next(names), 'groups': [api.PROFILE_GROUP]}]),
            201, 'POST profile')

    def create_arq():
        body = _expect(call('POST', '/v2/accelerator_requests',
                            {'device_profile_name': BIND_PROFILE}),
                       201, 'POST ARQ')
        return json.loads(body)['arqs'][0]['uuid']

    def bind():
        row = seed.row(next(cards))
        arq = create_arq()
        _expect(call('PATCH', '/v2/accelerator_requests', {arq: [
            {'op': 'add', 'path': '/hostname', 'value': row['hostname']},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': row['rp_uuid']},
            {'op': 'add', 'path': '/instance_uuid',
             'value': str(uuid.uuid4())}]}), 202, 'PATCH bind')
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            state = json.loads(_expect(
                call('GET', '/v2/accelerator_requests/' + arq), 200,
                'GET ARQ'))['state']
            if state == 'Bound':
                return
            if state == 'BindFailed':
                raise RuntimeError('bind of %s failed' % arq)
            time.sleep(0.002)
        raise RuntimeError('ARQ %s not Bound after 30 s' % arq)

    return {'list_devices': (list_devices, args.lists, 1),
            'create_profile': (create_profile, args.requests, 4),
            'create_arq': (create_arq, args.requests, 4),
            'bind': (bind, args.binds, 1)}


def child(args):
    sys.path.insert(0, args.root)
    state = tempfile.mkdtemp(prefix='bench-observability-')
    db = 'sqlite:///%s' % os.path.join(state, 'api.sqlite')
    conf = _configure(args, db)
    from cyborg_lite.db import migration
    migration.upgrade()
    from bench import api
    from bench import seed
    seed.seed_ours(db, args.devices)
    from cyborg_lite.api import deploy
    from cyborg_lite.common import notifications
    from cyborg_lite.conductor import service
    conductor = service.ConductorService(conf)
    conductor.start()
    try:
        call = common.wsgi_caller(deploy.loadapp(conf), HEADERS)
        _expect(call('POST', '/v2/device_profiles', [
            {'name': BIND_PROFILE, 'groups': [api.PROFILE_GROUP]}]), 201,
            'POST bind profile')
        scenarios = _scenarios(call, args)
        for name in ('create_profile', 'create_arq'):   # warm-up
            for _ in range(50):
                scenarios[name][0]()
        scenarios['list_devices'][0]()
        cpu = {name: round(common.cpu_ms_per_call(
                   func, count, threads, notifications.flush), 4)
               for name, (func, count, threads) in scenarios.items()}
        result = {'mode': args.mode, 'cpu_ms_per_request': cpu,
                  'notifications_sent': notifications.stats()[0]}
        if args.mode == 'on':
            start = time.process_time()
            body = _expect(call('GET', '/metrics'), 200, 'GET /metrics')
            result['scrape'] = {
                'cpu_s': round(time.process_time() - start, 3),
                'bytes': len(body)}
    finally:
        conductor.stop()
    import cyborg_lite
    result['root'] = os.path.dirname(os.path.dirname(cyborg_lite.__file__))
    return result


def run(args):
    script = os.path.join(HERE, 'bench', 'observability_cost.py')
    argv = ['--devices', str(args.devices), '--requests', str(args.requests),
            '--lists', str(args.lists), '--binds', str(args.binds)]
    if args.notifications_url:
        argv += ['--notifications-url', args.notifications_url]
    trials = {'off': [], 'on': []}
    for _ in range(args.trials):
        for mode in trials:
            result = common.run_in_tree(HERE, script,
                                        argv + ['--mode', mode])
            common.log('%-4s %s' % (mode, result['cpu_ms_per_request']))
            trials[mode].append(result)
    keys = sorted(trials['off'][0]['cpu_ms_per_request'])
    medians = {mode: {key: statistics.median(
                   t['cpu_ms_per_request'][key] for t in results)
                   for key in keys}
               for mode, results in trials.items()}
    scrapes = [t['scrape'] for t in trials['on']]
    return {
        'bench': 'observability_cost',
        'machine': common.machine(),
        'params': {k: getattr(args, k) for k in (
            'devices', 'requests', 'lists', 'binds', 'trials',
            'notifications_url')},
        'trials': trials,
        'median_cpu_ms_per_request': medians,
        # Throughput of a CPU-bound server, on against off.
        'throughput_on_over_off': {
            key: common.ratio(medians['off'][key], medians['on'][key])
            for key in keys},
        'scrape_cpu_s_median': statistics.median(s['cpu_s']
                                                 for s in scrapes),
        'scrape_bytes': scrapes[-1]['bytes'],
    }


def main(argv=None):
    parser = common.tree_ab_parser(__doc__.split('\n')[0], HERE)
    parser.add_argument('--devices', type=int, default=10000)
    parser.add_argument('--requests', type=int, default=2000,
                        help='POSTs per trial and route')
    parser.add_argument('--lists', type=int, default=20,
                        help='GET /v2/devices per trial')
    parser.add_argument('--binds', type=int, default=200,
                        help='binds per trial (at most --devices)')
    parser.add_argument('--trials', type=int, default=4,
                        help='trials of each mode, alternated')
    parser.add_argument('--notifications-url',
                        help="the notifications' transport_url (default: "
                             "the process's inproc://)")
    parser.add_argument('--mode', choices=('on', 'off'),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ('devices', 'requests', 'lists', 'binds', 'trials'):
        if getattr(args, name) < 1:
            parser.error('--%s must be at least 1' % name)
    if args.binds > args.devices:
        parser.error('--binds may not exceed --devices (one card each)')
    if args.child:
        print(json.dumps(child(args)))
        return
    common.emit(run(args), args.output)


if __name__ == '__main__':
    main()
