"""Parsing the command line and configuration files for every process.

Every console script calls ``parse_args``, which also reads every
registered option once, so a bad value in any group stops the process at
start-up with one line naming the option and the file, instead of
failing later (oslo.config converts a value only when it is read: a bad
``[api] max_limit`` used to be a 500 on every list request).
"""
import os
import re
import sys

from oslo_config import cfg
from oslo_log import log

from cyborg_lite.common import exception
from cyborg_lite.common import version
from cyborg_lite.conf import CONF

LOG = log.getLogger(__name__)

_LOG_REGISTERED = False


def _register_logging(conf):
    global _LOG_REGISTERED
    if not _LOG_REGISTERED:
        log.register_options(conf)
        _LOG_REGISTERED = True


def parse_args(argv, conf=CONF, default_config_files=None,
               setup_logging=True):
    """Parse ``argv`` (without the program name) into ``conf``.

    A config file named with --config-file that does not exist is a
    ConfigError with the path in the message, not an oslo traceback.
    ``--version`` prints the release and exits. The first line logged
    names the program and its release (mid-upgrade, an operator reads
    which code each service started as).
    """
    _register_logging(conf)
    for path in _named_config_files(argv):
        if not os.path.isfile(path):
            raise exception.ConfigError(
                reason='config file %s does not exist' % path)
    try:
        conf(argv, project='cyborg_lite', prog=None,
             version=version.VERSION,
             default_config_files=default_config_files)
    except cfg.ConfigFilesNotFoundError as exc:
        raise exception.ConfigError(
            reason='config file(s) not found: %s'
                   % ', '.join(exc.config_files))
    except (cfg.Error, ValueError) as exc:
        raise exception.ConfigError(reason=str(exc))
    check_values(conf)
    check_transport_urls(conf)
    if setup_logging:
        log.setup(conf, 'cyborg_lite')
        LOG.info('%s %s starting', os.path.basename(sys.argv[0]),
                 version.VERSION)


# oslo.config's message names the option and where its value came from,
# in a form meant for developers: LocationInfo(..., detail='<file>').
_BAD_VALUE = re.compile(r"detail='(?P<where>[^']*)'.*? is not valid: "
                        r"(?P<why>.*)$", re.S)


def _bad_value(group, name, exc):
    match = _BAD_VALUE.search(str(exc))
    where, why = ((' in %s' % match['where'] if match['where'] else '',
                   match['why']) if match else ('', str(exc)))
    return exception.ConfigError(reason='[%s] %s%s is not valid: %s' % (
        group or 'DEFAULT', name, where, ' '.join(why.split())))


def _read(where, group, name):
    try:
        return getattr(where, name)
    except (cfg.Error, ValueError) as exc:
        raise _bad_value(group, name, exc)


def check_values(conf=CONF):
    """Read every registered option; ConfigError for the first bad one."""
    for name in sorted(conf):
        value = _read(conf, None, name)
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            for opt_name in sorted(value):
                _read(value, name, opt_name)


def check_transport_urls(conf=CONF):
    """The RPC and the notifications' ``transport_url``, where set: a URL
    oslo.messaging can parse, naming a driver it has (a notification
    transport is otherwise first made by the process that sends, long
    after the start). ConfigError without the URL, which may hold a
    password."""
    from importlib import metadata
    drivers = sorted(ep.name for ep in metadata.entry_points(
        group='oslo.messaging.drivers'))
    for group in (None, 'oslo_messaging_notifications'):
        url = (conf if group is None else conf[group]).transport_url
        why = url and _transport_url_problem(conf, url, drivers)
        if why:
            where = getattr(conf.get_location('transport_url', group),
                            'detail', None)
            raise exception.ConfigError(
                reason='[%s] transport_url%s is not valid: %s' % (
                    group or 'DEFAULT', ' in %s' % where if where else '',
                    why))


def _transport_url_problem(conf, url, drivers):
    """What is wrong with ``url`` (without saying it), or None."""
    import oslo_messaging as messaging
    try:
        driver = messaging.TransportURL.parse(conf, url).transport
    except messaging.InvalidTransportURL:
        return ('not a transport URL (driver://user:password@host:port/'
                'virtual_host)')
    if driver.split('+')[0] not in drivers:
        return 'no oslo.messaging driver %r (one of %s)' % (
            driver, ', '.join(drivers))
    return None


def _named_config_files(argv):
    paths = []
    for i, arg in enumerate(argv):
        if arg == '--config-file' and i + 1 < len(argv):
            paths.append(argv[i + 1])
        elif arg.startswith('--config-file='):
            paths.append(arg.split('=', 1)[1])
    return paths
