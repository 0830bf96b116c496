"""What runs around every handler: who is calling, how to reach the
conductor, and errors as JSON.

``Wrapper.call`` puts on the request the caller's RequestContext and the
conductor client, calls the handler, and turns the domain exceptions it
raises (and webob HTTP errors) into Cyborg's error body with the
exception's status. A database or conductor that cannot be reached is a
503 with ``Retry-After``: the request may succeed later as it is. Anything
else propagates to fault.FaultWrapper, which answers 500.
(openstack-placement's wsgi_wrapper does the same around its handlers.)
"""
import threading

from oslo_log import log
import oslo_messaging
import webob.exc

from cyborg_lite.api import fault
from cyborg_lite.api import policy
from cyborg_lite.api import utils
from cyborg_lite.common import context as cl_context
from cyborg_lite.common import exception

LOG = log.getLogger(__name__)
# Seconds a client is asked to wait before retrying a 503.
RETRY_AFTER = 5


class RequestContext(cl_context.RequestContext):
    """The caller, from the identity headers the auth middleware left
    (keystonemiddleware's, or noauth's).

    ``is_admin`` is worked out by policy when first read (oslo.context
    calls check_is_admin then): only some handlers need it, and an
    oslo.policy enforcement is a good part of a small request's time.
    Serialised for RPC it is a plain value.
    """

    def check_is_admin(self):
        return policy.check_is_admin(self)


def request_context(environ):
    return RequestContext.from_environ(environ, is_admin=None)


class ConductorClient:
    """The conductor's RPC client, created on first use so that an API
    that never calls the conductor opens no transport."""

    def __init__(self, factory=None):
        self._factory = factory
        self._client = None
        self._lock = threading.Lock()

    def get(self):
        with self._lock:
            if self._client is None:
                if self._factory is None:
                    self._factory = pinned_conductor_api
                self._client = self._factory()
            return self._client


def pinned_conductor_api():
    """The conductor client under [upgrade_levels]conductor (rpc/pins.py):
    no message newer than the oldest conductor takes; ``auto`` reads the
    services table once, when the first request needs the conductor."""
    from cyborg_lite.conf import CONF
    from cyborg_lite.db import services as services_db
    from cyborg_lite.rpc import conductor_client as rpcapi
    return rpcapi.ConductorAPI(version_cap=services_db.version_cap(
        'conductor', CONF.upgrade_levels.conductor,
        CONF.conductor.agent_down_time))


def undecodable():
    """A path or query string that is not UTF-8."""
    return webob.exc.HTTPBadRequest()


def unavailable(message):
    """503 with Retry-After: a dependency is down, retry later."""
    return fault.error_response(503, message,
                                [('Retry-After', str(RETRY_AFTER))])


def error_response(exc):
    """Cyborg's error response for ``exc``; None when it is unexpected
    (a bug: left to fault.FaultWrapper's 500)."""
    if isinstance(exc, exception.CyborgLiteException) and \
            400 <= exc.code < 500:
        return fault.error_response(exc.code, exc.format_message())
    if isinstance(exc, (exception.DatabaseUnavailable,
                        exception.PlacementUnavailable)):
        # NOTE: logged by db/sql/session.py's outage log, once per outage, or
        # by the caller of Placement (api/instance_allocations.py).
        return unavailable(exc.format_message())
    if isinstance(exc, webob.exc.HTTPException) and exc.code >= 400:
        allow = [('Allow', exc.headers['Allow'])] \
            if 'Allow' in exc.headers else None
        return fault.error_response(exc.code, exc.detail or
                                    exc.explanation, allow)
    if isinstance(exc, oslo_messaging.MessagingTimeout):
        LOG.error('No conductor answered: %s', exc)
        return unavailable('The conductor did not answer; try again later.')
    return None


class Wrapper:
    """Calls handlers with the context and conductor on the request."""

    def __init__(self, conductor_factory=None):
        self.conductor = ConductorClient(conductor_factory)

    def call(self, handler, req, params):
        """The handler's response, or the error it raised, as JSON."""
        environ = req.environ
        try:
            try:
                req.GET
            except UnicodeDecodeError:
                raise undecodable()
            environ[utils.CONTEXT_KEY] = request_context(environ)
            environ[utils.CONDUCTOR_KEY] = self.conductor.get
            return handler(req, **params)
        except Exception as exc:
            resp = error_response(exc)
            if resp is None:
                raise
            return resp
