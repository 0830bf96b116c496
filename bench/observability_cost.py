"""The CPU that metrics and notifications cost the API bench's four
scenarios: the same code with them on and off, alternated in one run.

    .venv/bin/python -m bench.observability_cost [--devices 10000]
        [--requests 2000] [--lists 20] [--binds 200] [--blocks 8]
        [--trials 2] [--rabbitmq [--busy-neighbour]]
        [--notifications-url URL] [--driver messagingv2|log]

bench/api.py ``--observability`` measures the same over HTTP, but its
throughput moves by a third between rounds on this shared machine, far
more than the few percent in question. CPU per request is what a
CPU-bound server's throughput is the inverse of, and it moves less.

Each trial is a child process that seeds ``--devices`` cards into SQLite
and runs what bench/ours_server.py runs (the API's WSGI application,
noauth, and the conductor over ``inproc://``), then calls the
application in process: GET /v2/devices of every card, POST
/v2/device_profiles, POST /v2/accelerator_requests (4 threads, as the
bench's clients), and a bind (POST an ARQ, PATCH the bind, GET until
Bound). It alternates ``--blocks`` blocks of each mode, in one process
so that the two share the data, the memory and the machine's moment:
``off`` ([metrics]enabled = false, no notification driver) and ``on``
(metrics on; [oslo_messaging_notifications] driver = ``--driver`` over
``--notifications-url``: by default the process's ``inproc://``, where
the Notifier runs on a thread of the process and, with no listener,
the driver keeps nothing; a broker's URL, or ``--rabbitmq`` (a RabbitMQ
of tests/servers.py with a consumer), sends from the notification
sender's own process, whose CPU is given apart). The process CPU clock,
every thread's (the conductor's and the sending thread's too), per
request; notifications are flushed before the clock stops, and what the
process's other threads spent while an "on" block waited for its sender
is not counted (an "off" block does not wait). ``--http`` serves both
applications with cheroot in the trial's process and sends the requests
from a client process: the server's CPU a request, as ``bench/api.py``
loads it.

With two CPUs or more the API's process runs on the first and
everything else (the sender, the broker, its consumer, this process) on
the others, as a server's cores would be shared out. ``--busy-neighbour``
keeps those others busy publishing in both modes: what is left between
the modes is the API's own cost, not its neighbours' load on a shared
machine. Each trial also times one scrape of GET /metrics (the device
series at ``--devices`` cards), which Prometheus makes once per scrape
interval, not per request.
"""
import argparse
import collections
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import uuid

from bench import common
from bench import cpu
from bench import observability_load as load

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIND_PROFILE = 'bench-observability'
# GETs each bind made until Bound (one every 2 ms), by mode: a bind's CPU
# grows with them, and with its wall time.
BIND_GETS = {'on': [], 'off': []}
MODE = {'name': 'off'}
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
        'metrics': {'api_unauthenticated': True},
        'oslo_messaging_notifications': {
            'transport_url': args.notifications_url},
    }
    for group, values in overrides.items():
        for name, value in values.items():
            CONF.set_override(name, value, group=group)
    return CONF


def _scenarios(call, args, prefix='p'):
    from bench import api
    from bench import seed
    names = iter(range(10 ** 9))
    cards = iter(range(args.devices))

    def list_devices():
        _expect(call('GET', '/v2/devices'), 200, 'GET /v2/devices')

    def create_profile():
        _expect(call('POST', '/v2/device_profiles', [
            {'name': '%s%d' % (prefix, next(names)),
             'groups': [api.PROFILE_GROUP]}]),
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
        gets = 0
        while time.monotonic() < deadline:
            gets += 1
            state = json.loads(_expect(
                call('GET', '/v2/accelerator_requests/' + arq), 200,
                'GET ARQ'))['state']
            if state == 'Bound':
                BIND_GETS[MODE['name']].append(gets)
                return
            if state == 'BindFailed':
                raise RuntimeError('bind of %s failed' % arq)
            time.sleep(0.002)
        raise RuntimeError('ARQ %s not Bound after 30 s' % arq)

    return {'list_devices': (list_devices, args.lists, 1),
            'create_profile': (create_profile, args.requests, 4),
            'create_arq': (create_arq, args.requests, 4),
            'bind': (bind, args.binds, 1)}


class _Modes:
    """Switches the application and the notifications between the two
    modes without starting a sender each time: the "on" sender is made
    once (its start, and the broker's work on a connection, are not a
    notification's cost: a sender started per block moved the blocks
    after it by a tenth) and kept, idle, through the "off" blocks, in
    which this process makes no notification, as one whose driver is not
    set (an idle sender costs nothing: --driver log's runs)."""

    def __init__(self, conf, apps, driver, settle):
        from cyborg_lite.notifications import events as notifications
        self.notifications = notifications
        self.apps = apps
        notifications.reset(timeout=10)
        conf.set_override('driver', [driver],
                          group='oslo_messaging_notifications')
        assert notifications.enabled()
        sender = getattr(notifications._sender, 'child_pid', None)
        if sender is not None and load.PINNED['others']:
            load.pin(sender, load.PINNED['others'])
        assert notifications.wait_started()
        # NOTE: the module's own state, as the service's would be with
        # notifications on or off; a bench's liberty.
        self.states = {True: (notifications._sender, True),
                       False: (None, False)}
        time.sleep(settle)

    def switch(self, on):
        """The application of mode ``on``."""
        self.notifications.flush()
        MODE['name'] = 'on' if on else 'off'
        (self.notifications._sender,
         self.notifications._enabled) = self.states[on]
        return self.apps[on]

    def sender(self):
        return self.states[True][0]


def child(args):
    sys.path.insert(0, args.root)
    if args.cpus:
        api_cpus, _, others = args.cpus.partition(':')
        load.PINNED.update(api={int(c) for c in api_cpus.split(',')},
                           others={int(c) for c in others.split(',')})
    if load.PINNED['api']:
        os.sched_setaffinity(0, load.PINNED['api'])
    state = tempfile.mkdtemp(prefix='bench-observability-')
    db = 'sqlite:///%s' % os.path.join(state, 'api.sqlite')
    conf = _configure(args, db)
    from cyborg_lite.db import migration
    migration.upgrade()
    from bench import api
    from bench import seed
    seed.seed_ours(db, args.devices)
    from cyborg_lite.api import deploy
    from cyborg_lite.notifications import events as notifications
    from cyborg_lite.conductor import service
    conductor = service.ConductorService(conf)
    conductor.start()
    http = None
    wsgi_apps = {}
    for on in (False, True):
        conf.set_override('enabled', on, group='metrics')
        wsgi_apps[on] = deploy.loadapp(conf)
    apps = {on: common.wsgi_caller(app, HEADERS)
            for on, app in wsgi_apps.items()}
    current = {}

    def call(*request):
        return current['app'](*request)
    try:
        current['app'] = apps[False]
        _expect(call('POST', '/v2/device_profiles', [
            {'name': BIND_PROFILE, 'groups': [api.PROFILE_GROUP]}]), 201,
            'POST bind profile')
        scenarios = _scenarios(call, args)
        for name in ('create_profile', 'create_arq'):   # warm-up
            for _ in range(50):
                scenarios[name][0]()
        # NOTE: the seeded rows and the modules out of the collector's
        # way: its full passes over them, when they fall in one block and
        # not the other, moved a block by a tenth.
        gc.collect()
        gc.freeze()
        cpu = {'on': collections.defaultdict(list),
               'off': collections.defaultdict(list)}
        modes = _Modes(conf, apps, args.driver, args.settle)
        http = load.HttpRunner(wsgi_apps, args) if args.http else None
        sent_before = modes.sender().sent
        sender_before = _sender_cpu_s(modes.sender())

        for block in range(args.blocks):
            # NOTE: off-on, then on-off: a drift (the tables growing, the
            # machine's load) falls on both modes alike; blocks are short
            # so that a pair shares the machine's moment.
            order = (False, True) if block % 2 == 0 else (True, False)
            for on in order:
                current['app'] = modes.switch(on)
                for name, (func, count, threads) in scenarios.items():
                    count = max(1, count // args.blocks)
                    # NOTE: the other threads' CPU while a block waits
                    # for its sender is not the notifications' cost
                    # (_flush_idle_s).
                    ms = (http.cpu_ms_per_call(on, name, count, threads,
                                               _flush_idle_s)
                          if http else common.cpu_ms_per_call(
                              func, count, threads, _flush_idle_s))
                    cpu['on' if on else 'off'][name].append(ms)
        current['app'] = modes.switch(True)
        notifications.flush()
        sent = modes.sender().sent - sent_before
        sender_cpu_s = (_sender_cpu_s(modes.sender()) - sender_before
                        if sender_before is not None else 0)
        start = time.process_time()
        body = _expect(call('GET', '/metrics'), 200, 'GET /metrics')
        result = {
            'cpu_ms_per_request': {
                mode: {name: round(statistics.median(v), 4)
                       for name, v in by_name.items()}
                for mode, by_name in cpu.items()},
            # Throughput on over off, block by block (a pair of blocks
            # ran back to back): their median and quartiles.
            'paired_on_over_off': {
                name: _quartiles([off / on for off, on in zip(
                    cpu['off'][name], cpu['on'][name])])
                for name in cpu['off']},
            'notifications_sent': sent,
            'gets_per_bind_mean': {
                mode: round(statistics.mean(gets), 2)
                for mode, gets in BIND_GETS.items() if gets},
            'scrape': {'cpu_s': round(time.process_time() - start, 3),
                       'bytes': len(body)}}
        if sent and sender_cpu_s:
            result['sender_process_cpu_ms_per_notification'] = round(
                sender_cpu_s * 1000 / sent, 4)
    finally:
        if http is not None:
            http.stop()
        notifications.flush_at_stop()
        conductor.stop()
    import cyborg_lite
    result['root'] = os.path.dirname(os.path.dirname(cyborg_lite.__file__))
    return result


def _flush_idle_s():
    """Flush the notifications; the CPU seconds the process spent
    meanwhile on anything but the sending thread (the conductor's and the
    servers' own threads, which only an "on" block waits for)."""
    from cyborg_lite.notifications import events as notifications
    sender = notifications._sender
    thread = getattr(sender, '_thread', None)
    if thread is None:
        return 0.0
    clock = time.pthread_getcpuclockid(thread.ident)
    process, sending = time.process_time(), time.clock_gettime(clock)
    notifications.flush()
    return max(0.0, (time.process_time() - process) -
               (time.clock_gettime(clock) - sending))


def _quartiles(values):
    q1, median, q3 = statistics.quantiles(values, n=4)
    return {'median': round(median, 3), 'q1': round(q1, 3),
            'q3': round(q3, 3)}


def _sender_cpu_s(sender):
    """CPU seconds of the process sending the notifications, when it is
    one of its own (notifications/senders.ProcessSender)."""
    pid = getattr(sender, 'child_pid', None)
    return None if pid is None else cpu.ticks([pid])


def run(args):
    script = os.path.join(HERE, 'bench', 'observability_cost.py')
    argv = ['--devices', str(args.devices), '--requests', str(args.requests),
            '--lists', str(args.lists), '--binds', str(args.binds),
            '--blocks', str(args.blocks), '--settle', str(args.settle),
            '--driver', args.driver] + (['--http'] if args.http else [])
    load.choose_cpus()
    if load.PINNED['others']:
        argv += ['--cpus', '%s:%s' % tuple(
            ','.join(map(str, sorted(load.PINNED[k])))
            for k in ('api', 'others'))]
        # NOTE: before the broker starts: it inherits them.
        os.sched_setaffinity(0, load.PINNED['others'])
    broker = load.Broker() if args.rabbitmq else None
    if broker and args.busy_neighbour:
        broker.keep_busy()
    url = broker.url if broker else args.notifications_url
    if url:
        argv += ['--notifications-url', url]
    trials = []
    try:
        for _ in range(args.trials):
            result = common.run_in_tree(HERE, script, argv)
            common.log('off %s\non  %s' % (
                result['cpu_ms_per_request']['off'],
                result['cpu_ms_per_request']['on']))
            trials.append(result)
    finally:
        if broker:
            broker.stop()
    keys = sorted(trials[0]['cpu_ms_per_request']['off'])
    medians = {mode: {key: statistics.median(
                   t['cpu_ms_per_request'][mode][key] for t in trials)
                   for key in keys}
               for mode in ('off', 'on')}
    sender_cpu = [t['sender_process_cpu_ms_per_notification']
                  for t in trials
                  if 'sender_process_cpu_ms_per_notification' in t]
    return {
        'bench': 'observability_cost',
        'machine': common.machine(),
        'params': {k: getattr(args, k) for k in (
            'devices', 'requests', 'lists', 'binds', 'blocks', 'settle',
            'trials', 'driver', 'http', 'notifications_url', 'rabbitmq',
            'busy_neighbour')},
        'cpus': {k: sorted(v) for k, v in load.PINNED.items()},
        'notifications_heard_by_the_consumer': broker and broker.heard,
        'trials': trials,
        'median_cpu_ms_per_request': medians,
        # Throughput of a CPU-bound server, on against off: the medians'
        # ratio, and the median of the blocks' paired ratios (with the
        # lowest first and highest third quartile of the trials).
        'throughput_on_over_off': {
            key: common.ratio(medians['off'][key], medians['on'][key])
            for key in keys},
        'paired_on_over_off': {key: {
            'median': statistics.median(
                t['paired_on_over_off'][key]['median'] for t in trials),
            'q1': min(t['paired_on_over_off'][key]['q1'] for t in trials),
            'q3': max(t['paired_on_over_off'][key]['q3'] for t in trials)}
            for key in keys},
        'scrape_cpu_s_median': statistics.median(
            t['scrape']['cpu_s'] for t in trials),
        'scrape_bytes': trials[-1]['scrape']['bytes'],
        # Another core's, not the API's: the notification sender process.
        'sender_process_cpu_ms_per_notification_median': (
            statistics.median(sender_cpu) if sender_cpu else None),
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
    parser.add_argument('--blocks', type=int, default=8,
                        help='blocks of each mode in a trial, alternated '
                             'in one process')
    parser.add_argument('--settle', type=float, default=2.0,
                        help='seconds the blocks wait after the sender '
                             'started')
    parser.add_argument('--trials', type=int, default=2,
                        help='processes, each running every block')
    parser.add_argument('--rabbitmq', action='store_true',
                        help='start a RabbitMQ (tests/servers.py) and a '
                             'consumer of its notifications, and send them '
                             'there')
    parser.add_argument('--driver', default='messagingv2',
                        choices=('messagingv2', 'log'),
                        help="the notifications' driver in the on blocks; "
                             'log (with a --notifications-url of a broker, '
                             'never reached: the sender is a process) runs '
                             'the whole path but a broker\'s')
    parser.add_argument('--busy-neighbour', action='store_true',
                        help='with --rabbitmq: keep the other CPUs busy '
                             'publishing notifications in both modes, so '
                             'that what differs is the API process\'s own '
                             'cost, not its neighbours\' load')
    parser.add_argument('--http', action='store_true',
                        help='send the scenarios over HTTP (cheroot, as '
                             'bench/api.py) from a client process on the '
                             'other CPUs: the server\'s CPU a request')
    parser.add_argument('--neighbour', help=argparse.SUPPRESS)
    parser.add_argument('--http-client', action='store_true',
                        help=argparse.SUPPRESS)
    parser.add_argument('--cpus', help=argparse.SUPPRESS)
    parser.add_argument('--notifications-url',
                        help="the notifications' transport_url (default: "
                             "the process's inproc://)")
    args = parser.parse_args(argv)
    if args.neighbour:
        return load.neighbour(args.neighbour)
    if args.http_client:
        return load.http_client(args, _scenarios)
    for name in ('devices', 'requests', 'lists', 'binds', 'blocks',
                 'trials'):
        if getattr(args, name) < 1:
            parser.error('--%s must be at least 1' % name)
    if 2 * max(1, args.binds // args.blocks) * args.blocks > args.devices:
        parser.error('--binds (at least one a block) may not exceed half '
                     '--devices (one card a bind, in each mode)')
    if args.child:
        print(json.dumps(child(args)))
        return
    common.emit(run(args), args.output)


if __name__ == '__main__':
    main()
