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


def register(conf, group, service_type):
    """Register ``group`` (an OptGroup) and its options on ``conf``.

    The group is registered as a new object: oslo.config keeps a group's
    options on the OptGroup it is given (and its copy shares them), so the
    options a keystoneauth plugin registers when it is loaded from one
    ConfigOpts would otherwise be in every other one, required and unset.
    """
    conf.register_group(cfg.OptGroup(group.name, title=group.title,
                                      help=group.help))
    ks_loading.register_session_conf_options(conf, group.name)
    ks_loading.register_auth_conf_options(conf, group.name)
    conf.register_opts(adapter_opts(service_type), group=group.name)


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
