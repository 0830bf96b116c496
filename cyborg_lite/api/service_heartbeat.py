"""An API process's heartbeat in ``services`` (db/services.py): which
release serves the API on this host, every [agent]heartbeat_interval,
from a daemon thread (it ends with the process; a worker that dies
simply stops beating and ages to down)."""
import threading

from oslo_log import log

from cyborg_lite.api import version_pin
from cyborg_lite.common import version
from cyborg_lite.db import services as services_db
from cyborg_lite.rpc import versions as rpc_versions

LOG = log.getLogger(__name__)


def beat_once(host):
    try:
        services_db.beat('api', host, version.VERSION, rpc_versions.spoken())
        return True
    except Exception as exc:   # the database down: the next beat tries
        LOG.warning('API heartbeat not recorded: %s', exc)
        return False


def start(host, interval):
    """Pin the microversions ([upgrade_levels]api) before serving, then
    beat now and every ``interval`` seconds, each beat followed by the
    pin again (api/version_pin.py); the thread."""
    stop = threading.Event()
    version_pin.refresh_or_hold()

    def loop():
        while True:
            beat_once(host)
            version_pin.refresh_or_hold()
            if stop.wait(interval):
                return
    thread = threading.Thread(target=loop, name='api-heartbeat',
                              daemon=True)
    thread.stop = stop
    thread.start()
    return thread
