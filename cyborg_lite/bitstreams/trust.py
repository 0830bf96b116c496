"""What is trusted about a bitstream, read from the database and decided
by bitstreams/signatures.py: its signature's verdict (signature_status,
signer, key id) and the signature policy of a project.

The API shows the verdict; the conductor ``load``s a Trust before it
creates a job and again before it sends one, decides with it
(bitstreams/checks.check_signature), and gives the agent
``agent_check``'s dict so that the agent verifies the signature again over
the bytes it is about to write. A verdict is worked out on every read, from
the signature and the keys as they are now: a key registered, revoked or
deleted changes every bitstream it signed at once, with no row to update.
"""
import collections

from cyborg_lite.bitstreams import signatures
from cyborg_lite.conf import CONF
from cyborg_lite.db import signature_policies as policies_db
from cyborg_lite.db import trusted_keys as keys_db

# What programming on behalf of a project is checked against: the
# policy, what it is the policy of (words), the signature's Verdict and
# the trusted key it names (None under ``disabled``; the key None too
# when no trusted key is named or found).
Trust = collections.namedtuple('Trust', ['policy', 'scope', 'verdict',
                                         'key'])


def _verdict(bitstream, keys):
    return signatures.evaluate(bitstream.signature, bitstream.sha256, keys,
                               key_id=bitstream.signature_key_id,
                               signed_at=bitstream.signed_at)


def verdicts(bitstreams):
    """{bitstream uuid: Verdict} of several bitstreams (one query for the
    keys of all their projects)."""
    signed = [b for b in bitstreams if b.signature is not None]
    # NOTE: no query for a page of unsigned bitstreams.
    keys = keys_db.trusted_for({b.project_id for b in signed}) \
        if signed else {}
    return {b.uuid: _verdict(b, keys.get(b.project_id, ()))
            for b in bitstreams}


def verdict(bitstream):
    return verdicts([bitstream])[bitstream.uuid]


def policy_for(project_id, conf=CONF):
    """(policy, what it is the policy of) for programming on behalf of
    ``project_id``: the project's override, else the configured one."""
    override = policies_db.get(project_id)
    if override is not None:
        return override.policy, 'project %s' % project_id
    return conf.bitstreams.signature_policy, (
        'this deployment ([bitstreams]signature_policy)')


def load(bitstream, project_id, conf=CONF):
    """The Trust to program ``bitstream`` on behalf of ``project_id``
    with: the policy that applies and, unless it is ``disabled``, the
    signature's verdict as of now and the key it names. ``bitstream``
    None: an image no bitstream is known for (one loaded outside
    cyborg_lite), which is unsigned."""
    policy, scope = policy_for(project_id, conf)
    if policy == signatures.DISABLED:
        return Trust(policy, scope, None, None)
    if bitstream is None:
        return Trust(policy, scope, signatures.Verdict(
            signatures.UNSIGNED, None, None, 'the image was not loaded by '
            'cyborg_lite, so nothing vouches for it'), None)
    keys = keys_db.trusted_for([bitstream.project_id])[bitstream.project_id]
    found = _verdict(bitstream, keys)
    key = next((k for k in keys if found.key_id is not None and
                k.key_id == found.key_id), None)
    return Trust(policy, scope, found, key)


def agent_check(bitstream, trust):
    """What the agent needs to verify the signature over the bytes it
    fetched (crosses RPC, plain JSON): the policy and, for a verdict
    with a known key, the signature and that key's public key. None under
    ``disabled``."""
    if trust.policy == signatures.DISABLED:
        return None
    check = {'policy': trust.policy, 'status': trust.verdict.status}
    key = trust.key
    if key is not None and bitstream.signature is not None:
        check.update(signature=bitstream.signature, key_id=key.key_id,
                     algorithm=key.algorithm, public_key=key.public_key)
    return check
