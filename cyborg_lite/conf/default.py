"""Options of the [DEFAULT] group shared by every process."""
import socket

from oslo_config import cfg

OPTS = [
    cfg.StrOpt('host',
               default=socket.gethostname(),
               regex=r'^[^\s/]{1,255}$',
               sample_default='<hostname>',
               help='Name of this host. Agents report devices under this '
                    'name; it is also the name of the compute node resource '
                    'provider looked up in Placement.'),
    cfg.StrOpt('state_path',
               default='/var/lib/cyborg_lite',
               regex=r'^/',
               help='Directory where cyborg_lite keeps its state: the '
                    'default SQLite database and the bitstream store.'),
]


def register_opts(conf):
    conf.register_opts(OPTS)


def list_opts():
    return [('DEFAULT', OPTS)]
