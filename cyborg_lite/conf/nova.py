"""Options of the [nova] group.

[nova] holds keystoneauth1's standard session, auth and adapter options,
used only by the 'nova' bind notifier ([arq]notifier); with the default
'log' notifier nothing is read from it, so a deployment without Nova
needs no credentials.
"""
from oslo_config import cfg

from cyborg_lite.conf import _keystoneauth

NOVA = cfg.OptGroup(
    'nova', title='Nova compute API',
    help='Where and how the "nova" bind notifier reaches the compute API '
         'to send accelerator-request-bound external events. Standard '
         'keystoneauth1 session, auth and adapter options.')

NOVA_SERVICE_TYPE = 'compute'


def register_opts(conf):
    _keystoneauth.register(conf, NOVA, NOVA_SERVICE_TYPE)


def list_opts():
    return [(NOVA, _keystoneauth.sample_opts(NOVA_SERVICE_TYPE,
                                             plugins=('password',)))]
