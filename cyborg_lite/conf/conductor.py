"""Options of the [conductor] group (cyborg-lite-conductor)."""
from oslo_config import cfg

GROUP = cfg.OptGroup('conductor', title='Conductor options',
                     help='The conductor applies agent reports and runs '
                          'the bind and programming workflows.')

OPTS = [
    cfg.IntOpt('workers',
               default=1,
               min=1,
               max=256,
               help='Conductor processes started by cyborg-lite-conductor. '
                    'They share the RPC topic, so reports are spread over '
                    'them; the database keeps them consistent. Ignored '
                    '(one process) with transport_url = inproc:// or '
                    'fake://, whose messages never leave the process.'),
    cfg.IntOpt('periodic_interval',
               default=10,
               min=1,
               max=3600,
               help='Default seconds between two runs of a periodic task '
                    '(reapers, retries) that does not choose its own '
                    'interval.'),
    cfg.IntOpt('report_retries',
               default=5,
               min=1,
               max=100,
               help='How many times the conductor tries to apply one '
                    'agent report when another writer changed the same '
                    'rows at the same time (a unique-key clash or a stale '
                    'row version) before it gives up and the agent '
                    'resends.'),
    cfg.IntOpt('report_memo_hosts',
               default=2048,
               min=0,
               help='Hosts whose last valid report each conductor process '
                    'remembers, in its exact form, with the rows it '
                    'stands for: the same report again (nearly every '
                    'periodic one) skips validation and the building of '
                    'its rows; the database is compared all the same. '
                    'About 20 KB a host of 8 cards with 2 regions; the '
                    'least recently reporting hosts are forgotten first. '
                    '0 validates every report.'),
    cfg.IntOpt('agent_down_time',
               default=60,
               min=2,
               max=86400,
               help='Seconds without a heartbeat after which a host\'s '
                    'agent is considered down (Nova\'s service_down_time; '
                    'make it several [agent]heartbeat_interval). Checked '
                    'every periodic_interval seconds by every conductor; '
                    'one of them marks the host down and publishes it '
                    'again: its devices are then reserved in Placement '
                    'and binds to them are refused with the reason. '
                    'Nothing is deleted, bound accelerators stay bound, '
                    'and the host is offered again with its next '
                    'heartbeat.'),
    cfg.BoolOpt('trust_own_publish',
                default=True,
                help='Let the conductor that served a host\'s publish '
                     'requests last publish the host\'s next change from '
                     'what it wrote then, without reading the host\'s '
                     'provider tree from Placement first (one request less '
                     'per change; any other conductor reads its listing), '
                     'and let every conductor take the providers it lists '
                     'from the records conductors keep of them in the '
                     'database (two requests less per provider). Set it '
                     'to false while conductors older than database '
                     'revision 0009 still run (a rolling upgrade): they '
                     'serve publish requests without recording it, and '
                     'delete providers without dropping their records.'),
    cfg.ListOpt('inventory_sinks',
                default=['placement'],
                help='Where the conductor publishes each host\'s inventory '
                     'after a report changed it: names of entry points in '
                     'the cyborg_lite.inventory_sinks namespace. '
                     '"placement" keeps a provider tree per host in '
                     'Placement (it needs [placement]); an empty list keeps '
                     'devices in the database only.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
