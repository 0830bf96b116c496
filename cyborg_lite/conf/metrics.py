"""Options of [metrics] (docs/deployment.md, "Watching it")."""
from oslo_config import cfg

METRICS = cfg.OptGroup('metrics', title='Prometheus metrics',
                       help='Prometheus metrics: GET /metrics of the API, '
                            'and a port of their own for the conductor and '
                            'the agent (docs/deployment.md).')
METRICS_OPTS = [
    cfg.BoolOpt('enabled',
                default=True,
                help='Count and time every API request and serve '
                     'GET /metrics on the API. Off: the route answers '
                     '404 and requests are not counted.'),
    cfg.BoolOpt('api_unauthenticated',
                default=False,
                help='Serve the API\'s GET /metrics without a token (a '
                     'Prometheus that cannot send a Keystone token); the '
                     'series name the projects and instances holding '
                     'devices, so keep the API port off untrusted '
                     'networks then. False: a token whose roles the '
                     'cyborg_lite:metrics:get policy accepts (admin by '
                     'default).'),
    cfg.HostAddressOpt('listen_host',
                       default='0.0.0.0',
                       help='Address the conductor\'s and the agent\'s '
                            'metrics ports listen on.'),
    cfg.PortOpt('conductor_port',
                default=0,
                help='Port on which cyborg-lite-conductor serves /metrics '
                     '(every worker process\'s series, added up); 0: off. '
                     'The all-in-one serves everything on the API.'),
    cfg.PortOpt('agent_port',
                default=0,
                help='Port on which cyborg-lite-agent serves /metrics, '
                     'its devices\' latest temperature, power and error '
                     'counts among them; 0: off.'),
    cfg.StrOpt('multiprocess_dir',
               help='Directory for prometheus_client\'s multi-process '
                    'files, shared by the API\'s gunicorn workers (and the '
                    'conductor\'s), emptied at start. Default: a new '
                    'directory under the system\'s temporary directory.'),
]


def register_opts(conf):
    conf.register_group(METRICS)
    conf.register_opts(METRICS_OPTS, group=METRICS)


def list_opts():
    return [(METRICS, METRICS_OPTS)]
