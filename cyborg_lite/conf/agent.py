"""Options of the [agent] group (cyborg-lite-agent, one per host)."""
from oslo_config import cfg

GROUP = cfg.OptGroup('agent', title='Agent options',
                     help='How the per-host agent discovers accelerators '
                          'and reports them to the conductor.')

OPTS = [
    cfg.ListOpt('enabled_drivers',
                default=['fake'],
                help='Drivers to load, by entry-point name in the '
                     'cyborg_lite.drivers group (fake, fpga_sysfs, pci, '
                     'nvidia, xilinx). A driver that fails to load or to '
                     'scan is logged and skipped; the others still '
                     'report.'),
    cfg.IntOpt('report_interval',
               default=60,
               min=1,
               help='Seconds between two discovery scans. After a scan '
                    'the agent reports only the drivers whose result '
                    'changed since the conductor last acknowledged them.'),
    cfg.IntOpt('full_report_every',
               default=10,
               min=1,
               help='Send a full report (every driver, changed or not) '
                    'every this many scans, besides the one at start. '
                    'It repairs a conductor database that lost or missed '
                    'an update, and lets the conductor delete devices it '
                    'had to keep while they were in use.'),
    cfg.IntOpt('rpc_timeout',
               default=60,
               min=1,
               help='Seconds the agent waits for the conductor to '
                    'acknowledge a report. An unacknowledged report is '
                    'sent again after the next scan.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
