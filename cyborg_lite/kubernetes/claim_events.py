"""An Event on each pending ResourceClaim our devices cannot serve.

``ClaimExplainer.run_once`` lists the claims, the DeviceClasses and our
driver's ResourceSlices, and for each claim that asks for a DeviceClass
of ours and is not allocated (kubernetes/claim_explain.py) posts one
events.k8s.io/v1 Event on it (``regarding`` the claim) naming the request
and its first failing selector or taint. At most once per claim change:
the Event's name is derived from the claim's uid and resourceVersion, so
a second post of the same version (another conductor, a restart) is the
apiserver's 409 AlreadyExists, and a claim explained at a version is not
looked at again in this process until it changes. An allocated claim, or
one our devices could serve (the scheduler is still at it, or something
else than our devices stops it), gets none.
"""
import datetime
import hashlib
import logging

import kubernetes

from cyborg_lite.kubernetes import claim_explain
from cyborg_lite.kubernetes import client as k8s_client

LOG = logging.getLogger(__name__)

REASON = 'NoMatchingDevice'
ACTION = 'Explain'
MAX_NOTE = 1024            # events.k8s.io/v1 note: at most 1 kB
_MAX_NAME = 253


def event_name(claim):
    """One name per (claim uid, resourceVersion): the apiserver refuses
    a second Event of the same version."""
    meta = claim['metadata']
    digest = hashlib.sha256(('%s/%s' % (
        meta['uid'], meta['resourceVersion'])).encode()).hexdigest()[:16]
    return '%s.%s' % (meta['name'][:_MAX_NAME - 17], digest)


def event_body(claim, note, driver, instance, now=None):
    """The events.k8s.io/v1 Event saying ``note`` about ``claim``."""
    meta = claim['metadata']
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return {
        'apiVersion': 'events.k8s.io/v1', 'kind': 'Event',
        'metadata': {'name': event_name(claim),
                     'namespace': meta['namespace']},
        'eventTime': now.strftime('%Y-%m-%dT%H:%M:%S.%fZ'),
        'reportingController': driver + '/claim-explain',
        'reportingInstance': instance[:128],
        'action': ACTION, 'reason': REASON, 'type': 'Warning',
        'regarding': {'apiVersion': 'resource.k8s.io/v1',
                      'kind': 'ResourceClaim', 'name': meta['name'],
                      'namespace': meta['namespace'], 'uid': meta['uid'],
                      'resourceVersion': meta['resourceVersion']},
        'note': note[:MAX_NOTE]}


class ClaimExplainer:
    """Explains the pending claims of one cluster (module docstring)."""

    def __init__(self, api_client, driver, instance):
        self._resource = kubernetes.client.ResourceV1Api(api_client)
        self._events = kubernetes.client.EventsV1Api(api_client)
        self.driver, self.instance = driver, instance
        self._explained = {}        # claim uid -> resourceVersion

    def _list(self, method, **kwargs):
        return k8s_client.raw_json(method(_preload_content=False,
                                          **kwargs))['items']

    def _classes_and_devices(self):
        """({DeviceClass name: object}, our slices' devices)."""
        classes = {c['metadata']['name']: c for c in self._list(
            self._resource.list_device_class)}
        slices = self._list(self._resource.list_resource_slice,
                            field_selector='spec.driver=' + self.driver)
        return classes, claim_explain.slice_devices(slices)

    def read(self):
        """(claims, {DeviceClass name: object}, our slices' devices)."""
        claims = self._list(
            self._resource.list_resource_claim_for_all_namespaces)
        return (claims,) + self._classes_and_devices()

    def explain(self, namespace, name):
        """The funnel of claim ``namespace/name`` (claim_explain.
        explain_claim) with ``pending`` (whether it is one we explain)
        and ``driver``; posts nothing. KubernetesApiError when the claim
        cannot be read."""
        try:
            claim = k8s_client.raw_json(
                self._resource.read_namespaced_resource_claim(
                    name, namespace, _preload_content=False))
        except kubernetes.client.exceptions.ApiException as e:
            raise k8s_client.KubernetesApiError(reason='%s %s/%s: %s' % (
                'resourceclaims', namespace, name,
                'not found' if e.status == k8s_client.NOT_FOUND
                else e.reason))
        classes, devices = self._classes_and_devices()
        answer = claim_explain.explain_claim(claim, classes, devices)
        answer.update(pending=claim_explain.is_pending_for(
            claim, self.driver, classes), driver=self.driver)
        return answer

    def run_once(self):
        """Post the Event of every pending claim not explained at its
        version yet; returns the names of the Events posted."""
        claims, classes, devices = self.read()
        posted = []
        for claim in claims:
            meta = claim['metadata']
            if self._explained.get(meta['uid']) == meta['resourceVersion']:
                continue
            if claim_explain.is_pending_for(claim, self.driver, classes):
                answer = claim_explain.explain_claim(claim, classes, devices)
                if answer['blocking'] and self._post(claim, answer):
                    posted.append(event_name(claim))
            self._explained[meta['uid']] = meta['resourceVersion']
        gone = set(self._explained) - {c['metadata']['uid'] for c in claims}
        for uid in gone:
            del self._explained[uid]
        return posted

    def _post(self, claim, answer):
        body = event_body(claim, answer['blocking'], self.driver,
                          self.instance)
        try:
            k8s_client.discard(self._events.create_namespaced_event(
                claim['metadata']['namespace'], body,
                _preload_content=False))
        except kubernetes.client.exceptions.ApiException as e:
            if e.status == k8s_client.CONFLICT:
                return False        # posted for this version already
            raise
        LOG.info('ResourceClaim %s/%s: %s', claim['metadata']['namespace'],
                 claim['metadata']['name'], answer['blocking'])
        return True
