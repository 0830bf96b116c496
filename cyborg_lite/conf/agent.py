"""Options of the [agent] group (cyborg-lite-agent, one per host); how
it downloads bitstream images is [image_api] (conf/image_api.py)."""
from oslo_config import cfg

GROUP = cfg.OptGroup('agent', title='Agent options',
                     help='How the per-host agent discovers accelerators '
                          'and reports them to the conductor.')

OPTS = [
    cfg.ListOpt('enabled_drivers',
                default=['fake'],
                item_type=cfg.types.String(regex=r'^[A-Za-z0-9_.-]+$'),
                help='Drivers to load, by entry-point name in the '
                     'cyborg_lite.drivers group (fake, fpga_sysfs, pci, '
                     'nvidia, xilinx). A driver that fails to load or to '
                     'scan is logged and skipped; the others still '
                     'report.'),
    cfg.IntOpt('report_interval',
               default=60,
               min=1,
               max=86400,
               help='Seconds between two discovery scans. After a scan '
                    'the agent reports only the drivers whose result '
                    'changed since the conductor last acknowledged them.'),
    cfg.IntOpt('heartbeat_interval',
               default=10,
               min=1,
               max=3600,
               help='Seconds between two heartbeats of the agent to the '
                    'conductor, sent by a thread of their own whatever '
                    'the discovery scans do (Nova\'s report_interval). A '
                    'host whose agent is silent for [conductor] '
                    'agent_down_time seconds is marked down: its devices '
                    'are no longer offered or bound until it beats '
                    'again. Keep it well below that time.'),
    cfg.IntOpt('full_report_every',
               default=10,
               min=1,
               max=10000,
               help='Send a full report (every driver, changed or not) '
                    'every this many scans, besides the one at start. '
                    'It repairs a conductor database that lost or missed '
                    'an update, and lets the conductor delete devices it '
                    'had to keep while they were in use.'),
    cfg.IntOpt('rpc_timeout',
               default=60,
               min=1,
               max=3600,
               help='Seconds the agent waits for the conductor to '
                    'acknowledge a report. An unacknowledged report is '
                    'sent again after the next scan.'),
    cfg.StrOpt('image_source',
               default='local',
               choices=[('local', 'Read images from the bitstream store '
                                  '([bitstreams]store_dir), which this host '
                                  'must see, as in the all-in-one.'),
                        ('http', 'Download images from the API, GET '
                                 '/v2/bitstreams/{uuid}/file, as [image_api] '
                                 'says.')],
               help='Where the agent gets the image of a programming job. '
                    'Either way its sha256 and header are checked before '
                    'any byte reaches the hardware.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
