"""Options of the [api] group (the cyborg-lite-api process)."""
from oslo_config import cfg

GROUP = cfg.OptGroup('api', title='REST API options')

OPTS = [
    cfg.HostAddressOpt('host',
                       default='127.0.0.1',
                       help='Address the API server listens on. The default '
                            'serves loopback only; set 0.0.0.0 (or the '
                            'management address) to serve other hosts.'),
    cfg.PortOpt('port',
                default=6666,
                help='TCP port the API server listens on (6666 is '
                     "OpenStack Cyborg's port, so existing service catalog "
                     'entries keep working).'),
    cfg.IntOpt('workers',
               default=2,
               min=1,
               max=256,
               help='Number of gunicorn worker processes of '
                    'cyborg-lite-api. Each worker is a separate process '
                    'with its own database pool and RPC client.'),
    cfg.StrOpt('auth_strategy',
               default='keystone',
               choices=[('keystone', 'Validate tokens with '
                                     'keystonemiddleware.auth_token; '
                                     'configure [keystone_authtoken].'),
                        ('noauth', 'No authentication: the caller is who '
                                   'the X-Roles / X-Project-Id / X-User-Id '
                                   'headers say, or the noauth_* defaults. '
                                   'For tests and loopback all-in-one use '
                                   'only.')],
               help='How API callers are authenticated.'),
    cfg.ListOpt('noauth_default_roles',
                default=['admin'],
                item_type=cfg.types.String(regex=r'^[^\s,]+$'),
                help='Roles of a request without an X-Roles header when '
                     'auth_strategy = noauth. Send an empty X-Roles header '
                     'to act as an anonymous caller.'),
    cfg.StrOpt('noauth_default_project_id',
               regex=r'^[^\s]{1,64}$',
               help='Project of a request without an X-Project-Id header '
                    'when auth_strategy = noauth. Unset: no project, so '
                    'device profiles an admin creates are public.'),
    cfg.IntOpt('max_request_body_size',
               default=114688,
               min=1,
               max=64 * 1024 * 1024,
               help='Largest request body accepted, in bytes; a larger one '
                    'is refused with 413 before it is read. The default is '
                    "oslo.middleware's."),
    cfg.IntOpt('max_limit',
               default=1000,
               min=1,
               max=100000,
               help='Most items one list request returns. A request asking '
                    'for more (limit=N) or not saying gets at most this '
                    'many; page on with marker=<last uuid>. A device\'s '
                    'history is read at most this many rows at a time (the '
                    'newest), and a larger limit there is a 400.'),
    cfg.FloatOpt('publish_timeout',
                 default=10.0,
                 min=0.1,
                 max=600.0,
                 help='Seconds a request that takes capacity away (an ARQ '
                      'deleted or unbound, a device disabled) waits for a '
                      'conductor to publish it to Placement and Kubernetes '
                      'before it answers. Past it the request still '
                      'succeeds: the change is stored and the conductors '
                      'publish it from their periodic task.'),
    cfg.URIOpt('public_endpoint',
               schemes=['http', 'https'],
               help='Base URL clients use to reach this API, e.g. '
                    'https://cloud.example.com/accelerator. Used in the '
                    'links of responses and the version documents. Unset: '
                    'the URL of the incoming request (correct unless a proxy '
                    'rewrites it).'),
    cfg.BoolOpt('audit',
                default=False,
                help='Put keystonemiddleware\'s CADF audit filter in the '
                     'API pipeline, behind authentication: an '
                     'audit.http.request and an audit.http.response event '
                     'per request, sent as [audit_middleware_notifications] '
                     'says (else as [oslo_messaging_notifications]). Needs '
                     'audit_map_file.'),
    cfg.StrOpt('audit_map_file',
               help='The audit map of our routes for the audit filter: '
                    'etc/api_audit_map.conf is one '
                    '(docs/deployment.md, "Audit").'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
