"""The API's own WSGI middleware; deploy.py says in which order they run."""
import re
import time

from keystonemiddleware import auth_token
from oslo_middleware import request_id

from cyborg_lite.api import fault
from cyborg_lite.api import microversion
from cyborg_lite.api import utils
from cyborg_lite.common import exception
from cyborg_lite.common import uuids

# Version documents are read before a client has a token (keystoneauth's
# discovery does so), as Cyborg's public_api_routes allow.
PUBLIC_PATHS = ('/', '/v2', '/v2/')

# (method, path) of routes whose body is an image streamed to disk, not a
# document parsed in memory: their handler enforces its own, larger limit
# ([bitstreams]max_size_mb) while it streams (handlers/bitstream_file).
STREAMED_UPLOADS = (('PUT', re.compile(r'(/v2)?/bitstreams/[^/]+/file/?')),)


# A global request id a caller may pass on (oslo.middleware's format,
# matched as a whole string).
_GLOBAL_REQUEST_ID = re.compile(request_id.ID_FORMAT.strip('^$'))


class RequestId:
    """oslo.middleware's RequestId as a plain WSGI middleware: the same
    environ keys (which oslo.context and oslo.log read), the same inbound
    global request id, the same response header; without the webob
    Request and Response it builds around every request (a twelfth of a
    small POST's time).

    ``observe(environ, status, seconds)``, when given, is told of every
    request once it is answered (status '500' when nothing below
    answered): the metrics' (api/metrics.RequestMetrics), here rather
    than in a layer of their own, so that a request goes through one
    start_response wrapper, not two."""

    def __init__(self, app, observe=None):
        self.app = app
        self.observe = observe

    def __call__(self, environ, start_response):
        global_id = environ.get('HTTP_X_OPENSTACK_REQUEST_ID', '')
        if _GLOBAL_REQUEST_ID.fullmatch(global_id):
            environ[request_id.GLOBAL_REQ_ID] = global_id
        # NOTE: oslo.context's generate_request_id's form, with a uuid
        # that does not cost a GIL hand-over (common/uuids.py).
        req_id = 'req-' + uuids.new()
        environ[request_id.ENV_REQUEST_ID] = req_id
        answered = []

        def add_header(status, headers, exc_info=None):
            answered.append(status)
            name = request_id.HTTP_RESP_HEADER_REQUEST_ID
            if not any(key.lower() == name for key, _ in headers):
                headers = list(headers) + [(name, req_id)]
            return start_response(status, headers, exc_info)

        if self.observe is None:
            return self.app(environ, add_header)
        started = time.perf_counter()
        try:
            return self.app(environ, add_header)
        finally:
            self.observe(environ, answered[-1][:3] if answered else '500',
                         time.perf_counter() - started)


class _LimitedInput:
    """wsgi.input that refuses to deliver more than ``limit`` bytes, for
    bodies whose size is not declared (chunked transfer encoding)."""

    def __init__(self, stream, limit):
        self.stream = stream
        self.limit = limit
        self.seen = 0

    def _count(self, data):
        self.seen += len(data)
        if self.seen > self.limit:
            # NOTE: a domain exception, so that when a handler is reading
            # the body wsgi_wrapper answers 413 like for any other error.
            raise exception.RequestTooLarge(limit=self.limit)
        return data

    def read(self, size=-1):
        if size is None or size < 0:
            size = self.limit + 1 - self.seen
        return self._count(self.stream.read(size))

    def readline(self, size=-1):
        return self._count(self.stream.readline(size))


class BodySizeLimit:
    """413 for a body over ``limit`` bytes, declared or streamed."""

    def __init__(self, app, limit):
        self.app = app
        self.limit = limit

    def _refuse(self, environ, start_response):
        resp = fault.error_response(
            413, 'Request body is larger than the limit of %d bytes.'
                 % self.limit)
        return resp(environ, start_response)

    @staticmethod
    def _streamed(environ):
        method = environ.get('REQUEST_METHOD', '')
        path = environ.get('PATH_INFO', '')
        return any(method == m and regex.fullmatch(path)
                   for m, regex in STREAMED_UPLOADS)

    def __call__(self, environ, start_response):
        if self._streamed(environ):
            return self.app(environ, start_response)
        try:
            length = utils.declared_length(environ) or 0
        except exception.Invalid as exc:
            resp = fault.error_response(400, exc.format_message())
            return resp(environ, start_response)
        if length > self.limit:
            return self._refuse(environ, start_response)
        if not length and 'wsgi.input' in environ:
            environ['wsgi.input'] = _LimitedInput(environ['wsgi.input'],
                                                  self.limit)
        try:
            return self.app(environ, start_response)
        except exception.RequestTooLarge:
            return self._refuse(environ, start_response)


class NoAuth:
    """auth_strategy = noauth: the caller is whoever the X-Roles,
    X-Project-Id and X-User-Id headers say; absent headers take the
    configured defaults. An empty X-Roles header is an anonymous caller."""

    def __init__(self, app, default_roles, default_project_id):
        self.app = app
        self.default_roles = ','.join(default_roles)
        self.default_project_id = default_project_id

    def __call__(self, environ, start_response):
        environ.setdefault('HTTP_X_ROLES', self.default_roles)
        if self.default_project_id:
            environ.setdefault('HTTP_X_PROJECT_ID', self.default_project_id)
        environ.setdefault('HTTP_X_USER_ID', 'noauth')
        return self.app(environ, start_response)


class KeystoneAuth:
    """keystonemiddleware.auth_token, except for the version documents."""

    def __init__(self, app, conf):
        self.app = app
        self.protected = auth_token.AuthProtocol(
            app, {'oslo_config_config': conf})

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO', '/') in PUBLIC_PATHS:
            # NOTE: drop identity headers a caller may have forged; no
            # token was checked, so nobody is authenticated here.
            for key in [k for k in environ if k.startswith('HTTP_X_')
                        and k not in ('HTTP_X_OPENSTACK_REQUEST_ID',)]:
                del environ[key]
            environ['HTTP_X_ROLES'] = ''
            return self.app(environ, start_response)
        return self.protected(environ, start_response)


class Microversion:
    """Negotiates the version (406 when unsupported) and adds the version
    headers to every response, errors included."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        try:
            version = microversion.negotiate(environ)
        except microversion.NotAcceptableVersion as exc:
            resp = fault.error_response(
                406, str(exc), microversion.response_headers(None))
            return resp(environ, start_response)
        environ[microversion.ENVIRON_KEY] = version

        def add_headers(status, resp_headers, exc_info=None):
            resp_headers = [(k, v) for k, v in resp_headers
                            if k.lower() != 'vary']
            resp_headers.extend(microversion.response_headers(version))
            return start_response(status, resp_headers, exc_info)

        return self.app(environ, add_headers)
