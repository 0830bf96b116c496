"""The API's Prometheus metrics: every request counted and timed by its
declared route template, and GET /metrics.

``RequestMetrics`` is told of every request by the outermost layer
(middleware.RequestId), so a 401 of the auth middleware or a 413 of the
size limit counts as well as a handler's answer; the route is the
template the route table matched (``/v2/devices/{uuid}``), never the
raw path, so a label has as many values as the table has routes
(``unmatched`` for the rest). It adds requests up in batches: a scrape
of another worker sees a request within ``FOLD_DELAY`` (a second).

``MetricsEndpoint`` answers GET /metrics with prometheus_client's text
format: this process's counters (or, under gunicorn, every worker's,
added up: metrics/counted.py) and the device, region, agent and holder
series read from the database (api/device_metrics.py).
"""
import collections
import logging
import os
import threading
import weakref

import prometheus_client
from prometheus_client import multiprocess

from cyborg_lite.api import device_metrics
from cyborg_lite.api import fault
from cyborg_lite.api import handler
from cyborg_lite.api.policies import metrics as policies
from cyborg_lite.api import policy
from cyborg_lite.api import wsgi_wrapper
from cyborg_lite.metrics import counted as metrics

LOG = logging.getLogger(__name__)
PATH = '/metrics'
ROUTE_KEY = handler.ROUTE_KEY
UNMATCHED = 'unmatched'


# A request's count and time wait in a queue (a deque's append on the
# request's way) and are added to prometheus_client's values in batches:
# every FOLD_AT requests, before a scrape of this process, and at most
# FOLD_DELAY seconds after the first waited (what another worker's scrape
# sees). Called on every request, prometheus_client's counter and
# histogram were 2% of a small POST over HTTP, most of it in code and
# data a batch finds in the cache.
FOLD_AT = 256
FOLD_DELAY = 1.0


class RequestMetrics:
    """Counts and times every request by route, method and status: the
    ``observe`` of middleware.RequestId."""

    def __init__(self, router):
        self.router = router
        self._waiting = collections.deque()
        # NOTE: the labelled children, kept: prometheus_client's labels()
        # takes a lock and builds a key on every call.
        self._children = {}
        self._timer = None
        self._timer_lock = threading.Lock()
        self._timer_refused = False
        _RECORDERS.add(self)

    def __call__(self, environ, status, seconds):
        route = environ.get(ROUTE_KEY)
        if route is None:
            route = self._route_of(environ)
        waiting = self._waiting
        waiting.append((route, environ.get('REQUEST_METHOD'), status,
                        seconds))
        if len(waiting) >= FOLD_AT:
            self.fold()
        elif self._timer is None:
            self._fold_later()

    def fold(self):
        """Add the waiting requests to prometheus_client's values."""
        waiting = self._waiting
        children = self._children
        while True:
            try:
                # NOTE: one at a time (atomic), so that requests queued
                # meanwhile, or a fold on another thread, lose nothing.
                route, method, status, seconds = waiting.popleft()
            except IndexError:
                return
            if method not in _METHODS:
                method = 'other'
            counter_timer = children.get((route, method, status))
            if counter_timer is None:
                counter_timer = children[route, method, status] = (
                    metrics.API_REQUESTS.labels(route, method, status),
                    metrics.API_REQUEST_DURATION.labels(route, method))
            counter_timer[0].inc()
            counter_timer[1].observe(seconds)

    def _fold_later(self):
        with self._timer_lock:
            if self._timer is None:
                # NOTE: set before it starts: it forgets itself when it
                # fires.
                self._timer = threading.Timer(FOLD_DELAY, self._timed_fold)
                self._timer.daemon = True
                try:
                    self._timer.start()
                except RuntimeError as exc:
                    # NOTE: no thread to be had (a process at its limit):
                    # the request is answered all the same, and counted
                    # at the next FOLD_AT or scrape.
                    self._timer = None
                    if not self._timer_refused:
                        self._timer_refused = True
                        LOG.warning('Request metrics: no timer thread (%s): '
                                    'requests are counted every %d or at a '
                                    'scrape', exc, FOLD_AT)

    def _timed_fold(self):
        # NOTE: forgotten first: a request queued during this fold
        # starts the next timer.
        self._timer = None
        self.fold()

    def _after_fork(self):
        # NOTE: the parent's timer thread is not in the child, and what
        # the parent queued is the parent's to count.
        self._timer = None
        self._timer_lock = threading.Lock()
        self._waiting.clear()

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


_RECORDERS = weakref.WeakSet()
os.register_at_fork(after_in_child=lambda: [
    recorder._after_fork() for recorder in list(_RECORDERS)])


def fold_all():
    """Add up every RequestMetrics' waiting requests: a worker about to
    exit (its multi-process files outlive it, its queue does not)."""
    for recorder in list(_RECORDERS):
        recorder.fold()
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

    def __init__(self, app, authorize=True, requests=None):
        self.app = app
        self.authorize = authorize
        # This process's RequestMetrics: its waiting requests are added
        # up before a scrape.
        self.requests = requests
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
        if self.requests is not None:
            self.requests.fold()
        if self._registry is None:
            self._registry = registry()
        return prometheus_client.generate_latest(self._registry)
