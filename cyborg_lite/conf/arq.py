"""Options of the [arq] group: the bind workflow of accelerator
requests."""
from oslo_config import cfg

ARQ = cfg.OptGroup('arq', title='Accelerator request binding')

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
    cfg.IntOpt('warm_wait_timeout',
               default=290,
               min=0,
               max=86400,
               help='Seconds a bind may wait for a busy region that runs '
                    'the function its device profile asks for (held by '
                    'another accelerator request, or being wiped) instead '
                    'of programming a free sibling region of the same '
                    'provider. A bind waits only when the device\'s recent '
                    'history says that region is freed sooner than '
                    'programming takes, and only one bind waits per busy '
                    'region. A bind still waiting after this many seconds '
                    '(since a conductor took it, by the database server\'s '
                    'clock) programs a free region, as without waiting '
                    '(checked every reap_interval, before the reaper). '
                    'Keep it below bind_timeout: the reaper fails a bind '
                    'still waiting then. 0: binds never wait.'),
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


def list_opts():
    return [(ARQ, ARQ_OPTS)]
