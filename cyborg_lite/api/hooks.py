"""pecan hooks: who is calling, how to reach the conductor, and errors.

ErrorHook turns the domain exceptions handlers raise (and webob HTTP
errors) into Cyborg's error body with the exception's status. Anything
else is left to propagate to fault.FaultWrapper, which answers 500.
"""
import threading

from oslo_log import log
import oslo_messaging
import pecan
import webob.exc

from cyborg_lite.api import fault
from cyborg_lite.api import utils
from cyborg_lite.common import context as cl_context
from cyborg_lite.common import exception
from cyborg_lite.common import policy

LOG = log.getLogger(__name__)


class ContextHook(pecan.hooks.PecanHook):
    """A RequestContext from the identity headers the auth middleware left
    (keystonemiddleware's, or noauth's)."""

    def before(self, state):
        ctx = cl_context.RequestContext.from_environ(state.request.environ)
        ctx.is_admin = policy.check_is_admin(ctx)
        state.request.environ[utils.CONTEXT_KEY] = ctx


class ConductorHook(pecan.hooks.PecanHook):
    """Puts the conductor's RPC client on the request, created on first
    use so that an API that never calls the conductor opens no transport."""

    def __init__(self, factory=None):
        self._factory = factory
        self._client = None
        self._lock = threading.Lock()

    def _get(self):
        with self._lock:
            if self._client is None:
                if self._factory is None:
                    from cyborg_lite.conductor import rpcapi
                    self._factory = rpcapi.ConductorAPI
                self._client = self._factory()
            return self._client

    def before(self, state):
        state.request.environ[utils.CONDUCTOR_KEY] = self._get


class ErrorHook(pecan.hooks.PecanHook):
    def on_error(self, state, exc):
        if isinstance(exc, exception.CyborgLiteException) and \
                400 <= exc.code < 500:
            return fault.error_response(exc.code, exc.format_message())
        if isinstance(exc, webob.exc.HTTPException) and exc.code >= 400:
            allow = [('Allow', exc.headers['Allow'])] \
                if 'Allow' in exc.headers else None
            return fault.error_response(exc.code, exc.detail or
                                        exc.explanation, allow)
        if isinstance(exc, oslo_messaging.MessagingTimeout):
            LOG.error('No conductor answered: %s', exc)
            return fault.error_response(
                503, 'The conductor did not answer; try again later.')
        return None
