"""Follow the ResourceClaims of the cluster, for binding conditions.

The scheduler allocates a claim on a device published with our binding
condition and then waits, the pod not yet bound, until the condition is
True (KEP-5007). ``ClaimWatch`` lists the claims of every namespace and
watches them from the list's resourceVersion, in a thread of its own,
and hands each claim it sees (listed, added or modified) to
``seen(claim)`` and each one deleted to ``gone(claim)``
(kubernetes/binding.py decides what is ours). Listing first is how a
conductor started (or killed and started again) catches up with claims
allocated meanwhile; it lists again each time the server ends a watch
(kubernetes/list_watch.py).
"""
import logging

import kubernetes

from cyborg_lite.kubernetes import client as k8s_client
from cyborg_lite.kubernetes import list_watch

LOG = logging.getLogger(__name__)


class ClaimWatch(list_watch.ListWatch):
    KIND = 'ResourceClaim'

    def __init__(self, api_client, seen, gone, backoff=(0.5, 30.0)):
        super().__init__(backoff)
        self._resource = kubernetes.client.ResourceV1Api(api_client)
        self.seen = seen
        self.gone = gone

    def _list(self):
        body = k8s_client.raw_json(
            self._resource.list_resource_claim_for_all_namespaces(
                _preload_content=False, _request_timeout=(
                    list_watch.CONNECT_TIMEOUT, list_watch.READ_TIMEOUT)))
        k8s_client.OUTAGE.succeeded()
        for claim in body.get('items') or []:
            self._hand(self.seen, claim)
        return body['metadata']['resourceVersion']

    def _follow(self, version):
        """One watch from ``version``, until the server ends it; then the
        claims are listed again (a resync, as an informer's: a condition
        a write missed, or a job's end told to a conductor without the
        watch, is caught up within WATCH_SECONDS)."""
        if not self._stopping.is_set():
            # NOTE: the list's item model is named after its group in
            # this client (the watch cannot guess it from the list's).
            self._watch = kubernetes.watch.Watch(
                return_type='ResourceV1ResourceClaim')
            for event in self._watch.stream(
                    self._resource.list_resource_claim_for_all_namespaces,
                    resource_version=version, allow_watch_bookmarks=True,
                    timeout_seconds=list_watch.WATCH_SECONDS,
                    _request_timeout=(list_watch.CONNECT_TIMEOUT,
                                      list_watch.READ_TIMEOUT)):
                kind, obj = event['type'], event['raw_object']
                version = obj.get('metadata', {}).get(
                    'resourceVersion') or version
                if kind in ('ADDED', 'MODIFIED'):
                    self._hand(self.seen, obj)
                elif kind == 'DELETED':
                    self._hand(self.gone, obj)
            self._watch = None

    @staticmethod
    def _hand(callback, claim):
        # NOTE: one claim's trouble (its region refused, the database
        # down) is the callback's to say; the watch goes on.
        try:
            callback(claim)
        except Exception:
            meta = claim.get('metadata') or {}
            LOG.exception('ResourceClaim %s/%s not handled',
                          meta.get('namespace'), meta.get('name'))
