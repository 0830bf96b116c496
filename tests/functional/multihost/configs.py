"""The config files of a multihost cluster's services (cluster.py), one
per service (``<name>.conf`` in the cluster's dir) as on real hosts, and
the short intervals they set so that faults resolve in seconds."""
import configparser
import os

from cyborg_lite.cmd import placement_server

REGION_TYPE = '9346116d5a7d4b3a9b1b8e5b5d7a1c2e'
REGION_MEMORY_MB = 4096

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


class Configs:
    """A Cluster's config files."""

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
