"""Options of the [arq] group (bind workflow) and the [nova] group.

[nova] holds keystoneauth1's standard session, auth and adapter options,
used only by the 'nova' bind notifier; with the default 'log' notifier
nothing is read from it, so a deployment without Nova needs no credentials.
"""
from oslo_config import cfg

from cyborg_lite.conf import _keystoneauth

ARQ = cfg.OptGroup('arq', title='Accelerator request binding')
NOVA = cfg.OptGroup(
    'nova', title='Nova compute API',
    help='Where and how the "nova" bind notifier reaches the compute API '
         'to send accelerator-request-bound external events. Standard '
         'keystoneauth1 session, auth and adapter options.')

NOVA_SERVICE_TYPE = 'compute'

ARQ_OPTS = [
    cfg.IntOpt('bind_timeout',
               default=300,
               min=1,
               max=86400,
               help='Seconds a bind a conductor took may run before the '
                    'reaper moves its accelerator request to BindFailed '
                    '(and seconds a bind no conductor took is sent again '
                    'before it is failed). A bind normally ends within a '
                    'second; one left behind means the conductor doing it '
                    'died. An ARQ whose region is being programmed by an '
                    'active programming job is left to that job. Times '
                    'are the database server\'s clock.'),
    cfg.IntOpt('bind_resend_interval',
               default=30,
               min=1,
               max=3600,
               help='Seconds after which a bind that no conductor has taken '
                    'yet (its cast was lost, e.g. in a RabbitMQ restart) is '
                    'cast again by the reaper; it is sent again every this '
                    'many seconds until a conductor takes it or '
                    'bind_timeout passes. Checked every reap_interval.'),
    cfg.IntOpt('reap_interval',
               default=60,
               min=1,
               max=3600,
               help='Seconds between two runs of the stale-bind reaper in '
                    'each conductor. Any conductor may reap any ARQ.'),
    cfg.StrOpt('notifier',
               default='log',
               regex=r'^(log|nova|[A-Za-z_][\w.]*:[A-Za-z_]\w*)$',
               help='Who is told when an accelerator request becomes Bound '
                    'or BindFailed: "log" only logs it; "nova" sends the '
                    'accelerator-request-bound external event to the '
                    'compute API configured in [nova]; a '
                    '"package.module:Class" path loads another notifier.'),
]


def register_opts(conf):
    conf.register_group(ARQ)
    conf.register_opts(ARQ_OPTS, group=ARQ)
    _keystoneauth.register(conf, NOVA, NOVA_SERVICE_TYPE)


def list_opts():
    return [(ARQ, ARQ_OPTS),
            (NOVA, _keystoneauth.sample_opts(NOVA_SERVICE_TYPE,
                                             plugins=('password',)))]
