"""/v2/device_profiles: named lists of request groups.

Plain database writes: a profile involves no host. A member's profile
belongs to its project; an admin's is public (no project). A bitstream a
group names (``accel:bitstream_id``) must be one every user of the
profile may load: the project's own or a public one for a member's
profile, a public one for an admin's; any other is refused as missing
(404), at creation rather than at the first bind.
"""
import functools
import re

from cyborg_lite.api import microversion
from cyborg_lite.api.policies import device_profiles as policies
from cyborg_lite.api.schemas import device_profiles as schemas
from cyborg_lite.api import utils
from cyborg_lite.common import exception
from cyborg_lite.common import resources
from cyborg_lite.db import bitstreams as db_bitstreams
from cyborg_lite.db import device_profiles as db
from cyborg_lite.db import explain as explain_db
from cyborg_lite.placement import explain

_NAME_RE = re.compile('[a-zA-Z0-9-_]+')
_PREFIXES = ('resources:', 'trait:', 'accel:')


def view(req, profile):
    body = {
        'uuid': profile.uuid,
        'name': profile.name,
        'description': profile.description,
        'groups': db.groups_of(profile),
        'project_id': profile.project_id,
        'links': utils.link(req, 'device_profiles', profile.uuid),
    }
    body.update(utils.timestamps(profile))
    return body


def _normalize_group(group):
    """Cyborg strips spaces after the key prefix ('resources: FPGA') and
    takes counts as numbers or strings; counts are stored as strings."""
    if not isinstance(group, dict):
        return group
    result = {}
    for key, value in group.items():
        for prefix in _PREFIXES:
            if key.startswith(prefix):
                key = prefix + key[len(prefix):].strip(' ')
        if key.startswith('resources:') and isinstance(value, str):
            value = value.strip(' ')
        if key == 'accel:bitstream_id' and isinstance(value, str):
            # Bitstream uuids are stored lower case; the bind looks the
            # bitstream up by this value.
            value = value.lower()
        result[key] = value
    return result


def _normalize(body):
    for profile in body if isinstance(body, list) else ():
        if isinstance(profile, dict) and \
                isinstance(profile.get('groups'), list):
            profile['groups'] = [_normalize_group(g)
                                 for g in profile['groups']]
    return body


def _check_groups(groups):
    for index, group in enumerate(groups):
        if any(int(v) > schemas.MAX_AMOUNT for k, v in group.items()
               if k.startswith('resources:')):
            raise exception.InvalidField(
                field='body.0.groups.%d' % index,
                reason='a resource amount is over %d' % schemas.MAX_AMOUNT)
        count = resources.accelerator_count(group)
        if count < 1:
            raise exception.InvalidField(
                field='body.0.groups.%d' % index,
                reason='a group must ask for at least one accelerator '
                       '(resources:<RESOURCE CLASS>, not only sizes such '
                       'as resources:CUSTOM_FPGA_LOCAL_MEMORY_MB)')
        if count > schemas.MAX_PER_GROUP:
            raise exception.InvalidField(
                field='body.0.groups.%d' % index,
                reason='%d accelerators in one group; at most %d'
                       % (count, schemas.MAX_PER_GROUP))
    return [{k: str(v) for k, v in group.items()} for group in groups]


def _check_bitstreams(groups, project_id):
    """BitstreamNotFound unless every named bitstream is visible to the
    profile's users: ``project_id``'s and public ones (public ones only
    for a public profile, ``project_id`` None)."""
    for group in groups:
        if 'accel:bitstream_id' in group:
            db_bitstreams.get_visible(project_id, group['accel:bitstream_id'])


def create_profile(req):
    utils.authorize(req, policies.CREATE)
    body = utils.json_body(req, schemas.CREATE, normalize=_normalize)[0]
    ctx = utils.context(req)
    project_id = None if ctx.is_admin else ctx.project_id
    groups = _check_groups(body['groups'])
    _check_bitstreams(groups, project_id)
    profile = db.create_profile(
        body['name'], groups,
        description=body.get('description'), uuid=body.get('uuid'),
        project_id=project_id)
    return utils.response(view(req, profile), status=201)


def list_profiles(req):
    utils.authorize(req, policies.GET_ALL)
    params = utils.query(req, schemas.LIST_QUERY)
    names = params['name'].split(',') if 'name' in params else None
    page = utils.page(params)
    profiles = db.list_profiles(utils.visible_to(req), names=names, **page)
    return utils.response(utils.collection(
        'device_profiles', [view(req, p) for p in profiles], req,
        'device_profiles', page['limit']))


def _ident(uuid_or_name):
    """{'uuid': x} or {'name': x}; NotFound for what can be neither."""
    if utils.is_uuid(uuid_or_name):
        return {'uuid': uuid_or_name}
    if _NAME_RE.fullmatch(uuid_or_name) and len(uuid_or_name) <= 255:
        return {'name': uuid_or_name}
    raise exception.DeviceProfileNotFound(ident=uuid_or_name)


def checked_name(name):
    """``name``, if a profile could have it; else 404 (such a name is not
    looked up)."""
    if not (_NAME_RE.fullmatch(name) and len(name) <= 255):
        raise exception.DeviceProfileNotFound(ident=name)
    return name


def show_profile(req, uuid_or_name):
    utils.authorize(req, policies.GET_ONE)
    ident = _ident(uuid_or_name)
    if 'name' in ident and not microversion.of(req).matches('2.2'):
        raise exception.NotAcceptable(
            reason='a device profile by name needs API version 2.2 or '
                   'later (OpenStack-API-Version: accelerator 2.2).')
    profile = db.get_profile(utils.visible_to(req), **ident)
    # NOTE: Cyborg wraps this one response (and no other) in a key.
    return utils.response({'device_profile': view(req, profile)})


def _may_delete(req):
    # NOTE: the target is the profile: a public one has no project, so
    # only an admin passes.
    def check(profile):
        utils.authorize(req, policies.DELETE,
                        {'project_id': profile.project_id})
    return check


def delete_profile(req, uuid_or_name):
    utils.authorize(req, policies.DELETE)
    ident = _ident(uuid_or_name)
    db.delete_profiles(utils.visible_to(req),
                       uuids=[ident['uuid']] if 'uuid' in ident else (),
                       names=[ident['name']] if 'name' in ident else (),
                       may_delete=_may_delete(req))
    return utils.response(status=204)


def delete_profiles_by_name(req):
    utils.authorize(req, policies.DELETE)
    params = utils.query(req, schemas.DELETE_QUERY)
    if 'value' not in params:
        raise exception.InvalidField(
            field='value', reason='name the profiles to delete: '
                                  '?value=<name>[,<name>...]')
    db.delete_profiles(utils.visible_to(req),
                       names=params['value'].split(','),
                       may_delete=_may_delete(req))
    return utils.response(status=204)


def explain_profile(req, name):
    """200 with the funnel of each request group (placement/explain.py)
    over every host, or over ``?hostname=``; 404 for a profile the caller
    cannot see, or a host with no device."""
    microversion.require(req, microversion.PROFILE_EXPLAIN,
                         '/v2/device_profiles/{name}/explain')
    utils.authorize(req, policies.EXPLAIN)
    params = utils.query(req, schemas.EXPLAIN_QUERY)
    hostname = params.get('hostname')
    return utils.response(explain_db.snapshot(
        utils.visible_to(req), checked_name(name), hostname,
        functools.partial(_explained, hostname)))


def _explained(hostname, snapshot):
    """The explain's body of ``snapshot`` (in its read transaction)."""
    if hostname is not None and not snapshot.fleet.hostnames:
        raise exception.NotFound(
            message='No device of host %s is known.' % hostname)
    groups = explain.explain(
        snapshot.groups, snapshot.fleet, images=explain.Images(
            snapshot.bitstream_region_types,
            snapshot.function_region_types))
    return {
        'device_profile': snapshot.profile.name,
        'hostname': hostname,
        'hosts': len(snapshot.fleet.hostnames),
        'result': 'no_candidates' if any(g['blocking'] for g in groups)
        else 'candidates',
        'groups': groups}
