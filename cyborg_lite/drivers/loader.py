"""Load the enabled drivers by name from the ``cyborg_lite.drivers`` group.

A driver that is missing, fails to load, or is not a ``base.Driver``
implementing at least one interface is logged and skipped: one bad driver
never stops the agent from reporting what the others find.
"""
import logging

from stevedore import named

from cyborg_lite.drivers import base

LOG = logging.getLogger(__name__)
NAMESPACE = 'cyborg_lite.drivers'


def _log_load_failure(_manager, entrypoint, error):
    LOG.error('Driver %s failed to load, skipping it: %s',
              entrypoint.name, error)


def _log_missing(names):
    LOG.error('Drivers %s are not installed (no %s entry point), '
              'skipping them', ', '.join(sorted(names)), NAMESPACE)


def load_drivers(conf, names):
    """{name: driver instance} for the names that loaded, in names order."""
    manager = named.NamedExtensionManager(
        namespace=NAMESPACE, names=list(names), invoke_on_load=True,
        invoke_args=(conf,), name_order=True,
        on_load_failure_callback=_log_load_failure,
        on_missing_entrypoints_callback=_log_missing)
    drivers = {}
    for extension in manager:
        if not _is_driver(extension.obj):
            LOG.error('Driver %s is not a cyborg_lite driver (%r implements '
                      'none of the driver interfaces), skipping it',
                      extension.name, extension.obj)
            continue
        extension.obj.name = extension.name
        drivers[extension.name] = extension.obj
    return drivers


def _is_driver(obj):
    return isinstance(obj, base.Driver) and any(
        isinstance(obj, interface) for interface in base.INTERFACES)
