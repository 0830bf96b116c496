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

Its parts: service.py (one process), configs.py (the config files),
state.py (the logs, the database and Placement, read), api_calls.py (the
API as its users call it) and hardware.py (the agents' simulated FPGAs);
here, the cluster's processes started, stopped and faulted.
"""
import os
import shutil
import subprocess
import tempfile

import requests

from cyborg_lite.cmd import placement_server
from tests import servers
from tests.functional.multihost.api_calls import ACCEL
from tests.functional.multihost.api_calls import ApiCalls
from tests.functional.multihost.api_calls import RESOLVED
from tests.functional.multihost.api_calls import V24
from tests.functional.multihost.configs import AGENT_DOWN_TIME
from tests.functional.multihost.configs import BIND_RESEND
from tests.functional.multihost.configs import BIND_TIMEOUT
from tests.functional.multihost.configs import Configs
from tests.functional.multihost.configs import HEARTBEAT_INTERVAL
from tests.functional.multihost.configs import NOTIFICATION_TOPIC
from tests.functional.multihost.configs import REAP_INTERVAL
from tests.functional.multihost.configs import REGION_MEMORY_MB
from tests.functional.multihost.configs import REGION_TYPE
from tests.functional.multihost.configs import REPORT_INTERVAL
from tests.functional.multihost.hardware import Hardware
from tests.functional.multihost.service import BIN
from tests.functional.multihost.service import Service
from tests.functional.multihost.state import PLACEMENT
from tests.functional.multihost.state import Region
from tests.functional.multihost.state import State

__all__ = ['ACCEL', 'AGENT_DOWN_TIME', 'BIN', 'BIND_RESEND', 'BIND_TIMEOUT',
           'Cluster', 'HEARTBEAT_INTERVAL', 'NOTIFICATION_TOPIC',
           'PLACEMENT', 'REAP_INTERVAL', 'REGION_MEMORY_MB', 'REGION_TYPE',
           'REPORT_INTERVAL', 'RESOLVED', 'Region', 'Service', 'V24']


class Cluster(Configs, State, ApiCalls, Hardware):
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
