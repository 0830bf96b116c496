"""The parts of bench/observability_cost.py outside the API's process:
the CPUs each party runs on, the HTTP load generator, and the broker
with its consumer (and the busy neighbour)."""
import json
import os
import subprocess
import sys
import threading
import time

from bench import common

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(HERE, 'bench', 'observability_cost.py')


# The CPUs of the API's process, and those of everything else (the
# notification sender, the broker, its consumer): on a shared machine a
# broker's threads preempting the API's moved its CPU per request by a
# third. Empty: not pinned (one CPU, or not Linux).
PINNED = {'api': set(), 'others': set()}


def choose_cpus():
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:
        return
    if len(cpus) >= 2:
        PINNED.update(api={cpus[0]}, others=set(cpus[1:]))


def pin(pid, cpus):
    """Every thread of ``pid`` (and those it starts later) on ``cpus``."""
    for tid in os.listdir('/proc/%d/task' % pid):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except (ProcessLookupError, FileNotFoundError):
            pass


# The HTTP headers of observability_cost.HEADERS (environ keys).
HTTP_HEADERS = {'X-Roles': 'admin,member',
                'X-Project-Id': '9b1deb4d3b7d4bad9bdd2b0d7b3dcb6d',
                'X-User-Id': '1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed',
                'Accept': 'application/json',
                'OpenStack-API-Version': 'accelerator 2.3',
                'Content-Type': 'application/json'}


def http_client(args, make_scenarios):
    """--http-client: run the scenarios over HTTP as stdin asks, one JSON
    line each ({"scenario", "count", "threads", "port"}), answering a line
    when done: the load generator of --http, a process of its own so
    that the server's CPU clock counts the server only."""
    import http.client
    local = threading.local()
    target = {}

    def call(method, path, body=None):
        port = target['port']
        conns = getattr(local, 'conns', None)
        if conns is None:
            conns = local.conns = {}
        conn = conns.get(port)
        if conn is None:
            conn = conns[port] = http.client.HTTPConnection(
                '127.0.0.1', port, timeout=60)
        conn.request(method, path, body=None if body is None else
                     json.dumps(body), headers=HTTP_HEADERS)
        resp = conn.getresponse()
        return resp.status, resp.read()
    # NOTE: its own profile names; the server made p0, p1... warming up.
    scenarios = make_scenarios(call, args, prefix='http-')
    for line in sys.stdin:
        ask = json.loads(line)
        target['port'] = ask['port']
        calls, errors = common.in_threads(scenarios[ask['scenario']][0],
                                          ask['count'], ask['threads'])
        print(repr(errors[0]) if errors else calls, flush=True)


class HttpRunner:
    """--http: both applications served by cheroot in this process (as
    bench/ours_server.py serves one), the scenarios sent by a client
    process on the other CPUs; ``cpu_ms_per_call``'s counterpart."""

    def __init__(self, apps, args):
        from bench import serving
        from cyborg_lite.cmd import placement_server
        self.ports = {}
        self.stops = []
        for on, app in apps.items():
            port = placement_server.free_port()
            self.stops.append(serving.serve('cheroot', app, port, 8))
            self.ports[on] = port
        argv = [sys.executable, SCRIPT, '--http-client',
                '--devices', str(args.devices)]
        self.client = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=HERE,
            env=common.tree_env(args.root), text=True)
        if PINNED['others']:
            pin(self.client.pid, PINNED['others'])

    def cpu_ms_per_call(self, on, name, count, threads, before_stop):
        start = time.process_time()
        self.client.stdin.write(json.dumps({
            'scenario': name, 'count': count, 'threads': threads,
            'port': self.ports[on]}) + '\n')
        self.client.stdin.flush()
        answer = self.client.stdout.readline()
        if not answer.strip().isdigit():
            raise RuntimeError('the HTTP client failed %s: %s'
                               % (name, answer))
        done = int(answer)
        excluded = before_stop() or 0.0
        return (time.process_time() - start - excluded) * 1000 / done

    def stop(self):
        self.client.stdin.close()
        self.client.wait(30)
        for stop in self.stops:
            stop()


class Broker:
    """With ``--rabbitmq``: a RabbitMQ of tests/servers.py and a listener
    taking every notification off it (as a deployment's consumer would:
    a queue nobody reads grows until the broker pages it to disk), both
    on this process's CPUs, not the API's."""

    def __init__(self):
        from tests import servers
        self.server = servers.RabbitMQServer().start()
        self.url = self.server.url
        self.heard = 0
        import oslo_messaging as messaging
        from oslo_config import cfg
        conf = cfg.ConfigOpts()
        conf([], project='bench-listener', default_config_files=[])
        self.transport = messaging.get_notification_transport(
            conf, url=self.url)
        self.listener = messaging.get_notification_listener(
            self.transport, [messaging.Target(topic='notifications')],
            [self], executor='threading')
        self.listener.start()

    def info(self, *_args):
        self.heard += 1

    error = info

    def keep_busy(self):
        """A process of its own publishing notifications to the broker
        without a pause, on this process's CPUs, until ``stop``."""
        self.neighbour = subprocess.Popen(
            [sys.executable, SCRIPT, '--neighbour',
             self.url], cwd=HERE, env=common.tree_env(HERE))

    def stop(self):
        if getattr(self, 'neighbour', None) is not None:
            self.neighbour.kill()
            self.neighbour.wait()
        self.listener.stop()
        self.listener.wait()
        self.transport.cleanup()
        self.server.cleanup()


def neighbour(url):
    """--busy-neighbour's load: publish AgentPayload notifications to
    ``url`` for ever."""
    import oslo_messaging as messaging
    from oslo_config import cfg
    conf = cfg.ConfigOpts()
    conf([], project='bench-neighbour', default_config_files=[])
    transport = messaging.get_notification_transport(conf, url=url)
    notifier = messaging.Notifier(transport, publisher_id='bench:neighbour',
                                  driver='messagingv2',
                                  topics=['notifications'])
    payload = {'hostname': 'neighbour', 'state': 'up', 'device_uuids': []}
    while True:
        notifier.info({}, 'accelerator.agent.up', payload)
