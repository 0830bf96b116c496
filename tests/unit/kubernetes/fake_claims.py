"""ResourceClaims in the kube-apiserver stand-in (fake_apiserver.py): the
list of every namespace's claims (and its watch, served by the stand-in's
watch), the status subresource a driver writes its device conditions
through (PUT .../resourceclaims/<name>/status, as the real apiserver
takes it: the strict schemas, the resourceVersion precondition, only the
status changed, a status.devices entry only for an allocated device),
and the scheduler's part: ``schedule`` allocates a device of a published
slice, copying its binding conditions into the result as the
kube-scheduler does (KEP-5007; none where the slice has none)."""
import copy
import uuid

from tests.unit.kubernetes import schemas


def _error(code, reason, message):
    from tests.unit.kubernetes import fake_apiserver
    return fake_apiserver.ApiError(code, reason, message)


def put(server, claim):
    """Store ``claim`` (lock held), as a write: a new resourceVersion,
    and an event for the watches."""
    meta = claim['metadata']
    key = (meta['namespace'], meta['name'])
    old = server.claims.get(key)
    meta.setdefault('uid', old['metadata']['uid'] if old
                    else str(uuid.uuid4()))
    meta.setdefault('generation', 1)
    meta['resourceVersion'] = server._next_version()
    server.claims[key] = claim
    server._record('MODIFIED' if old else 'ADDED', claim)
    return claim


def route(server, method, path, payload):
    from tests.unit.kubernetes import fake_apiserver as fa
    if path == fa.ALL_CLAIMS and method == 'GET':
        return 200, {'apiVersion': 'resource.k8s.io/v1',
                     'kind': 'ResourceClaimList',
                     'metadata': {'resourceVersion': str(server._version)},
                     'items': [copy.deepcopy(c) for _, c in
                               sorted(server.claims.items())]}
    match = fa.CLAIM_STATUS_RE.fullmatch(path)
    if match and method == 'PUT':
        return 200, _replace_status(server, match.groups(), payload)
    raise _error(404, 'NotFound', 'no route %s %s in the stand-in'
                 % (method, path))


def _replace_status(server, key, claim):
    old = server.claims.get(key)
    if old is None:
        raise _error(404, 'NotFound', 'resourceclaims "%s" not found'
                     % key[1])
    errors = schemas.schema_errors(claim)
    if errors:
        raise _error(422, 'Invalid', '; '.join(errors))
    if claim['metadata'].get('resourceVersion') != \
            old['metadata']['resourceVersion']:
        raise _error(409, 'Conflict', 'Operation cannot be fulfilled on '
                     'resourceclaims.resource.k8s.io "%s": the object has '
                     'been modified' % key[1])
    status = claim.get('status') or {}
    allocated = {(r['driver'], r['pool'], r['device'])
                 for r in ((old.get('status') or {}).get('allocation') or
                           {}).get('devices', {}).get('results') or []}
    for entry in status.get('devices') or []:
        if (entry['driver'], entry['pool'], entry['device']) not in \
                allocated:
            raise _error(422, 'Invalid', 'status.devices: %s/%s/%s is not '
                         'allocated' % (entry['driver'], entry['pool'],
                                        entry['device']))
    new = copy.deepcopy(old)
    new['status'] = copy.deepcopy(status)   # the spec stays as it was
    del new['metadata']['resourceVersion']
    return copy.deepcopy(put(server, new))


def schedule(server, namespace, name, device, pool, request='fpga'):
    """Allocate ``device`` of ``pool`` to the claim for its ``request``,
    as the kube-scheduler does: the result carries the device's binding
    conditions from its published slice, and the config the claim has."""
    with server._lock:
        published = next(
            (d for s in server.slices.values()
             if s['spec']['pool']['name'] == pool
             for d in s['spec'].get('devices') or []
             if d['name'] == device), None)
        assert published is not None, 'device %s is not published' % device
        claim = copy.deepcopy(server.claims[(namespace, name)])
        result = {'request': request, 'driver': _driver(server, pool),
                  'pool': pool, 'device': device}
        for field in ('bindingConditions', 'bindingFailureConditions'):
            if published.get(field):
                result[field] = list(published[field])
        configs = claim['spec']['devices'].get('config') or []
        claim.setdefault('status', {})['allocation'] = {
            'devices': {'results': [result], 'config': [
                dict(c, source='FromClaim') for c in configs]},
            'nodeSelector': {'nodeSelectorTerms': [{'matchFields': [{
                'key': 'metadata.name', 'operator': 'In',
                'values': [pool]}]}]}}
        errors = schemas.schema_errors(claim)
        assert errors == [], errors
        del claim['metadata']['resourceVersion']
        return copy.deepcopy(put(server, claim))


def _driver(server, pool):
    return next(s['spec']['driver'] for s in server.slices.values()
                if s['spec']['pool']['name'] == pool)
