"""Options of the [cleaning] group: the secure cleanup between tenants."""
from oslo_config import cfg

CLEANING = cfg.OptGroup('cleaning', title='Secure cleanup between tenants')

CLEANING_OPTS = [
    cfg.IntOpt('heartbeat_interval',
               default=10,
               min=1,
               max=3600,
               help='Seconds between the heartbeats an agent sends while '
                    'its driver cleans a deployable. Keep it well below '
                    'heartbeat_timeout.'),
    cfg.IntOpt('heartbeat_timeout',
               default=60,
               min=1,
               max=86400,
               help='Seconds without a heartbeat after which a cleaning '
                    'try is considered abandoned (its agent died, or the '
                    'conductor that sent it died first) and the deployable '
                    'is cleaned again from the start.'),
    cfg.IntOpt('max_attempts',
               default=3,
               min=1,
               max=100,
               help='Tries of a clean, counting the first, before a '
                    'deployable whose agent keeps dying during it is put '
                    'in error. A try that the driver reported as failed '
                    'is not retried: the deployable goes to error at once '
                    'and stays reserved until an operator retries it.'),
    cfg.IntOpt('reap_interval',
               default=30,
               min=1,
               max=3600,
               help='Seconds between two runs of the cleaning periodic task '
                    'in each conductor: it ends abandoned tries and sends '
                    'every deployable waiting for its clean to its agent '
                    '(a release whose conductor died before sending it is '
                    'picked up here). Any conductor may take any '
                    'deployable.'),
]


def register_opts(conf):
    conf.register_group(CLEANING)
    conf.register_opts(CLEANING_OPTS, group=CLEANING)


def list_opts():
    return [(CLEANING, CLEANING_OPTS)]
