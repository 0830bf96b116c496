"""Publish one host's ResourceSlices as a diff against what the API holds.

The conductor is the only writer of our slices. A sync lists the slices
of (node, driver), builds the desired ones and writes only what differs:
an unchanged host costs one list and no write. The pool generation
follows the rule of Kubernetes' own resourceslice controller
(k8s.io/dynamic-resource-allocation/resourceslice): it stays when the
change is one update of one slice (atomic for every reader), and moves up
by one, on every slice, when the change takes more writes or adds slices,
so readers never mix two states of the pool. Writes carry the
resourceVersion they were computed from; a 409 (another writer, or our
own earlier attempt) re-reads the pool and starts over. Devices are
tainted where the cluster keeps device taints, and left out where it
does not; regions behind one PCI function consume its shared counter
where the cluster keeps counters, and are devices of their own where it
does not (kubernetes/gated_fields.py).
"""
import copy
import dataclasses
import json
import logging
import time

import kubernetes
import urllib3

from cyborg_lite.kubernetes import client as k8s_client
from cyborg_lite.kubernetes import gated_fields
from cyborg_lite.kubernetes import slice_watch
from cyborg_lite.kubernetes import slices as slices_mod

LOG = logging.getLogger(__name__)


class _Conflict(Exception):
    """A write lost against another writer: re-read and try again."""


class _FieldsDropped(Exception):
    """A write came back without a gated field it was sent with: build the
    slices again without it (gated_fields) and start over."""


class _Invalid(Exception):
    """The apiserver refused a body as invalid (422)."""


def _status_message(e):
    """The message of the Status an ApiException carries."""
    try:
        return json.loads(e.body)['message']
    except (TypeError, ValueError, KeyError):
        return e.body or e.reason


def _error(what, e):
    """The KubernetesApiError of a failed call: KubernetesUnreachable when
    the apiserver did not answer or answered 5xx."""
    if isinstance(e, kubernetes.client.exceptions.ApiException):
        detail = 'HTTP %s %s' % (e.status, e.body or e.reason)
    else:
        detail = str(e)
    cls = (k8s_client.KubernetesUnreachable if k8s_client.is_outage(e)
           else k8s_client.KubernetesApiError)
    return cls(reason='%s: %s' % (what, detail))


@dataclasses.dataclass
class SyncResult:
    node_name: str
    generation: int = 0
    created: int = 0
    updated: int = 0
    deleted: int = 0
    conflicts: int = 0        # writes refused with 409, then retried

    @property
    def writes(self):
        """Write requests sent, refused ones included."""
        return self.created + self.updated + self.deleted + self.conflicts


def _normalised(spec):
    """A spec as comparable data: what the server fills in (taint
    timeAdded), spells its own way (quantities) or leaves out when empty
    does not count as a difference."""
    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()
                    if v not in (None, [], {}) and k != 'timeAdded'}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value
    spec = clean(spec)
    quantities = [entry for device in spec.get('devices', [])
                  for entry in device.get('capacity', {}).values()]
    quantities += [counter for device in spec.get('devices', [])
                   for consumed in device.get('consumesCounters', [])
                   for counter in consumed['counters'].values()]
    quantities += [counter for counter_set in spec.get('sharedCounters', [])
                   for counter in counter_set['counters'].values()]
    for entry in quantities:
        entry['value'] = kubernetes.utils.parse_quantity(entry['value'])
    return spec


def _keep_taint_times(old_devices, new_devices):
    """Carry timeAdded of taints that stay, so an update does not restart
    the clock the apiserver set when the taint first appeared."""
    times = {(d.get('name'), t.get('key'), t.get('value', ''),
              t.get('effect')): t['timeAdded']
             for d in old_devices for t in d.get('taints', [])
             if t.get('timeAdded')}
    for device in new_devices:
        for taint in device.get('taints', []):
            when = times.get((device['name'], taint['key'],
                              taint.get('value', ''), taint['effect']))
            if when:
                taint['timeAdded'] = when
    return new_devices


class SliceSync:
    """Writes the ResourceSlices of hosts through the official client."""

    def __init__(self, api_client, driver_name, publish_taints=True,
                 conflict_retries=5, clock=time.monotonic,
                 numa_node_list=False, shared_counters=True,
                 binding_conditions=False):
        self._resource = kubernetes.client.ResourceV1Api(api_client)
        self._core = kubernetes.client.CoreV1Api(api_client)
        self.driver_name = driver_name
        self.taints = gated_fields.FieldSupport(gated_fields.TAINTS,
                                                publish_taints, clock)
        self.counters = gated_fields.FieldSupport(
            gated_fields.SHARED_COUNTERS, shared_counters, clock)
        self.binding = gated_fields.FieldSupport(
            gated_fields.BINDING_CONDITIONS, binding_conditions, clock)
        # The build_slices option of each gated field.
        self._gated = {'publish_taints': self.taints,
                       'shared_counters': self.counters,
                       'binding_conditions': self.binding}
        self.conflict_retries = conflict_retries
        self.numa_node_list = numa_node_list
        # What we wrote, for a watch of our slices (slice_watch.py).
        self.own = slice_watch.OwnWrites()

    def sync(self, inventory):
        """Make the API hold exactly the slices of ``inventory``; a
        SyncResult says what it took. KubernetesApiError when the API
        refuses, or keeps conflicting after ``conflict_retries``."""
        result = SyncResult(inventory.node_name)
        while True:
            desired = self._desired(inventory)
            try:
                self._sync_once(inventory.node_name, desired, result)
                return result
            except _FieldsDropped:
                continue        # built again, without what was dropped
            except _Conflict:
                result.conflicts += 1
            if result.conflicts > self.conflict_retries:
                raise k8s_client.KubernetesApiError(
                    reason='ResourceSlices of node %s: still conflicting '
                           'after %d tries' % (inventory.node_name,
                                               result.conflicts))

    def _build(self, inventory, probing=None):
        """The slices of ``inventory`` with the gated fields the cluster
        keeps; when ``probing`` one, without the others not known yet (so
        the answer tells of its gate alone)."""
        options = {option: support.publish() and (
            probing in (None, support) or not support.unsure())
            for option, support in self._gated.items()}
        return slices_mod.build_slices(inventory, self.driver_name,
                                       numa_node_list=self.numa_node_list,
                                       **options)

    def _desired(self, inventory):
        """The slices of ``inventory``; before a gated field is first
        written, the cluster is asked with a dry run whether it keeps it
        (gated_fields)."""
        desired = self._build(inventory)
        unsure = [support for support in self._gated.values()
                  if support.unsure() and any(map(support.used, desired))]
        for support in unsure:
            probe = next(filter(support.used, self._build(
                inventory, probing=support)), None)
            if probe is not None:
                self._ask(support, probe)
        return self._build(inventory) if unsure else desired

    def _ask(self, support, obj):
        """Create ``obj`` as a dry run, under a name of its own, and learn
        from the answer whether the cluster keeps ``support``'s field."""
        probe = {'apiVersion': slices_mod.API_VERSION,
                 'kind': slices_mod.KIND,
                 'metadata': {'name': slices_mod.slice_name(
                     obj['spec']['nodeName'], self.driver_name, 'probe')},
                 'spec': obj['spec']}
        try:
            stored = k8s_client.raw_json(self._call(
                'dry-run create', self._resource.create_resource_slice,
                probe, dry_run='All', refused_ok=True))
        except _Invalid as e:
            support.refused(probe, e)
            return
        support.observed(probe, stored)

    def _write(self, what, method, *args):
        """A create or update, noted as ours; what the apiserver stored."""
        with self.own.writing():
            stored = k8s_client.raw_json(self._call(what, method, *args))
            self.own.wrote(stored)
        return stored

    def _check_fields(self, sent, stored):
        """_FieldsDropped when the apiserver dropped a gated field sent."""
        kept = [support.observed(sent, stored)
                for support in self._gated.values()]
        if not all(kept):
            raise _FieldsDropped()

    def _call(self, what, method, *args, gone_ok=False, refused_ok=False,
              **kwargs):
        """One API call; _Conflict on 409 (and on 404 for a write, the
        object went away under us) unless ``gone_ok``; False if gone;
        with ``refused_ok``, _Invalid on 422."""
        try:
            return method(*args, _preload_content=False, **kwargs)
        except kubernetes.client.exceptions.ApiException as e:
            if e.status == k8s_client.NOT_FOUND and gone_ok:
                return False
            if e.status == k8s_client.UNPROCESSABLE and refused_ok:
                raise _Invalid(_status_message(e)) from e
            if what != 'list' and e.status in (k8s_client.CONFLICT,
                                               k8s_client.NOT_FOUND):
                raise _Conflict() from e
            raise _error('%s ResourceSlice' % what, e) from e
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise _error('%s ResourceSlice' % what, e) from e

    def list_slices(self, node_name):
        """Our slices of ``node_name`` as the API holds them."""
        selector = 'spec.nodeName=%s,spec.driver=%s' % (node_name,
                                                       self.driver_name)
        body = k8s_client.raw_json(self._call(
            'list', self._resource.list_resource_slice,
            field_selector=selector))
        return body.get('items') or []

    def _sync_once(self, node_name, desired, result):
        existing = self.list_slices(node_name)
        generation = max((s['spec']['pool'].get('generation', 0)
                          for s in existing), default=0)
        wanted = {s['metadata']['name']: s for s in desired}
        matched, obsolete = {}, []
        for current in existing:
            name = current['metadata']['name']
            if (current['spec']['pool'].get('generation', 0) < generation
                    or name not in wanted or name in matched):
                obsolete.append(current)
            else:
                matched[name] = current
        changed = [name for name, current in matched.items()
                   if _normalised(current['spec']) != _normalised(
                       self._spec(wanted[name], generation))]
        new = [name for name in wanted if name not in matched]
        if new or len(changed) > 1:
            generation += 1
            changed = list(matched)
        result.generation = generation
        owner = self._node_owner(node_name) if new else None
        for current in obsolete:
            self._delete(current, result)
        for name in changed:
            self._update(matched[name], self._spec(wanted[name], generation),
                         result)
        for name in new:
            self._create(wanted[name], generation, owner, result)

    @staticmethod
    def _spec(desired, generation):
        spec = dict(desired['spec'])
        spec['pool'] = dict(spec['pool'], generation=generation)
        return spec

    def _node_owner(self, node_name):
        """The Node as owner, so its slices go when it goes (read only
        when a slice is created, so a re-created Node is picked up)."""
        try:
            node = k8s_client.raw_json(self._core.read_node(
                node_name, _preload_content=False))
        except (kubernetes.client.exceptions.ApiException,
                urllib3.exceptions.HTTPError, OSError) as e:
            raise _error('read Node %s' % node_name, e) from e
        return {'apiVersion': 'v1', 'kind': 'Node', 'name': node_name,
                'uid': node['metadata']['uid'], 'controller': True}

    def _delete(self, current, result):
        meta = current['metadata']
        options = kubernetes.client.V1DeleteOptions(
            preconditions=kubernetes.client.V1Preconditions(
                resource_version=meta['resourceVersion']))
        with self.own.writing():
            self.own.deleted(current)
            try:
                response = self._call(
                    'delete', self._resource.delete_resource_slice,
                    meta['name'], body=options, gone_ok=True)
            except BaseException:
                self.own.not_deleted(current)
                raise
            if response is not False:
                k8s_client.discard(response)
        result.deleted += 1

    def _update(self, current, spec, result):
        if 'devices' in spec:       # not in a slice of counter sets
            spec = dict(spec, devices=_keep_taint_times(
                current['spec'].get('devices') or [],
                copy.deepcopy(spec['devices'])))
        body = {'apiVersion': current.get('apiVersion',
                                          slices_mod.API_VERSION),
                'kind': slices_mod.KIND,
                'metadata': current['metadata'],
                'spec': spec}
        stored = self._write('update', self._resource.replace_resource_slice,
                             current['metadata']['name'], body)
        result.updated += 1
        self._check_fields(body, stored)

    def _create(self, desired, generation, owner, result):
        body = {'apiVersion': slices_mod.API_VERSION,
                'kind': slices_mod.KIND,
                'metadata': dict(desired['metadata'],
                                 ownerReferences=[owner]),
                'spec': self._spec(desired, generation)}
        stored = self._write('create', self._resource.create_resource_slice,
                             body)
        result.created += 1
        self._check_fields(body, stored)
