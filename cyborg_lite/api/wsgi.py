"""WSGI entry point for gunicorn, uwsgi or mod_wsgi::

    gunicorn 'cyborg_lite.api.wsgi:init_application()'

The configuration file comes from CYBORG_LITE_CONFIG_FILE (default: the
usual oslo.config search for cyborg_lite.conf).
"""
import os

from cyborg_lite.api import deploy
from cyborg_lite.api import service_heartbeat
from cyborg_lite.common import config
from cyborg_lite.conf import CONF


def init_application(argv=None):
    """Parse the configuration once and return the WSGI application."""
    if argv is None:
        path = os.environ.get('CYBORG_LITE_CONFIG_FILE')
        argv = ['--config-file', path] if path else []
    config.parse_args(argv)
    service_heartbeat.start(CONF.host, CONF.agent.heartbeat_interval)
    return deploy.loadapp_serving(CONF)
