"""Many hosts on one machine: separate processes over RabbitMQ and PostgreSQL.

A Cluster starts, from the system binaries and this project's console
scripts, on loopback and in one temp dir:

* PostgreSQL (tests/servers.PostgresServer) with one database, migrated by
  ``cyborg-lite-dbsync upgrade``;
* RabbitMQ (tests/servers.RabbitMQServer), ``transport_url = rabbit://``;
* Placement (cyborg_lite.cmd.placement_server, its own SQLite);
* ``cyborg-lite-api`` (gunicorn), N ``cyborg-lite-conductor`` with distinct
  ``[DEFAULT]host`` and M ``cyborg-lite-agent``, each agent with its own
  host name, state path and fake FPGA tree (``[fake_driver]state_dir``).
  Agents download bitstream images from the API (``[agent] image_source
  = http``), as on hosts that do not share the API's bitstream store:
  their own ``store_dir`` is empty.

One config file per service (``<name>.conf`` in the temp dir), as on real
hosts. Each process is started in its own session and stopped by its PID
(SIGTERM to its process group, SIGKILL after a grace period); ``kill9``
sends SIGKILL to one process, as a crash or a pulled plug would;
``pause``/``resume`` SIGSTOP/SIGCONT one (a process that hangs).
PostgreSQL and RabbitMQ can be stopped and started again on the same
port with their data (``stop_database``, ``restart_rabbitmq``).
"""
import collections
import configparser
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid

import requests

from cyborg_lite.cmd import placement_server
from cyborg_lite.cmd import processes
from tests import servers
from tests import waiting

BIN = os.path.dirname(os.path.abspath(sys.executable))
REGION_TYPE = '9346116d5a7d4b3a9b1b8e5b5d7a1c2e'
REGION_MEMORY_MB = 4096
ACCEL = {'OpenStack-API-Version': 'accelerator 2.3',
         'Content-Type': 'application/json'}
V24 = {'OpenStack-API-Version': 'accelerator 2.4'}
PLACEMENT = {'X-Auth-Token': placement_server.TOKEN,
             'OpenStack-API-Version': 'placement 1.39',
             'Content-Type': 'application/json'}
RESOLVED = ('Bound', 'BindFailed')

# Short intervals so faults resolve in seconds, not minutes. A bind no
# conductor took is sent again after BIND_RESEND s, well before the
# BIND_TIMEOUT that fails a bind a conductor took and left.
BIND_TIMEOUT = 20
BIND_RESEND = 2
REAP_INTERVAL = 1
REPORT_INTERVAL = 1
HEARTBEAT_INTERVAL = 1
# Above a broker restart's gap, RabbitMQ boot and the services' reconnect
# backoff included (test_fault_rabbitmq_restart), on a loaded 2-core CI.
AGENT_DOWN_TIME = 15
# Notifications go to RabbitMQ on this topic (test_notifications.py
# listens); the last agent's host is a Kubernetes node for the
# conductors (the claims of test_notifications.py).
NOTIFICATION_TOPIC = 'notifications'

Region = collections.namedtuple('Region', ['host', 'rp_uuid', 'name'])


class Service:
    """One console-script process with its config file and log."""

    def __init__(self, name, script, conf_path, log_dir, extra_args=(),
                 popen=subprocess.Popen):
        self.name = name
        self.popen = popen
        self.argv = [os.path.join(BIN, script), '--config-file',
                     conf_path] + list(extra_args)
        self.log_path = os.path.join(log_dir, '%s.log' % name)
        self.proc = None

    @property
    def pid(self):
        return self.proc.pid if self.proc is not None else None

    def start(self):
        with open(self.log_path, 'ab') as log:
            self.proc = self.popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def pause(self):
        """SIGSTOP the process group: it hangs, holding its connections."""
        os.killpg(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.killpg(self.proc.pid, signal.SIGCONT)

    def log_size(self):
        """Where the log ends now (``read_log_since`` reads from there)."""
        try:
            return os.path.getsize(self.log_path)
        except OSError:
            return 0

    def read_log_since(self, offset):
        with open(self.log_path, 'rb') as f:
            f.seek(offset)
            return f.read().decode('utf-8', 'replace')

    def kill9(self):
        """SIGKILL this process only (not its children), then reap it."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        returncode, self.proc = self.proc.returncode, None
        return returncode

    def stop(self, timeout=20):
        """SIGTERM the process group this service leads, SIGKILL on
        timeout; the exit status (None when it was not running)."""
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        return processes.stop(proc, timeout, group=True)

    def read_log(self, chars=6000):
        try:
            with open(self.log_path, errors='replace') as f:
                return f.read()[-chars:]
        except OSError:
            return ''


def _write_conf(path, sections):
    parser = configparser.RawConfigParser()
    parser.optionxform = str
    for section, values in sections.items():
        if section != 'DEFAULT':
            parser.add_section(section)
        for key, value in values.items():
            if isinstance(value, bool):
                value = 'true' if value else 'false'
            elif isinstance(value, (list, tuple)):
                value = ','.join(value)
            parser.set(section, key, str(value))
    with open(path, 'w') as f:
        parser.write(f)


class Cluster:
    """PostgreSQL + RabbitMQ + Placement + api + conductors + agents."""

    def __init__(self, agents=3, conductors=2, cards=2, regions=2,
                 api_workers=1, program_delay=3.0,
                 report_interval=REPORT_INTERVAL, full_report_every=5,
                 popen=subprocess.Popen):
        # report_interval / full_report_every None: the shipped defaults.
        # popen: what starts this code's processes, called as
        # subprocess.Popen (the tests': tests/fork_server.popen).
        self.popen = popen
        self.basedir = tempfile.mkdtemp(prefix='cyborg-lite-multihost-')
        self.cards, self.regions = cards, regions
        self.program_delay = program_delay
        self.report_interval = report_interval
        self.full_report_every = full_report_every
        self.api_workers = api_workers
        self.agent_hosts = ['host-%d' % i for i in range(agents)]
        self.conductor_names = ['conductor-%s' % chr(ord('a') + i)
                                for i in range(conductors)]
        self.api_port = servers.free_port()
        self.api = 'http://127.0.0.1:%d/v2' % self.api_port
        # Each conductor serves /metrics on a port of its own.
        self.conductor_metrics_ports = {name: servers.free_port()
                                        for name in self.conductor_names}
        self.k8s_host = self.agent_hosts[-1]
        self.services = {}
        self.pg = self.rabbit = self.placement = None
        self.db_url = None
        self._engine = None
        self.session = requests.Session()

    # --- lifecycle -----------------------------------------------------

    def start(self):
        try:
            self.pg = servers.PostgresServer().start()
            self.db_url = self.pg.create_database('cyborg_lite')
            self.rabbit = servers.RabbitMQServer().start()
            self.placement = placement_server.PlacementServer(
                basedir=os.path.join(self.basedir, 'placement'),
                popen=self.popen)
            os.makedirs(self.placement.basedir)
            self.placement.start()
            self._write_configs()
            self._dbsync()
            for name in self.conductor_names:
                self._add(name, 'cyborg-lite-conductor').start()
            self._add('api', 'cyborg-lite-api').start()
            for host in self.agent_hosts:
                self._add(host, 'cyborg-lite-agent').start()
            servers.wait_for_port(self.api_port, 90,
                                  proc=self.services['api'].proc)
            self.wait_regions()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        """Stop every process by PID, then the servers; remove the dir.
        Returns {service: exit status} of the cyborg-lite services."""
        statuses = {}
        for name in reversed(list(self.services)):
            statuses[name] = self.services[name].stop()
        # Kept for the report of a service that did not stop cleanly.
        self.final_logs = {n: self.services[n].read_log(20000)
                           for n, status in statuses.items() if status}
        if self._engine is not None:
            self._engine.dispose()
        self.session.close()
        if self.placement is not None:
            self.placement.stop()
        if self.rabbit is not None:
            self.rabbit.cleanup()
        if self.pg is not None:
            self.pg.stop()
        shutil.rmtree(self.basedir, ignore_errors=True)
        return statuses

    def _add(self, name, script):
        service = Service(name, script, self.conf_path(name), self.basedir,
                          popen=self.popen)
        self.services[name] = service
        return service

    def conf_path(self, name):
        return os.path.join(self.basedir, '%s.conf' % name)

    def _common(self, host):
        return {
            'DEFAULT': {'host': host, 'transport_url': self.rabbit.url,
                        'state_path': os.path.join(self.basedir, host),
                        'debug': False, 'rpc_response_timeout': 10},
            'oslo_messaging_rabbit': {
                # Reconnect fast after a broker restart.
                'rabbit_retry_interval': 1, 'rabbit_retry_backoff': 1,
                'rabbit_interval_max': 2, 'kombu_reconnect_delay': 0.5,
                'heartbeat_timeout_threshold': 10},
            'database': {'connection': self.db_url},
            'bitstreams': {'store_dir': os.path.join(self.basedir,
                                                     'bitstreams')},
            'arq': {'bind_timeout': BIND_TIMEOUT,
                    'bind_resend_interval': BIND_RESEND,
                    'reap_interval': REAP_INTERVAL},
            'programming': {'heartbeat_timeout': 4, 'heartbeat_interval': 1,
                            'reap_interval': 1, 'max_attempts': 2,
                            'bind_wait_timeout': BIND_TIMEOUT - 2},
            'cleaning': {'heartbeat_timeout': 4, 'heartbeat_interval': 1,
                         'reap_interval': 1},
            'oslo_messaging_notifications': {
                'driver': 'messagingv2', 'topics': NOTIFICATION_TOPIC},
        }

    def _write_configs(self):
        for name in self.conductor_names:
            sections = self._common(name)
            sections['conductor'] = {'workers': 1, 'periodic_interval': 1,
                                     'agent_down_time': AGENT_DOWN_TIME}
            sections['kubernetes'] = {'hosts': self.k8s_host}
            sections['metrics'] = {
                'conductor_port': self.conductor_metrics_ports[name],
                'listen_host': '127.0.0.1'}
            sections['placement'] = {
                'auth_type': 'admin_token', 'token': placement_server.TOKEN,
                'endpoint_override': self.placement.endpoint,
                'create_compute_node_rp': True,
                'sync_retry_initial_interval': 0.5,
                'sync_retry_max_interval': 2}
            _write_conf(self.conf_path(name), sections)
        sections = self._common('api')
        sections['api'] = {'host': '127.0.0.1', 'port': self.api_port,
                           'workers': self.api_workers,
                           'auth_strategy': 'noauth'}
        _write_conf(self.conf_path('api'), sections)
        for host in self.agent_hosts:
            self.write_agent_conf(host)
        _write_conf(self.conf_path('dbsync'),
                    {'DEFAULT': {}, 'database': {'connection': self.db_url}})

    def write_agent_conf(self, host, **fake_driver):
        """The agent's config file, with [fake_driver] ``fake_driver``
        overriding the cluster's (read at the agent's next start)."""
        sections = self._common(host)
        sections['agent'] = {'enabled_drivers': 'fake', 'rpc_timeout': 5,
                             'heartbeat_interval': HEARTBEAT_INTERVAL,
                             'image_source': 'http'}
        # docs/deployment.md's agent on another host (noauth API).
        sections['image_api'] = {
            'endpoint_override': 'http://127.0.0.1:%d' % self.api_port}
        sections['bitstreams'] = {'store_dir': os.path.join(
            self.basedir, host, 'no-shared-store')}
        if self.report_interval is not None:
            sections['agent']['report_interval'] = self.report_interval
        if self.full_report_every is not None:
            sections['agent']['full_report_every'] = self.full_report_every
        sections['fake_driver'] = dict({
            'num_cards': self.cards, 'regions_per_card': self.regions,
            'local_memory_mb': REGION_MEMORY_MB,
            'region_types': REGION_TYPE,
            'program_delay': self.program_delay,
            'state_dir': os.path.join(self.basedir, host, 'fake_fpga')},
            **fake_driver)
        _write_conf(self.conf_path(host), sections)

    def _dbsync(self):
        proc = self.popen(
            [os.path.join(BIN, 'cyborg-lite-dbsync'), '--config-file',
             self.conf_path('dbsync'), 'upgrade'],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate(timeout=120)
        if proc.returncode != 0:
            raise RuntimeError('dbsync failed: %s%s' % (out, err))

    # --- faults ----------------------------------------------------------

    def kill9(self, name):
        return self.services[name].kill9()

    def restart(self, name):
        """Stop ``name`` and start it again (``start_again``)."""
        self.services[name].stop()
        return self.start_again(name)

    def start_again(self, name):
        """Start the stopped service ``name``; a conductor is waited for
        until it serves (a test that went on at once could take away the
        database it was still connecting to)."""
        service = self.services[name]
        offset = service.log_size()
        service.start()
        if name in self.conductor_names:
            started = 'Conductor %s started' % name
            self.wait_for(lambda: started in service.read_log_since(offset)
                          or not service.alive(), 90, started)
            assert service.alive(), service.read_log_since(offset)
        return service

    def stop_placement(self):
        self.placement.stop()

    def start_placement(self):
        self.placement.start()

    def restart_rabbitmq(self, while_down=None):
        self.rabbit.restart(while_down=while_down)

    def stop_rabbitmq(self):
        self.rabbit.stop()

    def start_rabbitmq(self):
        self.rabbit.start()

    def stop_database(self):
        """Stop PostgreSQL (fast shutdown: clients are disconnected), keep
        its data for ``start_database``."""
        self.pg.stop_server()

    def start_database(self):
        self.pg.start_server()

    def log_offsets(self, *names):
        return {n: self.services[n].log_size()
                for n in names or self.services}

    def logs_since(self, offsets):
        """{service: what it logged since ``log_offsets`` was taken}."""
        return {n: self.services[n].read_log_since(offset)
                for n, offset in offsets.items()}

    # --- reading state ---------------------------------------------------

    def logs(self, *names):
        names = names or list(self.services)
        return '\n'.join('===== %s =====\n%s' % (n,
                         self.services[n].read_log()) for n in names)

    def db(self):
        """A SQLAlchemy engine on the cluster's database (the test's own
        connection, for checks the API does not expose)."""
        if self._engine is None:
            import sqlalchemy as sa
            # pre_ping: the database may have been restarted by a test.
            self._engine = sa.create_engine(self.db_url, pool_size=2,
                                            pool_pre_ping=True)
        return self._engine

    def query(self, sql, **params):
        import sqlalchemy as sa
        with self.db().connect() as conn:
            return conn.execute(sa.text(sql), params).fetchall()

    def placement_get(self, path, **params):
        resp = requests.get(self.placement.endpoint + path,
                            headers=PLACEMENT, params=params, timeout=10)
        resp.raise_for_status()
        return resp.json()

    def region_rps(self):
        """[Region] every provider of FPGA regions Placement has, by host:
        a card's, when its regions are reached through its PF (the fake
        driver's default: common/shared_functions.py)."""
        found = []
        rps = self.placement_get('/resource_providers')['resource_providers']
        by_uuid = {rp['uuid']: rp for rp in rps}
        hosts = {rp['uuid']: rp['name'] for rp in rps
                 if rp['uuid'] == rp['root_provider_uuid']}
        for rp in rps:
            if rp['uuid'] == rp['root_provider_uuid']:
                continue
            inv = self.placement_get('/resource_providers/%s/inventories'
                                     % rp['uuid'])['inventories']
            if 'FPGA' in inv:
                found.append(Region(hosts.get(rp['root_provider_uuid']),
                                    rp['uuid'], by_uuid[rp['uuid']]['name']))
        return sorted(found, key=lambda r: (r.host, r.name))

    def region_per_card(self):
        """[Region] one per card: offers that never share a PCI function,
        so binds to them do not exclude each other (each card's regions,
        reached through its PF, are offered by the card's provider)."""
        regions = self.region_rps()
        assert len(regions) == len(self.agent_hosts) * self.cards
        return regions

    def reserved_regions(self):
        """[Region] whose FPGA Placement holds back (reserved > 0)."""
        return [r for r in self.region_rps()
                if self.placement_get('/resource_providers/%s/inventories'
                                      % r.rp_uuid)['inventories']['FPGA'][
                    'reserved']]

    def wait_for_free_regions(self, timeout):
        return waiting.until(lambda: not self.reserved_regions(), timeout,
                             0.5)

    def expected_regions(self):
        """How many FPGA providers Placement has: one per card, whose
        regions all sit behind its PF."""
        return len(self.agent_hosts) * self.cards

    def wait_regions(self, timeout=120):
        seen = []

        def all_regions():
            try:
                seen[:] = self.region_rps()
            except requests.RequestException:
                seen[:] = []
            return len(seen) == self.expected_regions() and list(seen)
        regions = waiting.until(all_regions, timeout, interval=0.5)
        if not regions:
            raise TimeoutError('Placement has %d of %d regions:\n%s' % (
                len(seen), self.expected_regions(), self.logs()))
        return regions

    # --- API helpers -----------------------------------------------------

    def call(self, method, path, expect=None, headers=None, **kwargs):
        kwargs.setdefault('timeout', 30)
        resp = self.session.request(method, self.api + path,
                                    headers=dict(ACCEL, **(headers or {})),
                                    **kwargs)
        if expect is not None and resp.status_code != expect:
            raise AssertionError('%s %s -> %s %s' % (
                method, path, resp.status_code, resp.text))
        return resp

    def create_profile(self, name, memory_mb=REGION_MEMORY_MB, extra=None):
        group = {'resources:FPGA': '1',
                 'resources:CUSTOM_FPGA_LOCAL_MEMORY_MB': str(memory_mb),
                 'trait:CUSTOM_FPGA_REGION_%s' % REGION_TYPE.upper():
                     'required'}
        group.update(extra or {})
        self.call('POST', '/device_profiles', 201,
                  json=[{'name': name, 'groups': [group]}])
        return self.call('GET', '/device_profiles/' + name,
                         200).json()['device_profile']

    def create_arqs(self, profile_name, count=1):
        arqs = []
        for _ in range(count):
            arqs += self.call('POST', '/accelerator_requests', 201,
                              json={'device_profile_name': profile_name}
                              ).json()['arqs']
        return arqs

    def bind(self, arq_uuid, region, instance=None, session=None):
        instance = instance or str(uuid.uuid4())
        patch = {arq_uuid: [
            {'path': '/hostname', 'op': 'add', 'value': region.host},
            {'path': '/device_rp_uuid', 'op': 'add',
             'value': region.rp_uuid},
            {'path': '/instance_uuid', 'op': 'add', 'value': instance}]}
        resp = (session or requests).patch(
            self.api + '/accelerator_requests', headers=ACCEL, json=patch,
            timeout=30)
        if resp.status_code != 202:
            raise AssertionError('bind %s -> %s %s' % (
                arq_uuid, resp.status_code, resp.text))
        return instance

    def upload_bitstream(self, name, afu_uuid, visibility='private'):
        """An active GBS bitstream whose image loads ``afu_uuid``."""
        from tests.unit.bitstreams import builders
        image = builders.build_gbs(builders.gbs_metadata(
            interface_uuid=builders.INTERFACE_UUID, afu_uuid=afu_uuid))
        resp = self.session.post(
            self.api + '/bitstreams', headers=V24, timeout=30,
            json={'name': name, 'format': 'gbs', 'vendor': 'intel',
                  'version': '1', 'visibility': visibility})
        assert resp.status_code == 201, resp.text
        bs_uuid = resp.json()['uuid']
        resp = self.session.put(
            self.api + '/bitstreams/%s/file' % bs_uuid, data=image,
            headers=dict(V24, **{'Content-Type':
                                 'application/octet-stream'}), timeout=30)
        assert resp.status_code == 204, resp.text
        return bs_uuid

    def job(self, job_uuid):
        return self.call('GET', '/programs/' + job_uuid, 200,
                         headers=V24).json()

    def arq(self, arq_uuid):
        return self.call('GET', '/accelerator_requests/' + arq_uuid,
                         200).json()

    def wait_resolved(self, arq_uuids, timeout):
        """{uuid: arq} once every ARQ is Bound or BindFailed; raises with
        the stragglers' states after ``timeout`` seconds."""
        pending, done = set(arq_uuids), {}

        def all_resolved():
            for arq_uuid in sorted(pending):
                arq = self.arq(arq_uuid)
                if arq['state'] in RESOLVED:
                    done[arq_uuid] = arq
            pending.difference_update(done)
            return not pending
        if not waiting.until(all_resolved, timeout, interval=0.3):
            raise AssertionError('ARQs not resolved after %ss: %s' % (
                timeout, {u: self.arq(u)['state'] for u in pending}))
        return done

    def delete_arqs(self, arq_uuids):
        arq_uuids = list(arq_uuids)
        for i in range(0, len(arq_uuids), 20):
            self.call('DELETE', '/accelerator_requests', 204,
                      params={'arqs': ','.join(arq_uuids[i:i + 20])})

    def handle_double_use(self):
        """Attach handles held by more than one ARQ, from the database."""
        return self.query(
            'SELECT attach_handle_id, count(*) FROM accelerator_requests '
            'WHERE attach_handle_id IS NOT NULL GROUP BY attach_handle_id '
            'HAVING count(*) > 1')

    def wait_for(self, predicate, timeout, what, interval=0.5):
        value = waiting.until(predicate, timeout, interval)
        if not value:
            raise AssertionError('%s not reached after %ss' % (what, timeout))
        return value

    def conductor_samples(self):
        """{(sample name, sorted labels): value} added up over every
        conductor's /metrics port (a call goes to whichever conductor
        takes it from the topic)."""
        from prometheus_client import parser
        total = collections.Counter()
        for port in self.conductor_metrics_ports.values():
            text = requests.get('http://127.0.0.1:%d/metrics' % port,
                                timeout=10).text
            for family in parser.text_string_to_metric_families(text):
                for sample in family.samples:
                    total[sample.name, tuple(sorted(
                        sample.labels.items()))] += sample.value
        return total

    # --- the simulated hardware -----------------------------------------

    def afu_id_path(self, region):
        """The afu_id file of ``region`` in its agent's simulated tree (of
        a card's provider: its first region, the one a bind or a program
        of the card takes first)."""
        address, region_name = region.name.split('_')[-2:]
        if region_name.startswith('region'):
            port = int(region_name[len('region'):])
        else:
            address, port = region_name, 0
        root = os.path.join(self.basedir, region.host, 'fake_fpga', 'sys')
        for dirpath, _dirs, files in os.walk(root):
            if ('afu_id' in files and address in dirpath and
                    os.path.basename(dirpath).startswith('dfl-port.')):
                with open(os.path.join(dirpath, 'id')) as f:
                    if int(f.read().strip()) == port:
                        return os.path.join(dirpath, 'afu_id')
        raise LookupError('no afu_id for %s under %s' % (region, root))

    def local_memory_path(self, region):
        """The file standing for the region's on-card memory in its
        agent's simulated host (drivers/fake.py): what a clean empties."""
        port = os.path.basename(os.path.dirname(self.afu_id_path(region)))
        directory = os.path.join(self.basedir, region.host, 'fake_fpga',
                                 'local_memory')
        os.makedirs(directory, exist_ok=True)
        return os.path.join(directory, port)

    def cleaning_state(self, region):
        """(device_state, cleaning_started_at, cleaning_attempts) of the
        region's deployable, from the database."""
        row = self.query(
            'SELECT device_state, cleaning_started_at, cleaning_attempts '
            'FROM deployables WHERE rp_uuid = :rp ORDER BY id LIMIT 1',
            rp=region.rp_uuid)[0]
        return tuple(row)

    def wait_cleaned(self, timeout=60):
        """Wait until no region waits for or is under its clean between
        tenants (after a test released some)."""
        self.wait_for(lambda: not self.query(
            "SELECT id FROM deployables WHERE device_state IN "
            "('pending_cleaning', 'cleaning')"), timeout,
            'every released region cleaned')

    def load_function(self, region, function_id):
        """Change what the region runs behind the agent's back (an operator
        with the vendor tool): the agent's next scan reports it."""
        path = self.afu_id_path(region)
        tmp = path + '.tmp'
        with open(tmp, 'w') as f:
            f.write(function_id + '\n')
        os.replace(tmp, path)

    def api_function_id(self, region):
        deps = self.call('GET', '/deployables', 200,
                         params={'rp_uuid': region.rp_uuid}
                         ).json()['deployables']
        return deps[0]['function_id'] if deps else None

    def placement_traits(self, region):
        return set(self.placement_get('/resource_providers/%s/traits'
                                      % region.rp_uuid)['traits'])
