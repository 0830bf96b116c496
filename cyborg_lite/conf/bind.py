"""Options of the [arq] group (bind workflow) and the [nova] group.

[nova] holds keystoneauth1's standard session, auth and adapter options,
used only by the 'nova' bind notifier; with the default 'log' notifier
nothing is read from it, so a deployment without Nova needs no credentials.
"""
import copy

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

ARQ = cfg.OptGroup('arq', title='Accelerator request binding')
NOVA = cfg.OptGroup(
    'nova', title='Nova compute API',
    help='Where and how the "nova" bind notifier reaches the compute API '
         'to send accelerator-request-bound external events. Standard '
         'keystoneauth1 session, auth and adapter options.')

NOVA_SERVICE_TYPE = 'compute'

ARQ_OPTS = [
    cfg.IntOpt('bind_timeout',
               default=300,
               min=1,
               help='Seconds an accelerator request may stay BindStarted '
                    'before the reaper moves it to BindFailed. A bind '
                    'normally ends within a second; one left behind means '
                    'the conductor doing it died. An ARQ whose region is '
                    'being programmed by an active programming job is left '
                    'to that job. Keep it well above the clock skew between '
                    'conductor hosts.'),
    cfg.IntOpt('reap_interval',
               default=60,
               min=1,
               help='Seconds between two runs of the stale-bind reaper in '
                    'each conductor. Any conductor may reap any ARQ.'),
    cfg.StrOpt('notifier',
               default='log',
               help='Who is told when an accelerator request becomes Bound '
                    'or BindFailed: "log" only logs it; "nova" sends the '
                    'accelerator-request-bound external event to the '
                    'compute API configured in [nova]; a '
                    '"package.module:Class" path loads another notifier.'),
]


def _nova_adapter_opts():
    # NOTE: copies, so the compute default does not leak into other groups
    # that use the same keystoneauth option objects.
    opts = copy.deepcopy(
        ks_loading.get_adapter_conf_options(include_deprecated=False))
    for opt in opts:
        if opt.dest == 'service_type':
            opt.default = NOVA_SERVICE_TYPE
    return opts


def register_opts(conf):
    conf.register_group(ARQ)
    conf.register_opts(ARQ_OPTS, group=ARQ)
    conf.register_group(NOVA)
    ks_loading.register_session_conf_options(conf, NOVA.name)
    ks_loading.register_auth_conf_options(conf, NOVA.name)
    conf.register_opts(_nova_adapter_opts(), group=NOVA)


def list_opts():
    nova_opts = (ks_loading.get_session_conf_options()
                 + ks_loading.get_auth_common_conf_options()
                 + ks_loading.get_auth_plugin_conf_options('password')
                 + _nova_adapter_opts())
    return [(ARQ, ARQ_OPTS), (NOVA, nova_opts)]
