"""keystoneauth1 options for a group that talks to another service.

[placement], [nova] and [image_api] each take keystoneauth's standard
session, auth and adapter options (so a deployment points them at Keystone
and the catalog) with their own service type. Not an option group itself:
opts.py skips modules whose name starts with an underscore.
"""
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg


def adapter_opts(service_type):
    """Fresh adapter Opt objects with our defaults: the same ones serve
    registration and the sample config, and no group's default leaks into
    another's."""
    opts = ks_loading.get_adapter_conf_options(include_deprecated=False)
    cfg.set_defaults(opts, service_type=service_type,
                     valid_interfaces=['internal', 'public'])
    return opts


def register(conf, group_name, service_type):
    ks_loading.register_session_conf_options(conf, group_name)
    ks_loading.register_auth_conf_options(conf, group_name)
    conf.register_opts(adapter_opts(service_type), group=group_name)


def sample_opts(service_type, plugins=('password', 'v3password')):
    """The options oslo-config-generator shows for such a group."""
    opts = (ks_loading.get_session_conf_options() +
            ks_loading.get_auth_common_conf_options())
    for plugin in plugins:
        opts += ks_loading.get_auth_plugin_conf_options(plugin)
    opts += adapter_opts(service_type)
    unique = {}
    for opt in opts:
        unique.setdefault(opt.dest, opt)
    return list(unique.values())
