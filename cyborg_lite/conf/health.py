"""Options of the [health] group: the agent's device health monitor."""
from oslo_config import cfg

HEALTH = cfg.OptGroup('health', title='Device health',
                      help='How the agent turns the signals its drivers '
                           'read (error registers, AER counters, '
                           'temperatures, tool reports) into the health of '
                           'each device and region.')

HEALTH_OPTS = [
    cfg.BoolOpt('enabled',
                default=True,
                help='Read each driver\'s health signals on every scan. '
                     'When false, a device has the health its driver '
                     'reports, without hysteresis.'),
    cfg.IntOpt('readings_to_fault',
               default=2,
               min=1,
               max=100,
               help='Consecutive scans whose signals must agree before a '
                    'device turns degraded or unhealthy (and before the '
                    'reason of a state is rewritten). With '
                    '[agent]report_interval, it bounds how late a fault is '
                    'seen: readings_to_fault scans.'),
    cfg.IntOpt('readings_to_clear',
               default=3,
               min=1,
               max=100,
               help='Consecutive clear scans before an unhealthy device '
                    'turns recovering (still not offered), and as many '
                    'again before it is healthy and offered. A degraded '
                    'device is healthy after this many clear scans.'),
    cfg.StrOpt('state_dir',
               default='$state_path/health',
               help='Directory where the agent keeps, in <host>.json, each '
                    'device\'s health state, counters and last findings, '
                    'and the devices vanished from the bus or handed '
                    'over (to vfio-pci), so a restart resumes where it '
                    'stopped. Written only when one of them changes.'),
    cfg.IntOpt('vanished_report_seconds',
               default=86400,
               min=0,
               max=30 * 86400,
               help='A device whose PCI function disappeared from the bus '
                    '(not one its driver merely stopped listing) is '
                    'reported unhealthy, with its last known inventory, '
                    'for this many seconds, then left out of reports like '
                    'any device that is gone. 0: left out at once.'),
    cfg.IntOpt('correctable_errors_per_scan',
               default=0,
               min=0,
               max=1 << 30,
               help='AER correctable errors (aer_dev_correctable '
                    'TOTAL_ERR_COR) one scan must add for a device to turn '
                    'degraded; 0 ignores them, as a few are normal on a '
                    'healthy link.'),
]


def register_opts(conf):
    conf.register_group(HEALTH)
    conf.register_opts(HEALTH_OPTS, group=HEALTH)


def list_opts():
    return [(HEALTH, HEALTH_OPTS)]
