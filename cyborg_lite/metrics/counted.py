"""The Prometheus metrics every process counts, with prometheus_client.

Names, units and labels follow Prometheus' conventions: ``cyborg_lite_``
first, base units (``_seconds``), ``_total`` on counters, and labels of
bounded cardinality (route templates, outcomes, sinks; never a request
id or the uuid of a short-lived object). A histogram's ``_count`` is the
count of its events: no separate counter.

The device and region gauges and the holder series are not here: they
are read from the database at each scrape (api/device_metrics.py),
so every API worker answers the same.

Multi-process servers (gunicorn's API workers, several conductor
workers): the command sets PROMETHEUS_MULTIPROC_DIR before this module
is first imported (metrics/multiproc_dir.py) and prometheus_client keeps
each process's values in files there that a scrape adds up.
"""
from prometheus_client import Counter
from prometheus_client import Histogram

from cyborg_lite.metrics import multiproc_dir as metrics_dir

# Latencies of API requests and of binds, prepares, publishes: 1 ms to a
# minute.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                   1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# Programming jobs and cleanings: a second to an hour.
LONG_BUCKETS = (0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
                1800.0, 3600.0)


def multiprocess():
    return metrics_dir.active()


API_REQUESTS = Counter(
    'cyborg_lite_api_requests_total',
    'API requests answered, by route template, method and status code.',
    ['route', 'method', 'status'])
API_REQUEST_DURATION = Histogram(
    'cyborg_lite_api_request_duration_seconds',
    'Time to answer an API request (until the body is handed to the '
    'server), by route template and method.',
    ['route', 'method'], buckets=LATENCY_BUCKETS)

BIND_DURATION = Histogram(
    'cyborg_lite_bind_duration_seconds',
    "A conductor's bind of one ARQ, from taking it to its end (programming "
    'included), by outcome: bound, failed, superseded.',
    ['outcome'], buckets=LATENCY_BUCKETS)
UNBIND_DURATION = Histogram(
    'cyborg_lite_unbind_duration_seconds',
    "An unbind of one ARQ (the API's release path), by outcome: unbound, "
    "refused.",
    ['outcome'], buckets=LATENCY_BUCKETS)
JOB_DURATION = Histogram(
    'cyborg_lite_programming_job_duration_seconds',
    'Programming jobs from creation to their end, by outcome: succeeded, '
    'failed, cancelled.', ['outcome'], buckets=LONG_BUCKETS)
# NOTE: a counter, not JOB_DURATION with more labels: the same seconds
# summed per project and namespace (bounded: the tenants; "" where no
# claim started the job), without a histogram's buckets for each.
PROGRAMMING_SECONDS = Counter(
    'cyborg_lite_programming_seconds_total',
    'Seconds programming jobs took from creation to their end (what their '
    'workloads waited), by project and Kubernetes namespace ("" when no '
    'claim started the job); the same jobs JOB_DURATION counts.',
    ['project', 'namespace'])
CLEANING_DURATION = Histogram(
    'cyborg_lite_cleaning_duration_seconds',
    "A region's clean by its agent, from its first heartbeat to its "
    'end, by outcome: available, error (a driver that cleans nothing '
    'counts 0 s as skipped).', ['outcome'], buckets=LONG_BUCKETS)
PREPARE_DURATION = Histogram(
    'cyborg_lite_k8s_prepare_duration_seconds',
    "The conductor's part of a kubelet Prepare (holding the region, "
    'programming it if asked), by outcome: prepared, in_progress (its '
    'programming still runs: the kubelet asks again), refused, failed.',
    ['outcome'], buckets=LATENCY_BUCKETS)
UNPREPARE_DURATION = Histogram(
    'cyborg_lite_k8s_unprepare_duration_seconds',
    "The conductor's part of a kubelet Unprepare, by outcome: released, "
    'failed.', ['outcome'], buckets=LATENCY_BUCKETS)
PUBLISH_DURATION = Histogram(
    'cyborg_lite_sink_publish_duration_seconds',
    'Publishing one host to one inventory sink, by sink and outcome: '
    'converged, pending (to be retried), failed.',
    ['sink', 'outcome'], buckets=LATENCY_BUCKETS)
PUBLISH_LAG = Histogram(
    'cyborg_lite_publish_lag_seconds',
    "From a change of a host's offer (its oldest publish request) to the "
    'sink having it, by sink; observed once every sink has it.',
    ['sink'], buckets=LATENCY_BUCKETS)
SINK_SYNC_ERRORS = Counter(
    'cyborg_lite_sink_sync_errors_total',
    'Publishes of a host that did not converge in a sink (its consumer '
    'refused or was unreachable; retried later), by sink.', ['sink'])
AGENT_SCAN_DURATION = Histogram(
    'cyborg_lite_agent_scan_duration_seconds',
    "An agent's discovery scan of one driver, by driver and outcome: ok, "
    'failed.', ['driver', 'outcome'], buckets=LATENCY_BUCKETS)
AGENT_REPORTS = Counter(
    'cyborg_lite_agent_reports_total',
    'Reports an agent sent the conductor, by outcome: changed, '
    'unchanged, failed.', ['outcome'])

NOTIFICATIONS = Counter(
    'cyborg_lite_notifications_total',
    "Notifications by outcome: sent (handed to the "
    "broker's driver), failed (the driver raised), dropped (the broker "
    'fell 10,000 behind, or the service stopped before it took them).',
    ['outcome'])
NOTIFICATION_OUTCOMES = ('sent', 'failed', 'dropped')


def add(counter, amount, *labels):
    """``counter`` (with ``labels``) goes up by ``amount``; never raises,
    as ``observe``."""
    try:
        (counter.labels(*labels) if labels else counter).inc(max(0.0,
                                                                amount))
    except Exception:  # pragma: no cover - prometheus_client's own bug
        pass


def observe(histogram, seconds, *labels):
    """``histogram`` (with ``labels``) observes ``seconds``; never
    raises (a metric must not fail the work it measures)."""
    try:
        (histogram.labels(*labels) if labels else histogram).observe(
            max(0.0, seconds))
    except Exception:  # pragma: no cover - prometheus_client's own bug
        pass


def serve(port, host='0.0.0.0', collectors=()):
    """Serve this process's metrics (every worker's, in multi-process
    mode) and those of ``collectors`` (read at each scrape) on
    ``host``:``port`` from a thread; the server, to shut down."""
    import prometheus_client
    from prometheus_client import multiprocess as mp
    if multiprocess():
        counted = prometheus_client.CollectorRegistry()
        mp.MultiProcessCollector(counted)
    else:
        counted = prometheus_client.REGISTRY
    registry = counted
    if collectors:
        # NOTE: auto_describe reads the names once, so that a scrape
        # asking for some (?name[]=...) gets them.
        registry = prometheus_client.CollectorRegistry(auto_describe=True)
        registry.register(_Together([counted] + list(collectors)))
    server, _thread = prometheus_client.start_http_server(
        port, addr=host, registry=registry)
    return server


class _Together:
    """The families of several collectors (or registries), one
    scrape."""

    def __init__(self, parts):
        self.parts = parts

    def collect(self):
        for part in self.parts:
            yield from part.collect()
