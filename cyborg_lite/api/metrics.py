"""The API's Prometheus metrics: every request counted and timed by its
declared route template, and GET /metrics.

``RequestMetrics`` wraps the whole stack (inside the request id), so a
401 of the auth middleware or a 413 of the size limit counts as well as
a handler's answer; the route is the template the route table matched
(``/v2/devices/{uuid}``), never the raw path, so a label has as many
values as the table has routes (``unmatched`` for the rest).

``MetricsEndpoint`` answers GET /metrics with prometheus_client's text
format: this process's counters (or, under gunicorn, every worker's,
added up: common/metrics.py) and the device, region, agent and holder
series read from the database (objects/device_metrics.py).
"""
import time

import prometheus_client
from prometheus_client import multiprocess

from cyborg_lite.api import fault
from cyborg_lite.api import handler
from cyborg_lite.api.policies import metrics as policies
from cyborg_lite.api import wsgi_wrapper
from cyborg_lite.common import metrics
from cyborg_lite.common import policy
from cyborg_lite.objects import device_metrics

PATH = '/metrics'
ROUTE_KEY = handler.ROUTE_KEY
UNMATCHED = 'unmatched'


class RequestMetrics:
    """Counts and times every request by route, method and status."""

    def __init__(self, app, router):
        self.app = app
        self.router = router
        # NOTE: the labelled children, kept: prometheus_client's labels()
        # takes a lock and builds a key on every call.
        self._counters = {}
        self._timers = {}

    def __call__(self, environ, start_response):
        started = time.perf_counter()
        status = []

        def record_status(code, headers, exc_info=None):
            status.append(code)
            return start_response(code, headers, exc_info)
        try:
            return self.app(environ, record_status)
        finally:
            self._record(environ, status[0][:3] if status else '500',
                         time.perf_counter() - started)

    def _record(self, environ, status, seconds):
        route = environ.get(ROUTE_KEY)
        if route is None:
            route = self._route_of(environ)
        method = environ.get('REQUEST_METHOD', '')
        if method not in _METHODS:
            method = 'other'
        key = (route, method, status)
        counter = self._counters.get(key)
        if counter is None:
            counter = self._counters[key] = metrics.API_REQUESTS.labels(
                route, method, status)
        counter.inc()
        timer = self._timers.get(key[:2])
        if timer is None:
            timer = self._timers[key[:2]] = \
                metrics.API_REQUEST_DURATION.labels(route, method)
        timer.observe(seconds)

    def _route_of(self, environ):
        """A request answered before the route table saw it (auth, size,
        version): its route all the same."""
        path = environ.get('PATH_INFO', '')
        if path == PATH:
            return PATH
        try:
            return self.router.template(path)
        except Exception:
            return UNMATCHED


_METHODS = frozenset(('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE',
                      'OPTIONS'))


def registry():
    """What a scrape of this process shows."""
    if metrics.multiprocess():
        reg = prometheus_client.CollectorRegistry()
        multiprocess.MultiProcessCollector(reg)
    else:
        reg = prometheus_client.REGISTRY
    return _Both(reg)


class _Both:
    """A registry's families and the database's, one scrape."""

    def __init__(self, reg):
        self.reg = reg
        self.devices = device_metrics.DeviceCollector()

    def collect(self):
        yield from self.reg.collect()
        yield from self.devices.collect()


class MetricsEndpoint:
    """GET /metrics; everything else goes on. ``authorize``: check the
    caller's roles against the metrics policy (the endpoint sits behind
    the auth middleware then)."""

    def __init__(self, app, authorize=True):
        self.app = app
        self.authorize = authorize
        self._registry = None

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO') != PATH:
            return self.app(environ, start_response)
        if environ.get('REQUEST_METHOD') not in ('GET', 'HEAD'):
            resp = fault.error_response(
                405, 'Method %s is not allowed here; allowed: GET, HEAD.'
                % environ.get('REQUEST_METHOD'), [('Allow', 'GET, HEAD')])
            return resp(environ, start_response)
        try:
            if self.authorize:
                ctx = wsgi_wrapper.request_context(environ)
                policy.authorize(ctx, policies.GET,
                                 {'project_id': ctx.project_id})
            body = self._scrape()
        except Exception as exc:
            resp = wsgi_wrapper.error_response(exc)
            if resp is None:
                raise
            return resp(environ, start_response)
        start_response('200 OK', [
            ('Content-Type', prometheus_client.CONTENT_TYPE_LATEST),
            ('Content-Length', str(len(body)))])
        return [b''] if environ['REQUEST_METHOD'] == 'HEAD' else [body]

    def _scrape(self):
        if self._registry is None:
            self._registry = registry()
        return prometheus_client.generate_latest(self._registry)
