"""/v2/accelerator_requests (ARQs).

Creation, deletion and unbind are database writes from here; a delete or
unbind answers once a conductor has published the capacity it took away
(utils.release: one call, which starts the wipe after answering). A bind
is the conductor's (it claims an attach handle and may program a
region): the PATCH handler validates the JSON patch and the ARQ states,
records the bind and sends it over RPC, and answers 202; the ARQs move
on asynchronously.
"""
import collections
import json

from cyborg_lite.api.handlers import deployables
from cyborg_lite.api.handlers import device_profiles as profile_handlers
from cyborg_lite.api import instance_allocations
from cyborg_lite.api import microversion
from cyborg_lite.api import numa_alignment
from cyborg_lite.api.policies import accelerator_requests as policies
from cyborg_lite.api import policy
from cyborg_lite.api.schemas import accelerator_requests as schemas
from cyborg_lite.api import utils
from cyborg_lite.common import exception
from cyborg_lite.common import states
from cyborg_lite.db import arq_binds
from cyborg_lite.db import arq_releases
from cyborg_lite.db import arqs as db

BIND_FIELDS = ('hostname', 'device_rp_uuid', 'instance_uuid')


def handle_info(attach_info, numa_node):
    """attach_handle_info: the handle's attach_info, plus the NUMA node of
    its region as a string, as every value there is (Nova reads the keys
    it knows and ignores the others)."""
    info = json.loads(attach_info)
    if numa_node is not None:
        info['numa_node'] = str(numa_node)
    return info


def view(req, item, nodes=None):
    """One ARQ; ``nodes``: the request's numa_alignment.InstanceNodes."""
    arq, handle = item.arq, item.handle
    body = {
        'uuid': arq.uuid,
        'state': arq.state,
        'device_profile_name': item.device_profile_name,
        'device_profile_group_id': arq.device_profile_group_id,
        'hostname': arq.hostname,
        'device_rp_uuid': arq.device_rp_uuid,
        'instance_uuid': arq.instance_uuid,
        # Unbound: '' and {} as Cyborg shows them, not null.
        'attach_handle_type': handle.attach_type if handle else '',
        'attach_handle_uuid': handle.uuid if handle else None,
        'attach_handle_info': handle_info(handle.attach_info,
                                          handle.numa_node)
        if handle else {},
        # cyborg_lite's own: why the last bind failed.
        'error': arq.error,
        'links': utils.link(req, 'accelerator_requests', arq.uuid),
    }
    version = microversion.of(req)
    if version.matches('2.1'):
        body['project_id'] = arq.project_id
    if version.matches(microversion.TOPOLOGY):
        nodes = nodes or numa_alignment.InstanceNodes()
        body['numa_aligned'] = nodes.aligned(
            arq.state, arq.instance_uuid, handle.numa_node if handle
            else None)
    if version.matches(microversion.BIND_WAITS):
        body['bind_waits_for'] = item.waits_for
    body.update(utils.timestamps(arq))
    return body


def _list_format(with_project, with_alignment, with_wait):
    """The RowFormat of a listed ARQ: the keys of ``view``, in order."""
    keys = ['uuid', 'state', 'device_profile_name', 'device_profile_group_id',
            'hostname', 'device_rp_uuid', 'instance_uuid',
            'attach_handle_type', 'attach_handle_uuid', 'attach_handle_info',
            'error', 'links']
    if with_project:
        keys.append('project_id')
    raw = ['attach_handle_info']
    if with_alignment:
        keys.append('numa_aligned')
        raw.append('numa_aligned')
    if with_wait:
        keys.append('bind_waits_for')
    return utils.list_format(keys + ['created_at', 'updated_at'], raw=raw)


# By the version's (project_id, numa_aligned, bind_waits_for): each field
# comes with a later version than the one before it.
_LIST_FORMATS = {flags: _list_format(*flags) for flags in (
    (False, False, False), (True, False, False), (True, True, False),
    (True, True, True))}
# What a listed ARQ's alignment is worked out from (after its keys).
_ALIGNMENT_COLUMNS = ('state', 'instance_uuid', 'attach_handle_numa_node')


def _scope(req, rule):
    """Whose ARQs the caller looks up for ``rule``: every project's when
    the policy lets it act on an ARQ of any project (a target naming no
    project passes only rules without project_id: an admin, or a service
    such as Nova under the default rules), else its own project's. What
    is found is still checked against ``rule`` ARQ by ARQ."""
    if policy.check(utils.context(req), rule, {}):
        return db.ALL
    return utils.visible_to(req)


def create_arqs(req):
    utils.authorize(req, policies.CREATE)
    body = utils.json_body(req, schemas.CREATE)
    if body.get('image_uuid') is not None:
        raise exception.InvalidField(
            field='body.image_uuid',
            reason='not supported; name the bitstream in the device '
                   'profile (accel:bitstream_id)')
    name = profile_handlers.checked_name(body['device_profile_name'])
    items = db.create_arqs(utils.visible_to(req), name,
                           utils.context(req).project_id,
                           body.get('device_profile_group_id'))
    return utils.response({'arqs': [view(req, i) for i in items]},
                          status=201)


def list_arqs(req):
    utils.authorize(req, policies.GET_ALL)
    params = utils.query(req, schemas.LIST_QUERY)
    page = utils.page(params)
    instance = params.get('instance')
    if params.get('bind_state') == 'resolved' and instance:
        # Cyborg: 423 while any ARQ of the instance is still binding.
        pending = [i.arq.uuid for i in db.list_arqs(
            _scope(req, policies.GET_ALL), instance_uuid=instance)
            if i.arq.state not in states.ARQ_RESOLVED]
        if pending:
            raise exception.Locked(
                reason='ARQs %s of instance %s are not resolved yet.'
                       % (', '.join(pending), instance))
    resolved = states.ARQ_RESOLVED if 'bind_state' in params else None
    version = microversion.of(req)
    fmt = _LIST_FORMATS[version.matches('2.1'),
                        version.matches(microversion.TOPOLOGY),
                        version.matches(microversion.BIND_WAITS)]
    first = len(fmt.columns())
    rows = db.list_arq_rows(
        fmt.columns() + ('attach_handle_info',) + _ALIGNMENT_COLUMNS,
        utils.href_prefix(req, 'accelerator_requests'),
        _scope(req, policies.GET_ALL), instance_uuid=instance,
        states=resolved, **page)
    # NOTE: re-encoded, so that the text is json.dumps's as in ``view``
    # (the row holds common/canonical_json's compact spelling).
    raw = {'attach_handle_info': [
        '{}' if row[first] is None
        else json.dumps(handle_info(row[first], row[first + 3]))
        for row in rows]}
    if 'numa_aligned' in fmt.raw:
        nodes = numa_alignment.InstanceNodes()
        raw['numa_aligned'] = [json.dumps(nodes.aligned(*row[first + 1:]))
                               for row in rows]
    return utils.collection_response(
        'arqs', fmt.encode(rows, raw), rows, req, 'accelerator_requests',
        page['limit'])


def show_arq(req, uuid):
    utils.require_uuid(uuid, exception.ARQNotFound(uuid=uuid))
    item = db.get_arqs(_scope(req, policies.GET_ONE), [uuid])[0]
    utils.authorize(req, policies.GET_ONE, {'project_id': item.arq.project_id})
    return utils.response(view(req, item))


def delete_arqs(req):
    utils.authorize(req, policies.DELETE)
    if ('arqs' in req.GET) == ('instance' in req.GET):
        raise exception.InvalidField(
            field='query', reason='give either arqs=<uuid>[,<uuid>...] or '
                                  'instance=<uuid>')
    params = utils.query(req, schemas.DELETE_QUERY)
    scope = _scope(req, policies.DELETE)
    if 'instance' in params:
        deleted = arq_releases.delete_by_instance(scope, params['instance'])
    else:
        deleted = arq_releases.delete_by_uuids(
            scope, params['arqs'].split(','), _may_delete(req))
    _after_release(req, deleted)
    return utils.response(status=204)


def _after_release(req, released):
    """What deleting or unbinding left (db/arqs.Released): the released
    regions, reserved until wiped, are in every scheduler's view before
    the request answers; then their wipe starts."""
    utils.release(req, released.publish_hosts, released.clean_hosts,
                  fallback=deployables.start_cleaning)


def _may_delete(req):
    # The target is each ARQ: its own project, not the caller's.
    def check(arq):
        utils.authorize(req, policies.DELETE, {'project_id': arq.project_id})
    return check


def delete_arq(req, uuid):
    """DELETE .../{uuid}: one ARQ, as the clients send it (Cyborg routes
    the path segment to the ``arqs`` argument)."""
    utils.authorize(req, policies.DELETE)
    utils.require_uuid(uuid, exception.ARQNotFound(uuid=uuid))
    _after_release(req, arq_releases.delete_by_uuids(
        _scope(req, policies.DELETE), [uuid], _may_delete(req)))
    return utils.response(status=204)


def _parse_patch(req, arq_uuid, ops):
    """(kind, values) of one ARQ's JSON patch: kind 'bind' with the added
    values, or 'unbind'. Raises InvalidField (400) naming what is wrong."""
    field = 'body.%s' % arq_uuid
    kinds = {op['op'] for op in ops}
    if len(kinds) != 1:
        raise exception.InvalidField(
            field=field, reason='every op must be add, or every op remove')
    paths = [op['path'].lstrip('/') for op in ops]
    if len(set(paths)) != len(paths):
        raise exception.InvalidField(field=field,
                                     reason='a path is given twice')
    if 'project_id' in paths:
        _check_project_id_allowed(req)
    if kinds == {'remove'}:
        return 'unbind', {}
    values = {op['path'].lstrip('/'): op['value'] for op in ops}
    missing = [f for f in BIND_FIELDS if f not in values]
    if missing:
        raise exception.InvalidField(
            field=field, reason='a bind needs %s' % ', '.join(
                '/' + f for f in missing))
    for key in ('device_rp_uuid', 'instance_uuid'):
        if not utils.is_uuid(values[key]):
            raise exception.InvalidField(field='%s./%s' % (field, key),
                                         reason='not a uuid')
    return 'bind', values


def _check_project_id_allowed(req):
    if not microversion.of(req).matches('2.1'):
        raise exception.NotAcceptable(
            reason='/project_id in a patch needs API version 2.1 or later')
    if not utils.context(req).is_admin:
        raise exception.Forbidden('Only an admin may set /project_id.')


def _check_states(items, kind):
    allowed = (states.ARQ_BINDABLE if kind == 'bind'
               else states.ARQ_UNBINDABLE)
    for item in items:
        if item.arq.state not in allowed:
            raise exception.ARQStateConflict(
                uuid=item.arq.uuid, state=item.arq.state, action=kind,
                expected=', '.join(allowed))


def _check_instances(bindings, projects):
    """Cyborg's rule: no ARQs are added to an instance that already has
    some (409). Those of the ARQ's own project only: another project's
    ARQ naming the instance (any member may name any uuid) blocks
    nothing."""
    for instance, project_id in {(bindings[uuid]['instance_uuid'], project)
                                 for uuid, project in projects.items()}:
        if db.instance_has_arqs(instance, project_id):
            raise exception.InstanceHasARQs(instance=instance)


def _check_allocated(ctx, bindings, projects):
    """Forbidden unless, for each binding, the caller may bind to any
    provider (a service, an admin: policy BIND_UNALLOCATED) or Placement
    has as many accelerators of the binding's provider allocated to its
    instance, a consumer of the ARQ's project: a project member's bind
    never takes what Placement still offers to others
    (instance_allocations)."""
    held, wanted = {}, collections.Counter()
    for arq_uuid, values in sorted(bindings.items()):
        project_id = projects[arq_uuid]
        if policy.check(ctx, policies.BIND_UNALLOCATED,
                        {'project_id': project_id}):
            continue
        instance, rp_uuid = values['instance_uuid'], values['device_rp_uuid']
        if instance not in held:
            held[instance] = _held_by(instance, rp_uuid)
        found = held[instance]
        wanted[instance, rp_uuid] += 1
        allocated = found.providers.get(rp_uuid, 0) \
            if found.project_id == project_id else 0
        if wanted[instance, rp_uuid] > allocated:
            raise exception.Forbidden(
                'Instance %s holds %d accelerator(s) on resource provider '
                '%s in Placement for project %s, and %d ARQ(s) are bound '
                'to them: only a service (Nova, which claims them first) '
                'or an admin may bind an ARQ to capacity Placement has not '
                'allocated to its instance.'
                % (instance, allocated, rp_uuid, project_id,
                   wanted[instance, rp_uuid]))


def _held_by(instance, rp_uuid):
    try:
        return instance_allocations.held_by(instance)
    except instance_allocations.NotAsked:
        raise exception.Forbidden(
            'Only a service (Nova) or an admin may bind instance %s to '
            'resource provider %s here: this API has no [placement] '
            'credentials to check that Placement allocated it to the '
            'instance.' % (instance, rp_uuid))


def patch_arqs(req):
    """Bind or unbind: {"<arq uuid>": [JSON patch ops], ...} -> 202."""
    utils.authorize(req, policies.UPDATE)
    return _apply_patch(req, utils.json_body(req, schemas.PATCH))


def patch_arq(req, uuid):
    """The same for one ARQ, as openstacksdk sends it: PATCH .../{uuid}
    with the body still keyed by that uuid."""
    utils.authorize(req, policies.UPDATE)
    utils.require_uuid(uuid, exception.ARQNotFound(uuid=uuid))
    body = utils.json_body(req, schemas.PATCH)
    if list(body) != [uuid]:
        raise exception.InvalidField(
            field='body', reason='must patch the ARQ of the URL only: '
                                 '{"%s": [...]}' % uuid)
    return _apply_patch(req, body)


def _apply_patch(req, body):
    parsed = {uuid: _parse_patch(req, uuid, ops)
              for uuid, ops in body.items()}
    kinds = {kind for kind, _ in parsed.values()}
    if len(kinds) != 1:
        raise exception.InvalidField(
            field='body', reason='bind and unbind in one request')
    kind = kinds.pop()
    items = db.get_arqs(_scope(req, policies.UPDATE), list(parsed))
    for item in items:
        utils.authorize(req, policies.UPDATE,
                        {'project_id': item.arq.project_id})
    _check_states(items, kind)
    ctx = utils.context(req)
    if kind == 'unbind':
        # NOTE: done here, not cast, so the released regions are reserved
        # everywhere before this answers (Cyborg's 202 is kept).
        _after_release(req, arq_releases.unbind_all(
            _scope(req, policies.UPDATE), list(parsed)))
        return utils.response(status=202)
    bindings = {uuid: values for uuid, (_, values) in parsed.items()}
    # The project each ARQ has once bound (an admin may set it).
    projects = {item.arq.uuid: bindings[item.arq.uuid].get('project_id') or
                item.arq.project_id for item in items}
    _check_instances(bindings, projects)
    _check_allocated(ctx, bindings, projects)
    # NOTE: recorded before the cast, so a cast lost with a dying conductor
    # leaves BindStarted ARQs that the reaper ends, never Initial ones.
    arq_binds.start_binds(bindings)
    utils.conductor(req).bind_arqs(ctx, bindings)
    return utils.response(status=202)
