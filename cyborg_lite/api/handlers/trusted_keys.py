"""/v2/trusted_keys: the public keys trusted to sign bitstreams, and
/v2/signature_policies: what programming does with signatures, per
project (from the signed bitstreams microversion).

An admin registers a key (a PEM public key, or a PEM X.509 certificate
whose key it pins) for every project (``project_id`` null) or for one;
the key signs the bitstreams of the projects it is trusted for. ``POST
.../revoke`` revokes it for good: from that commit on no image it signed
is programmed (bitstreams/trust works the status out on every
read and every job), jobs already sent to an agent finish. A revoked key
is kept and cannot be registered again; DELETE removes a key registered
by mistake.

A project's signature policy is its own when an admin set one (PUT
/v2/signature_policies/{project_id}), else [bitstreams]signature_policy.
"""
from cyborg_lite.api.policies import trusted_keys as policies
from cyborg_lite.api.schemas import trusted_keys as schemas
from cyborg_lite.api import microversion
from cyborg_lite.api import utils
from cyborg_lite.bitstreams import signatures
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF
from cyborg_lite.db import signature_policies as policies_db
from cyborg_lite.db.sql import clock
from cyborg_lite.db import trusted_keys as db

_FIELDS = ('uuid', 'key_id', 'name', 'algorithm', 'public_key',
           'certificate', 'subject', 'project_id', 'revocation_reason')
_TIMES = ('not_before', 'not_after', 'revoked_at')


def _require_version(req, what):
    microversion.require(req, signatures.MICROVERSION, what)


def view(req, key):
    body = {name: getattr(key, name) for name in _FIELDS}
    body.update({name: utils.timestamp(getattr(key, name))
                 for name in _TIMES})
    body['links'] = utils.link(req, 'trusted_keys', key.uuid)
    body.update(utils.timestamps(key))
    return body


def _find(req, uuid):
    utils.require_uuid(uuid, exception.TrustedKeyNotFound(uuid=uuid))
    return db.get_visible(utils.visible_to(req), uuid)


def create_key(req):
    """201 with the key; 400 for anything not a supported public key or
    certificate valid now, 409 when the key is registered already."""
    _require_version(req, '/v2/trusted_keys')
    utils.authorize(req, policies.KEY_CREATE)
    body = utils.json_body(req, schemas.CREATE)
    info = signatures.load_key(body['public_key'], now=clock.utcnow())
    key = db.create(info, body['name'], body.get('project_id'))
    resp = utils.response(view(req, key), status=201)
    resp.location = utils.link(req, 'trusted_keys', key.uuid)[0]['href']
    return resp


def list_keys(req):
    _require_version(req, '/v2/trusted_keys')
    utils.authorize(req, policies.KEY_GET_ALL)
    params = utils.query(req, schemas.LIST_QUERY)
    page = utils.page(params)
    rows = db.page_keys(utils.visible_to(req),
                        {k: params[k] for k in db.FILTERS if k in params},
                        **page)
    return utils.response(utils.collection(
        'trusted_keys', [view(req, k) for k in rows], req, 'trusted_keys',
        page['limit']))


def show_key(req, uuid):
    _require_version(req, '/v2/trusted_keys')
    utils.authorize(req, policies.KEY_GET_ONE)
    return utils.response(view(req, _find(req, uuid)))


def revoke_key(req, uuid):
    """200 with the revoked key; 409 if it was revoked already."""
    _require_version(req, '/v2/trusted_keys')
    utils.authorize(req, policies.KEY_REVOKE)
    # NOTE: the body is optional: a POST with none revokes without a reason.
    body = utils.json_body(req, schemas.REVOKE) if req.body else {}
    _find(req, uuid)
    return utils.response(view(req, db.revoke(uuid, body.get('reason'))))


def delete_key(req, uuid):
    """204; 409 for a revoked key (kept as the revocation's record)."""
    _require_version(req, '/v2/trusted_keys')
    utils.authorize(req, policies.KEY_DELETE)
    _find(req, uuid)
    db.delete(uuid)
    return utils.response(status=204)


# --- /v2/signature_policies ---------------------------------------------

def _policy_view(project_id, row):
    if row is None:
        return {'project_id': project_id,
                'policy': CONF.bitstreams.signature_policy,
                'source': 'configuration', 'created_at': None,
                'updated_at': None}
    return {'project_id': row.project_id, 'policy': row.policy,
            'source': 'project', 'created_at': utils.timestamp(
                row.created_at),
            'updated_at': utils.timestamp(row.updated_at)}


def _project(req, project_id, rule):
    _require_version(req, '/v2/signature_policies')
    utils.validate(project_id, schemas.PROJECT_ID, 'project_id')
    utils.authorize(req, rule, {'project_id': project_id})
    return project_id


def list_policies(req):
    _require_version(req, '/v2/signature_policies')
    utils.authorize(req, policies.POLICY_GET_ALL)
    return utils.response({
        'default_policy': CONF.bitstreams.signature_policy,
        'signature_policies': [_policy_view(row.project_id, row)
                               for row in policies_db.list_all()]})


def show_policy(req, project_id):
    project_id = _project(req, project_id, policies.POLICY_GET_ONE)
    return utils.response(_policy_view(project_id,
                                       policies_db.get(project_id)))


def update_policy(req, project_id):
    project_id = _project(req, project_id, policies.POLICY_UPDATE)
    body = utils.json_body(req, schemas.POLICY_UPDATE)
    row = policies_db.set_policy(project_id, body['policy'])
    return utils.response(_policy_view(project_id, row))


def delete_policy(req, project_id):
    """204; 404 when the project has no policy of its own."""
    project_id = _project(req, project_id, policies.POLICY_DELETE)
    policies_db.delete(project_id)
    return utils.response(status=204)
