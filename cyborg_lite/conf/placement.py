"""Options of the [placement] group.

The connection options are keystoneauth1's standard session, auth and
adapter options, so a real deployment points this group at Keystone and
the service catalog exactly as Nova's [placement] group does. For a
Placement running with ``auth_strategy = noauth2`` (the embedded default
and tests) use::

    [placement]
    auth_type = admin_token
    token = admin
    endpoint_override = http://127.0.0.1:PORT
"""
from oslo_config import cfg

from cyborg_lite.conf import _keystoneauth

GROUP = cfg.OptGroup('placement', title='Placement service options',
                     help='How the conductor reaches Placement and keeps '
                          'its resource providers in line with the DB.')
SERVICE_TYPE = 'placement'

OPTS = [
    cfg.BoolOpt('create_compute_node_rp',
                default=False,
                help='Create the compute node resource provider (named '
                     'after the host) when Placement has none. Leave off '
                     'when Nova runs: Nova owns that provider and would '
                     'fail to create its own under the same name. The '
                     'all-in-one deployment turns it on.'),
    cfg.BoolOpt('numa_providers',
                default=True,
                help='Put a provider per NUMA node (trait HW_NUMA_ROOT, '
                     'named <host>_numa<n>) between the compute node and '
                     'the devices of that node, so that a request with '
                     'same_subtree (Placement 1.36) keeps groups of one '
                     'device profile on one NUMA node. Existing device '
                     'providers are moved under them, keeping their '
                     'uuids, inventories and allocations. Off, or where '
                     'the tree already has NUMA providers of someone '
                     'else, the devices hang from the compute node. '
                     'Either way, providers of a known node carry '
                     'CUSTOM_NUMA_NODE_<n>.'),
    cfg.FloatOpt('sync_retry_initial_interval',
                 default=1.0,
                 min=0.0,
                 max=3600.0,
                 help='Seconds before the first retry of a host whose '
                      'Placement sync failed; doubled after each failure.'),
    cfg.FloatOpt('sync_retry_max_interval',
                 default=300.0,
                 min=0.0,
                 max=86400.0,
                 help='Upper bound, in seconds, of the wait between '
                      'retries of a failed Placement sync.'),
    cfg.IntOpt('sync_conflict_retries',
               default=5,
               min=0,
               max=100,
               help='How many times one sync re-reads the provider tree '
                    'and retries after Placement answers 409 (another '
                    'writer changed a provider generation).'),
]


def register_opts(conf):
    _keystoneauth.register(conf, GROUP, SERVICE_TYPE)
    conf.register_opts(OPTS, group=GROUP.name)


def list_opts():
    return [(GROUP, OPTS + _keystoneauth.sample_opts(
        SERVICE_TYPE, plugins=('admin_token', 'password', 'v3password')))]
