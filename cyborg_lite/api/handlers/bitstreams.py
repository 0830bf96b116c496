"""/v2/bitstreams: metadata of FPGA images (from microversion 2.4).

Glance-like, in two steps: POST the metadata (status ``queued``), then PUT
the bytes to /v2/bitstreams/{uuid}/file (bitstream_file.py), which makes
it ``active``. A bitstream belongs to its creator's project; private ones
are seen by that project and admins, public ones (created by admins) by
everyone.

From the signed bitstreams microversion (bitstreams/signatures.MICROVERSION)
a bitstream shows its ``signature_status``, ``signer``, ``key_id`` and
``signed_at``, worked out on every read from its signature and the keys
trusted for its project (bitstreams/trust); the signature itself
is under /v2/bitstreams/{uuid}/signature (bitstream_signature.py).
"""
from cyborg_lite.api import microversion
from cyborg_lite.api.policies import bitstreams as policies
from cyborg_lite.api.schemas import bitstreams as schemas
from cyborg_lite.api import utils
from cyborg_lite.bitstreams import formats as bitstream_formats
from cyborg_lite.bitstreams import signatures
from cyborg_lite.bitstreams import staging as image_staging
from cyborg_lite.bitstreams import store as image_store
from cyborg_lite.bitstreams import trust as bitstream_trust
from cyborg_lite.common import exception
from cyborg_lite.conf import CONF
from cyborg_lite.db import bitstreams as db

MIN_VERSION = '2.4'
_FIELDS = ('uuid', 'name', 'version', 'vendor', 'format', 'region_type',
           'function_id', 'function_name', 'local_memory_mb', 'sha256',
           'size', 'status', 'visibility', 'project_id')
# Ids are stored and compared in one canonical form (see normalise_id).
_IDS = ('region_type', 'function_id')


def require_version(req):
    microversion.require(req, MIN_VERSION, '/v2/bitstreams')


def shows_signatures(req):
    return microversion.of(req).matches(signatures.MICROVERSION)


def view(req, bitstream, verdict=None):
    """The bitstream's body; ``verdict`` (bitstream_trust) is worked out
    here when the version shows it and none is given."""
    body = {key: getattr(bitstream, key) for key in _FIELDS}
    body['links'] = utils.link(req, 'bitstreams', bitstream.uuid) + [{
        'href': '%s/v2/bitstreams/%s/file' % (utils.base_url(req),
                                              bitstream.uuid),
        'rel': 'file'}]
    body.update(utils.timestamps(bitstream))
    if shows_signatures(req):
        verdict = verdict or bitstream_trust.verdict(bitstream)
        body.update(signature_status=verdict.status, signer=verdict.signer,
                    key_id=verdict.key_id,
                    signed_at=utils.timestamp(bitstream.signed_at))
    return body


def find_visible(req, uuid):
    """The bitstream if the caller may see it; 404 otherwise (another
    project's private bitstream is not shown to exist)."""
    utils.require_uuid(uuid, exception.BitstreamNotFound(uuid=uuid))
    return db.get_visible(utils.visible_to(req), uuid)


def claim_staging(uuid):
    """The bitstream's upload staging area (bitstreams/staging), held
    until released; 409 while an upload of it is running."""
    claim = image_staging.claim(CONF.bitstreams.store_dir, uuid)
    if claim is None:
        raise exception.Conflict(
            reason='an upload of bitstream %s is in progress; retry once '
                   'it has ended' % uuid)
    return claim


def _normalised(body):
    values = dict(body)
    for field in _IDS:
        if field in values:
            values[field] = bitstream_formats.normalise_id(values[field],
                                                           field)
    if 'sha256' in values:
        values['sha256'] = values['sha256'].lower()
    return values


def create_bitstream(req):
    require_version(req)
    utils.authorize(req, policies.CREATE)
    body = utils.json_body(req, schemas.CREATE)
    if body.get('visibility') == 'public':
        utils.authorize(req, policies.PUBLICIZE)
    values = _normalised(body)
    values['project_id'] = utils.context(req).project_id
    bitstream = db.create(values)
    resp = utils.response(view(req, bitstream), status=201)
    resp.location = utils.link(req, 'bitstreams', bitstream.uuid)[0]['href']
    return resp


def _filters(params):
    filters = {k: params[k] for k in db.FILTERS if k in params}
    for field in _IDS:
        if field in filters:
            filters[field] = bitstream_formats.normalise_id(filters[field],
                                                            field)
    return filters


def list_bitstreams(req):
    require_version(req)
    utils.authorize(req, policies.GET_ALL)
    params = utils.query(req, schemas.LIST_QUERY)
    page = utils.page(params)
    rows = db.page_bitstreams(utils.visible_to(req), _filters(params),
                              **page)
    verdicts = bitstream_trust.verdicts(rows) if shows_signatures(req) \
        else {}
    return utils.response(utils.collection(
        'bitstreams', [view(req, b, verdicts.get(b.uuid)) for b in rows],
        req, 'bitstreams', page['limit']))


def show_bitstream(req, uuid):
    require_version(req)
    utils.authorize(req, policies.GET_ONE)
    return utils.response(view(req, find_visible(req, uuid)))


def delete_bitstream(req, uuid):
    """204; 409 while programming jobs refer to it or an upload of it
    runs. The stored bytes go too unless another bitstream has the same
    sha256 (same content), and so does what an upload that died left in
    its staging area."""
    require_version(req)
    utils.authorize(req, policies.DELETE)
    bitstream = find_visible(req, uuid)
    # NOTE: the target is the bitstream: a member may see a public one
    # but delete only its own project's.
    utils.authorize(req, policies.DELETE,
                    {'project_id': bitstream.project_id})
    claim = claim_staging(uuid)
    try:
        deleted = db.delete(uuid)
    finally:
        claim.release()
    if deleted.sha256 and not db.sha256_in_use(deleted.sha256):
        image_store.ImageStore().delete(deleted.sha256)
    return utils.response(status=204)
