"""What the kube-apiserver stand-in stores (fake_apiserver.py): the
ResourceSlices (list with field selectors, create, get, replace and
delete as the real apiserver checks them, the feature gates' fields
dropped), the ResourceClaims created and the events.k8s.io Events; each
object validated against the strict schemas, versioned on every
write."""
import copy
import datetime
import uuid

from tests.unit.kubernetes import schemas
from tests.unit.kubernetes.apiserver_http import ApiError

SLICE_FIELDS = {'metadata.name': lambda s: s['metadata']['name'],
                'spec.nodeName': lambda s: s['spec'].get('nodeName'),
                'spec.driver': lambda s: s['spec'].get('driver')}
IMMUTABLE = ('driver', 'nodeName')
PER_DEVICE_NODES = ('nodeName', 'nodeSelector', 'allNodes')
BINDING_FIELDS = ('bindingConditions', 'bindingFailureConditions',
                  'bindsToNode')


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


def _rfc3339(text):
    """A timestamp as the apiserver stores and returns it (UTC, ``Z``);
    now when unset."""
    if not text:
        return _now()
    try:
        when = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    except ValueError:
        raise ApiError(400, 'BadRequest', 'bad time %r' % text)
    return when.astimezone(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


def _unversioned(obj):
    return dict(obj, metadata={k: v for k, v in obj['metadata'].items()
                               if k != 'resourceVersion'})


def _field_filter(selector):
    terms = []
    for term in filter(None, (selector or '').split(',')):
        field, sep, value = term.partition('=')
        value = value[1:] if value.startswith('=') else value
        if not sep or field not in SLICE_FIELDS:
            raise ApiError(400, 'BadRequest',
                           'field label not supported: %s' % field)
        terms.append((SLICE_FIELDS[field], value))
    return lambda obj: all(get(obj) == value for get, value in terms)


class Store:
    """The stand-in's objects, written under its lock."""

    def _next_version(self):
        self._version += 1
        return str(self._version)

    def _list(self, query):
        keep = _field_filter(query.get('fieldSelector'))
        items = [copy.deepcopy(s) for _, s in sorted(self.slices.items())
                 if keep(s)]
        return 200, {'apiVersion': 'resource.k8s.io/v1',
                     'kind': 'ResourceSliceList',
                     'metadata': {'resourceVersion': str(self._version)},
                     'items': items}

    def _get(self, name):
        if name not in self.slices:
            raise ApiError(404, 'NotFound', 'resourceslices.resource.k8s.io '
                           '"%s" not found' % name)
        return copy.deepcopy(self.slices[name])

    def _validate(self, obj):
        errors = schemas.schema_errors(obj) + schemas.slice_rule_errors(
            obj, self.counter_sets_with_devices)
        if errors:
            raise ApiError(422, 'Invalid', '; '.join(errors))

    def _stamp(self, obj, old=None):
        meta = obj['metadata']
        meta['resourceVersion'] = self._next_version()
        meta.setdefault('uid', old['metadata']['uid'] if old
                        else str(uuid.uuid4()))
        meta.setdefault('creationTimestamp', _now())
        for device in obj['spec'].get('devices') or []:
            for taint in device.get('taints') or []:
                taint['timeAdded'] = _rfc3339(taint.get('timeAdded'))
        return obj

    def _drop_disabled_fields(self, obj, old=None):
        old_spec = old['spec'] if old is not None else {}
        old_devices = old_spec.get('devices') or []
        devices = obj['spec'].get('devices') or []
        if not (self.device_taints or any(d.get('taints')
                                          for d in old_devices)):
            for device in devices:
                device.pop('taints', None)
        partitioned = old_spec.get('sharedCounters') or \
            'perDeviceNodeSelection' in old_spec or any(
                d.get('consumesCounters') or set(d) & set(PER_DEVICE_NODES)
                for d in old_devices)
        if not (self.binding_conditions or any(
                set(d) & set(BINDING_FIELDS) for d in old_devices)):
            for device in devices:
                for field in BINDING_FIELDS:
                    device.pop(field, None)
        if not (self.partitionable_devices or partitioned):
            obj['spec'].pop('sharedCounters', None)
            obj['spec'].pop('perDeviceNodeSelection', None)
            for device in devices:
                for field in ('consumesCounters',) + PER_DEVICE_NODES:
                    device.pop(field, None)

    def _create(self, obj, dry_run=False):
        """A create; with ``dry_run`` (dryRun=All) the object is completed
        and checked as for a real one, answered, and not stored."""
        self._drop_disabled_fields(obj)
        self._validate(obj)
        name = obj['metadata'].get('name')
        if name in self.slices:
            raise ApiError(409, 'AlreadyExists', 'resourceslices.resource.'
                           'k8s.io "%s" already exists' % name)
        if obj['metadata'].get('resourceVersion'):
            raise ApiError(400, 'BadRequest', 'resourceVersion should not '
                           'be set on objects to be created')
        if dry_run:     # completed, not stored: no resourceVersion
            for device in obj['spec'].get('devices') or []:
                for taint in device.get('taints') or []:
                    taint['timeAdded'] = _rfc3339(taint.get('timeAdded'))
            return 201, obj
        self.slices[name] = self._stamp(obj)
        self._record('ADDED', obj)
        return 201, copy.deepcopy(obj)

    def _replace(self, name, obj):
        old = self._get(name)
        self._drop_disabled_fields(obj, old)
        self._validate(obj)
        if obj['metadata'].get('name') != name:
            raise ApiError(400, 'BadRequest', 'the name of the object does '
                           'not match the name on the URL')
        if obj['metadata'].get('resourceVersion') != \
                old['metadata']['resourceVersion']:
            raise ApiError(409, 'Conflict', 'Operation cannot be fulfilled '
                           'on resourceslices.resource.k8s.io "%s": the '
                           'object has been modified' % name)
        for field in IMMUTABLE:
            if obj['spec'].get(field) != old['spec'].get(field):
                raise ApiError(422, 'Invalid', 'spec.%s: field is immutable'
                               % field)
        if obj['spec']['pool']['name'] != old['spec']['pool']['name']:
            raise ApiError(422, 'Invalid', 'spec.pool.name: field is '
                           'immutable')
        self.slices[name] = self._stamp(obj, old)
        self._record('MODIFIED', obj)
        return 200, copy.deepcopy(obj)

    def _delete(self, name, options):
        old = self._get(name)
        wanted = ((options or {}).get('preconditions') or {}).get(
            'resourceVersion')
        if wanted and wanted != old['metadata']['resourceVersion']:
            raise ApiError(409, 'Conflict', 'Precondition failed: '
                           'ResourceVersion in precondition: %s, '
                           'ResourceVersion in object meta: %s'
                           % (wanted, old['metadata']['resourceVersion']))
        del self.slices[name]
        self._record_deletion(old)
        return 200, old

    def _delete_collection(self, query):
        """DELETE of the collection, as the kubelet's wipe of a node's
        slices (a field selector on spec.nodeName and spec.driver)."""
        keep = _field_filter(query.get('fieldSelector'))
        gone = [s for _, s in sorted(self.slices.items()) if keep(s)]
        for obj in gone:
            del self.slices[obj['metadata']['name']]
            self._record_deletion(obj)
        return 200, {'apiVersion': 'resource.k8s.io/v1',
                     'kind': 'ResourceSliceList',
                     'metadata': {'resourceVersion': str(self._version)},
                     'items': gone}

    def _create_claim(self, namespace, claim):
        errors = schemas.schema_errors(claim)
        if errors:
            raise ApiError(422, 'Invalid', '; '.join(errors))
        meta = claim['metadata']
        if meta.get('namespace', namespace) != namespace:
            raise ApiError(400, 'BadRequest', 'namespace mismatch')
        if (namespace, meta['name']) in self.claims:
            raise ApiError(409, 'AlreadyExists', 'resourceclaims "%s" '
                           'already exists' % meta['name'])
        meta.update(namespace=namespace, uid=str(uuid.uuid4()),
                    resourceVersion=self._next_version(),
                    creationTimestamp=_now())
        claim.pop('status', None)
        self.claims[(namespace, meta['name'])] = claim
        return 201, copy.deepcopy(claim)

    def _create_event(self, namespace, event):
        errors = schemas.schema_errors(event) + schemas.event_rule_errors(
            event)
        if errors:
            raise ApiError(422, 'Invalid', '; '.join(errors))
        meta = event['metadata']
        if meta.get('namespace', namespace) != namespace:
            raise ApiError(400, 'BadRequest', 'namespace mismatch')
        if any(e['metadata']['name'] == meta['name'] and e['metadata'][
                'namespace'] == namespace for e in self.k8s_events):
            raise ApiError(409, 'AlreadyExists', 'events.events.k8s.io '
                           '"%s" already exists' % meta['name'])
        meta.update(namespace=namespace, uid=str(uuid.uuid4()),
                    resourceVersion=self._next_version(),
                    creationTimestamp=_now())
        self.k8s_events.append(event)
        return 201, copy.deepcopy(event)
