"""Options of the [upgrade_levels] group: the RPC pins of a rolling
upgrade (rpc/pins.py reads them; docs/upgrade.md says when to set what)."""
from oslo_config import cfg

GROUP = cfg.OptGroup('upgrade_levels', title='RPC pins during an upgrade')

_VALUES = ('Empty: this code\'s newest messages (no pin). "auto": the '
           'oldest running %(peer)s\'s, read from the services table '
           'when the client is made (a %(peer)s recording no release is '
           'of the previous release); restart to follow a newer '
           'oldest. A release name (releases.yaml, e.g. 2026.1.0): '
           'what that release\'s %(peer)s accepts. An RPC version '
           '("1.8"): that version.')

# Empty, auto, a release (YEAR.N.PATCH) or an RPC version (MAJOR.MINOR);
# rpc/pins.check refuses at start a release or version it does not know.
_LEVEL = r'^(|auto|[0-9]{4}\.[0-9]+\.[0-9]+|[1-9][0-9]*\.(0|[1-9][0-9]*))$'

OPTS = [
    cfg.StrOpt('conductor',
               regex=_LEVEL,
               help='The newest conductor RPC version the API and the '
                    'conductors send (a conductor casts binds to its '
                    'peers), so that a conductor of an older release '
                    'still accepts each message. ' +
                    _VALUES % {'peer': 'conductor'} +
                    ' Conductors of 2026.1.0 record nothing in the '
                    'services table: while they run, pin by name.'),
    cfg.StrOpt('agent',
               regex=_LEVEL,
               help='The newest agent RPC version the conductors send, '
                    'so that an agent of an older release still accepts '
                    'each message. ' + _VALUES % {'peer': 'agent'}),
    cfg.StrOpt('api',
               regex=_LEVEL,
               help='The newest API microversion this API serves, so that '
                    'during a mixed API tier (behind one load balancer) a '
                    'client never sees the maximum go backwards. Empty: '
                    'this code\'s newest. "auto": the oldest running '
                    'API\'s, from the services table, checked again '
                    'after each heartbeat (the pin lifts once the last '
                    'older API stopped beating; an API recording no '
                    'release is of 2026.1.0). A release name '
                    '(2026.1.0): the newest it served. A microversion '
                    '("2.9"): that one. A newer version asked for is '
                    'refused with 406.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
