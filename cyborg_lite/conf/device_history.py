"""Options of [device_history] (docs/deployment.md, "Watching it")."""
from oslo_config import cfg

HISTORY = cfg.OptGroup('device_history', title='Device history',
                       help='The per-device history of transitions '
                            '(GET /v2/devices/{uuid}/history).')
HISTORY_OPTS = [
    cfg.IntOpt('max_age_days',
               default=90,
               min=0,
               max=36500,
               help='Rows older than this many days are deleted; 0 keeps '
                    'them whatever their age.'),
    cfg.IntOpt('max_rows_per_device',
               default=1000,
               min=0,
               max=10000000,
               help='Only the newest rows of each device are kept; 0: no '
                    'limit.'),
    cfg.IntOpt('prune_interval',
               default=3600,
               min=10,
               max=604800,
               help='Seconds between two prunes, by every conductor.'),
]


def register_opts(conf):
    conf.register_group(HISTORY)
    conf.register_opts(HISTORY_OPTS, group=HISTORY)


def list_opts():
    return [(HISTORY, HISTORY_OPTS)]
