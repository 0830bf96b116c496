"""Programming jobs, conductor side: what may be loaded where.

The checks take plain rows and flags and raise before any byte reaches
hardware (the hardware may not stop a bad image, so software must):
the bitstream is active with a known sha256, it may be used by the
requesting project, its region type is the region's, the region is not
held by a Bound ARQ (itself, or through a sibling behind its PCI
function) unless an admin forces it, and the signature policy of the
requesting project lets its signature status through (no force
overrides that). ``resolve_function`` picks the bitstream a bind's
``accel:function_id`` stands for.

Jobs, binds and Kubernetes prepares all come here: each starts a job
through conductor/programming.create_job_for, which calls ``preflight``.
A bind or prepare that finds its image already loaded asks
``loaded_image_trusted`` whether that image passes the same signature
check now; if not, it loads the image again through a job.
"""
from oslo_log import log as logging

from cyborg_lite.bitstreams.formats import normalise_id
from cyborg_lite.bitstreams import signatures
from cyborg_lite.bitstreams import trust as bitstream_trust
from cyborg_lite.common import exception
from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import deployables as deployables_db

LOG = logging.getLogger(__name__)


def check_bitstream_usable(bitstream, project_id=None, is_admin=False):
    if (bitstream.visibility != 'public' and not is_admin and
            bitstream.project_id != project_id):
        # Not "forbidden": a private bitstream of another project is not
        # shown to this one at all.
        raise exception.BitstreamNotFound(uuid=bitstream.uuid)
    if bitstream.status != 'active':
        raise exception.Conflict(reason='bitstream %s is %s, not active: '
                                 'its image is not uploaded'
                                 % (bitstream.uuid, bitstream.status))
    if not bitstream.sha256:
        raise exception.Invalid(reason='bitstream %s has no sha256 to '
                                'verify its image against' % bitstream.uuid)


def check_region_type(bitstream, deployable):
    region = normalise_id(deployable.region_type, 'region_type')
    if region is None:
        raise exception.Invalid(reason='deployable %s has no region type: it '
                                'is not programmable' % deployable.name)
    wanted = normalise_id(bitstream.region_type, 'region_type')
    if wanted is None:
        raise exception.Invalid(reason='bitstream %s declares no region type'
                                % bitstream.uuid)
    if wanted != region:
        raise exception.Invalid(
            reason='region type mismatch: bitstream %s fits %s, region %s is '
                   '%s' % (bitstream.uuid, wanted, deployable.name, region))


def check_region_free(deployable, holder, is_admin=False, force=False):
    """Refuse to reprogram a region an ARQ (Bound, or BindStarted while
    its claim is published) or a Kubernetes claim holds, itself or
    through a sibling behind its function (``holder``: db/deployables.
    bound_arq_on's), unless forced."""
    if holder is None:
        return
    holder = deployables_db.holder_label(holder)
    if not force:
        raise exception.Conflict(
            reason='region %s is in use by %s; an admin may force '
                   'reprogramming' % (deployable.name, holder))
    if not is_admin:
        raise exception.Forbidden(
            message='Only an admin may force reprogramming region %s, in '
                    'use by %s.' % (deployable.name, holder))


def check_signature(bitstream, trust):
    """SignatureRefused unless ``trust`` (bitstreams/trust.Trust:
    the policy of the requesting project and the signature's verdict as
    of now, so a key revoked a moment ago counts) lets ``bitstream`` be
    programmed (bitstreams/signatures.permits). Under ``warn`` anything but
    a revoked key's image passes, logged."""
    if trust.policy == signatures.DISABLED:
        return
    found = trust.verdict
    if _refused(trust):
        raise exception.SignatureRefused(uuid=bitstream.uuid,
                                         status=found.status,
                                         reason=found.reason,
                                         scope=trust.scope,
                                         policy=trust.policy)
    if found.status != signatures.VERIFIED:
        LOG.warning('Bitstream %s is programmed with its signature %s (%s): '
                    'the signature policy of %s is warn', bitstream.uuid,
                    found.status, found.reason, trust.scope)


def _refused(trust):
    """Whether the policy ``trust`` holds refuses its verdict."""
    return (trust.policy != signatures.DISABLED and
            not signatures.permits(trust.policy, trust.verdict.status))


def loaded_image_trusted(bitstream_id, function_id, project_id):
    """Whether the image a region holds (the ``bitstream_id`` and
    ``function_id`` recorded on it) passes, for ``project_id``, the
    signature check a job of it would get now.

    A bind or a Kubernetes prepare that finds what it asks for already
    loaded hands the region out as it is only then; otherwise the region
    counts as not loaded, and the job that loads it again passes every
    check or refuses. An image cyborg_lite did not load (no bitstream
    recorded, that bitstream gone, or the region reporting a function
    other than the bitstream's) is unsigned.
    """
    bitstream = _loaded_bitstream(bitstream_id, function_id)
    trust = bitstream_trust.load(bitstream, project_id)
    if not _refused(trust):
        return True
    LOG.info('A region holds %s, whose signature is %s (%s): the signature '
             'policy of %s refuses it, so the region counts as not loaded',
             'bitstream %s' % bitstream.uuid if bitstream else
             'an image of function %s' % function_id,
             trust.verdict.status, trust.verdict.reason, trust.scope)
    return False


def _loaded_bitstream(bitstream_id, function_id):
    """The bitstream whose image a region with these ids holds; None when
    none is known to be there."""
    if bitstream_id is None:
        return None
    try:
        bitstream = bitstreams_db.get(bitstream_id)
    except exception.BitstreamNotFound:
        return None
    try:
        loaded = normalise_id(function_id, 'function_id')
        recorded = normalise_id(bitstream.function_id, 'function_id')
    except exception.Invalid:
        return None
    if loaded and recorded and loaded != recorded:
        # NOTE: the region was programmed since by something else (a
        # report keeps the bitstream_id the last job recorded).
        return None
    return bitstream


def preflight(bitstream, deployable, holder=None, is_admin=False,
              force=False, project_id=None, *, trust):
    """Every check, cheapest first; raises with the reason. ``holder``:
    who holds the region (db/deployables.bound_arq_on); ``trust``:
    bitstreams/trust.load's for this bitstream and project."""
    check_bitstream_usable(bitstream, project_id, is_admin)
    check_region_type(bitstream, deployable)
    check_region_free(deployable, holder, is_admin, force)
    check_signature(bitstream, trust)


def _visible(project_id, is_admin):
    """list_bitstreams filters for what this requester may load."""
    if is_admin:
        return {}
    if project_id is None:
        return {'visibility': 'public'}
    return {'visible_to_project': project_id}


def resolve_function(function_id, deployable, project_id=None,
                     is_admin=False):
    """The uuid of the one active bitstream that loads ``function_id``
    into a region of this type; none or several differing ones refuse.
    Of several rows of the same bytes, one the signature policy of
    ``project_id`` lets through is taken, a verified one first."""
    wanted = normalise_id(function_id, 'accel:function_id')
    region_type = normalise_id(deployable.region_type, 'region_type')
    found = [b for b in bitstreams_db.list_bitstreams(
                 status='active', **_visible(project_id, is_admin))
             if normalise_id(b.function_id, 'function_id') == wanted and
             normalise_id(b.region_type, 'region_type') == region_type]
    if not found:
        raise exception.NoBitstreamForFunction(function_id=function_id,
                                               region_type=region_type)
    # Several rows of the same bytes (re-uploads) are one image.
    if len({b.sha256 for b in found}) > 1:
        raise exception.AmbiguousFunction(
            function_id=function_id, region_type=region_type,
            uuids=', '.join(b.uuid for b in found))
    if len(found) > 1:
        # NOTE: one copy may be signed and another not, or signed with a
        # key revoked since; the job checks the one taken.
        policy, _scope = bitstream_trust.policy_for(project_id)
        status = {uuid: verdict.status for uuid, verdict in
                  bitstream_trust.verdicts(found).items()}
        found.sort(key=lambda b: (
            not signatures.permits(policy, status[b.uuid]),
            status[b.uuid] != signatures.VERIFIED))
    return found[0].uuid


# --- what a profile group asks a region to hold (binds and claims) ---------

def wanted_image(group):
    """{'bitstream_id'|'function_id': wanted} the group asks a region to
    hold, or None when it asks for none."""
    wanted_bs = (group.get('accel:bitstream_id') or '').strip()
    wanted_fn = (group.get('accel:function_id') or '').strip()
    if wanted_bs and wanted_fn:
        raise exception.Invalid(reason='accel:bitstream_id and '
                                'accel:function_id are mutually exclusive')
    if wanted_bs:
        return {'bitstream_id': wanted_bs}
    if wanted_fn:
        return {'function_id': wanted_fn}
    return None


def programming_needed(group, bitstream_id, function_id):
    """{'bitstream_id'|'function_id': wanted} the region lacks, or None."""
    wanted = wanted_image(group)
    if wanted is None:
        return None
    loaded = {'bitstream_id': bitstream_id, 'function_id': function_id}
    [(key, value)] = wanted.items()
    return None if _same_id(value, loaded[key]) else wanted


def _same_id(wanted, loaded):
    # NOTE: AFU / function ids come upper or lower case, with or without
    # dashes, depending on the tool that printed them.
    def norm(value):
        return (value or '').replace('-', '').lower()
    return bool(loaded) and norm(wanted) == norm(loaded)
