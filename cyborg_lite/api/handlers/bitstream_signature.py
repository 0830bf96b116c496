"""/v2/bitstreams/{uuid}/signature: the detached signature of a bitstream's
image (from the signed bitstreams microversion, bitstreams/signatures.py).

PUT attaches one to an active bitstream (its image stored): ``signature``
is the base64 of the raw signature over the image's SHA-256 digest,
``key_id`` optionally names the key that made it. What cannot be a
signature (bad base64, a length no algorithm has, a malformed DER ECDSA
value, the wrong form for the named key) is a 400; a well-formed one is
stored and checked at once, and the answer says what it is:
``verified``, ``invalid`` (it does not verify over this image's digest:
another image's, another key's), ``untrusted_key`` (the named key is not
trusted for the bitstream's project), ``revoked_key``. The status is
worked out again on every read, so registering or revoking a key changes
it. PUT again replaces the signature; DELETE removes it.
"""
from cyborg_lite.api.handlers import bitstreams as metadata
from cyborg_lite.api.policies import bitstreams as policies
from cyborg_lite.api.schemas import bitstreams as schemas
from cyborg_lite.api import microversion
from cyborg_lite.api import utils
from cyborg_lite.bitstreams import signatures
from cyborg_lite.bitstreams import trust as bitstream_trust
from cyborg_lite.common import exception
from cyborg_lite.db import bitstreams as db
from cyborg_lite.db import trusted_keys as keys_db

PATH = '/v2/bitstreams/{uuid}/signature'


def _find(req, uuid, rule):
    microversion.require(req, signatures.MICROVERSION, PATH)
    utils.authorize(req, rule)
    bitstream = metadata.find_visible(req, uuid)
    if rule == policies.SIGN:
        utils.authorize(req, rule, {'project_id': bitstream.project_id})
    return bitstream


def view(bitstream):
    verdict = bitstream_trust.verdict(bitstream)
    return {'bitstream_uuid': bitstream.uuid, 'sha256': bitstream.sha256,
            'signature': bitstream.signature,
            'signature_status': verdict.status, 'signer': verdict.signer,
            'key_id': verdict.key_id,
            'signed_at': utils.timestamp(bitstream.signed_at),
            'reason': verdict.reason}


def _check_form(raw, key_id, project_id):
    """400 for bytes that cannot be a signature of the named key (or,
    with none named, of any supported algorithm)."""
    if key_id is not None:
        for key in keys_db.trusted_for([project_id])[project_id]:
            if key.key_id == key_id:
                signatures.check_form(raw, key.algorithm)
                return
        # NOTE: an unknown key's algorithm is unknown: any form may do.
        return
    problems = []
    for algorithm in signatures.ALGORITHMS:
        try:
            signatures.check_form(raw, algorithm)
            return
        except exception.InvalidField as exc:
            problems.append(str(exc.kwargs['reason']))
    raise exception.InvalidField(field='signature',
                                 reason='; '.join(problems))


def put_signature(req, uuid):
    """200 with the signature and its status as of now."""
    bitstream = _find(req, uuid, policies.SIGN)
    body = utils.json_body(req, schemas.SIGNATURE)
    raw = signatures.decode_signature(body['signature'])
    if bitstream.status != 'active':
        raise exception.Conflict(
            reason='bitstream %s is %s: a signature is over the stored '
                   'image, upload it first (PUT /v2/bitstreams/%s/file)'
                   % (uuid, bitstream.status, uuid))
    key_id = body.get('key_id')
    _check_form(raw, key_id, bitstream.project_id)
    signed = db.set_signature(uuid, signatures.encode_signature(raw), key_id)
    return utils.response(view(signed))


def show_signature(req, uuid):
    return utils.response(view(_find(req, uuid, policies.GET_ONE)))


def delete_signature(req, uuid):
    """204; the bitstream is unsigned (already so: nothing changes)."""
    bitstream = _find(req, uuid, policies.SIGN)
    if bitstream.signature is not None:
        db.set_signature(uuid, None)
    return utils.response(status=204)
