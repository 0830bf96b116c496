"""Publishing hosts' inventory to the configured sinks.

The sinks are those [conductor]inventory_sinks names, loaded with
stevedore from the ``cyborg_lite.inventory_sinks`` entry points (see
objects/inventory_sink.py for the interface)::

    publisher = Publisher.from_conf(CONF)
    publisher.publish('node1')     # after a report or job changed the host
    publisher.retry_pending()      # periodic

A sink that is named but not configured (Placement without [placement])
is left out with a warning; a name with no entry point stops the
conductor at start with a ConfigError.
"""
from oslo_log import log as logging
from stevedore import driver as stevedore_driver
from stevedore import exception as stevedore_exc

from cyborg_lite.common import exception
from cyborg_lite.objects import inventory_sink

LOG = logging.getLogger(__name__)


def load_sink_class(name):
    try:
        return stevedore_driver.DriverManager(
            inventory_sink.NAMESPACE, name, invoke_on_load=False).driver
    except stevedore_exc.NoMatches:
        raise exception.ConfigError(
            reason='[conductor]inventory_sinks names %r, which is no entry '
                   'point of %s' % (name, inventory_sink.NAMESPACE))


class Publisher:
    """Publishes to every sink; one sink's failure never stops another."""

    def __init__(self, sinks):
        self.sinks = list(sinks)

    @classmethod
    def from_conf(cls, conf):
        sinks = [load_sink_class(name).from_conf(conf)
                 for name in conf.conductor.inventory_sinks]
        return cls(s for s in sinks if s is not None)

    def __bool__(self):
        return bool(self.sinks)

    def publish(self, hostname):
        """Publish ``hostname`` to each sink; their results."""
        return [self._safely(sink, sink.publish, hostname)
                for sink in self.sinks]

    def retry_pending(self):
        results = []
        for sink in self.sinks:
            results.extend(self._safely(sink, sink.retry_pending) or [])
        return results

    @staticmethod
    def _safely(sink, method, *args):
        # NOTE: a sink reports its consumer's trouble in its results; what
        # raises is a bug or the database, and must not hide the others.
        try:
            return method(*args)
        except Exception:
            LOG.exception('Inventory sink %s failed', type(sink).__name__)
            return None
