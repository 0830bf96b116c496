"""The official ``kubernetes`` client, set up once for the conductor (which
writes ResourceSlices) and the agent (whose kubelet plugin reads
ResourceClaims), and the few calls both make the same way."""
import json

import kubernetes

from cyborg_lite.common import exception

CONFLICT = 409
NOT_FOUND = 404


class KubernetesApiError(exception.CyborgLiteException):
    msg_fmt = 'Kubernetes API: %(reason)s'


def new_api_client(kubeconfig=None):
    """An ApiClient from ``kubeconfig``, or from the pod's service account
    when it is None."""
    configuration = kubernetes.client.Configuration()
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

