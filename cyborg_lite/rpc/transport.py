"""oslo.messaging plumbing shared by every process.

One transport per process: with ``transport_url = inproc://`` (the
all-in-one's, rpc/inproc.py) or ``fake://`` the in-memory
exchange lives in that process, so the API, conductor and agent of the
all-in-one must share it to reach each other.
"""
import threading

from kombu import exceptions as kombu_exceptions
import oslo_messaging as messaging
from oslo_messaging.rpc import dispatcher

from cyborg_lite.common import context as cl_context
from cyborg_lite.conf import CONF

CONDUCTOR_TOPIC = 'cyborg-lite-conductor'
AGENT_TOPIC = 'cyborg-lite-agent'

_lock = threading.Lock()
_transport = None


def get_transport(conf=CONF):
    global _transport
    with _lock:
        if _transport is None:
            _transport = messaging.get_rpc_transport(conf)
        return _transport


def cleanup():
    """Drop the process transport (tests, and before exit)."""
    global _transport
    with _lock:
        if _transport is not None:
            _transport.cleanup()
        _transport = None


class ContextSerializer(messaging.Serializer):
    """Sends RequestContext as a dict; entities are plain JSON already."""

    def serialize_entity(self, ctxt, entity):
        return entity

    def deserialize_entity(self, ctxt, entity):
        return entity

    def serialize_context(self, ctxt):
        return ctxt.to_dict()

    def deserialize_context(self, ctxt):
        return cl_context.RequestContext.from_dict(ctxt)


# Reconnections a cast may wait for while the broker is down; then it
# raises MessageDeliveryFailure (oslo.messaging's default is to wait
# forever, which would hang an API request, or a conductor's periodic
# task, for as long as the outage lasts). Every cast's work is found again
# later by a reaper, so giving up is safe.
CAST_CONNECT_RETRIES = 3
# What a cast raises when it gave up: oslo.messaging's own error, or, when
# not even the first connection could be made, kombu's (not wrapped).
CAST_FAILURES = (messaging.MessageDeliveryFailure,
                 kombu_exceptions.OperationalError)


def get_client(topic, version, server=None, version_cap=None, timeout=None):
    target = messaging.Target(topic=topic, version=version, server=server)
    return messaging.get_rpc_client(get_transport(), target,
                                    version_cap=version_cap,
                                    serializer=ContextSerializer(),
                                    timeout=timeout)


def get_server(topic, server, endpoints):
    """A threading RPC server; ``start()`` it, ``stop()``/``wait()`` it.

    Threading is oslo.messaging's default (and soon only) executor.
    """
    target = messaging.Target(topic=topic, server=server)
    access_policy = dispatcher.DefaultRPCAccessPolicy
    return messaging.get_rpc_server(get_transport(), target, endpoints,
                                    serializer=ContextSerializer(),
                                    access_policy=access_policy)
