"""Parsing the command line and configuration files for every process."""
import os

from oslo_config import cfg
from oslo_log import log

from cyborg_lite.common import exception
from cyborg_lite.conf import CONF

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
    """
    _register_logging(conf)
    for path in _named_config_files(argv):
        if not os.path.isfile(path):
            raise exception.ConfigError(
                reason='config file %s does not exist' % path)
    try:
        conf(argv, project='cyborg_lite', prog=None,
             default_config_files=default_config_files)
    except cfg.ConfigFilesNotFoundError as exc:
        raise exception.ConfigError(
            reason='config file(s) not found: %s'
                   % ', '.join(exc.config_files))
    except (cfg.Error, ValueError) as exc:
        raise exception.ConfigError(reason=str(exc))
    if setup_logging:
        log.setup(conf, 'cyborg_lite')


def _named_config_files(argv):
    paths = []
    for i, arg in enumerate(argv):
        if arg == '--config-file' and i + 1 < len(argv):
            paths.append(argv[i + 1])
        elif arg.startswith('--config-file='):
            paths.append(arg.split('=', 1)[1])
    return paths
