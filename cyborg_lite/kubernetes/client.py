"""The official ``kubernetes`` client, set up once for the conductor (which
writes ResourceSlices) and the agent (whose kubelet plugin reads
ResourceClaims), and the few calls both make the same way.

An apiserver that cannot be reached fails every call the same way while
it is down: ``KubernetesUnreachable``, logged through ``OUTAGE`` (once,
then at most once a minute, as the database's outage), not by each
caller. The client does not retry a refused connection itself (urllib3's
default would, three times, with a WARNING each).
"""
import json
import logging

import kubernetes
import urllib3

from cyborg_lite.common import exception
from cyborg_lite.common import outage

LOG = logging.getLogger(__name__)

CONFLICT = 409
NOT_FOUND = 404
UNPROCESSABLE = 422      # Invalid: the body breaks a rule of the API
# Seconds between two lines about an apiserver that stays unreachable.
OUTAGE_LOG_INTERVAL = 60
OUTAGE = outage.OutageLog('Kubernetes API', LOG,
                          interval=OUTAGE_LOG_INTERVAL)
# A refused or failed connection is not retried (the caller's own retry,
# with its backoff, is); one retry for a pooled connection the server
# closed as it was reused.
RETRIES = urllib3.util.Retry(total=1, connect=0, redirect=0)


class KubernetesApiError(exception.CyborgLiteException):
    msg_fmt = 'Kubernetes API: %(reason)s'


class KubernetesUnreachable(KubernetesApiError):
    """No answer from the apiserver, or a 5xx: down or restarting."""


def is_outage(error):
    """Whether ``error`` (from a call of the client) says the apiserver
    is unreachable rather than refusing the request."""
    if isinstance(error, kubernetes.client.exceptions.ApiException):
        return not error.status or error.status >= 500
    return isinstance(error, (urllib3.exceptions.HTTPError, OSError))


def new_api_client(kubeconfig=None):
    """An ApiClient from ``kubeconfig``, or from the pod's service account
    when it is None."""
    configuration = kubernetes.client.Configuration()
    configuration.retries = RETRIES
    try:
        if kubeconfig:
            kubernetes.config.load_kube_config(
                config_file=kubeconfig, client_configuration=configuration)
        else:
            kubernetes.config.load_incluster_config(
                client_configuration=configuration)
    except (kubernetes.config.ConfigException, OSError) as e:
        raise KubernetesApiError(reason='cannot load %s: %s' % (
            kubeconfig or 'the in-cluster configuration', e))
    return kubernetes.client.ApiClient(configuration)


def raw_json(response):
    """The body of a call made with ``_preload_content=False``, as the
    server sent it (fields the client's models do not know included)."""
    try:
        return json.loads(response.data)
    finally:
        response.release_conn()


def discard(response):
    """Read and drop the body of a ``_preload_content=False`` call, so its
    pooled connection is clean for the next request."""
    try:
        response.data
    finally:
        response.release_conn()

