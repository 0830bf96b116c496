"""Program-on-bind: which bitstream a function means, and the job a
bind's programmer starts (the bind resumes when it ends:
test_bind_resume.py)."""
import pytest

from cyborg_lite.bitstreams import checks as programming_checks
from cyborg_lite.bitstreams import signatures
from cyborg_lite.common import context
from cyborg_lite.common import exception
from cyborg_lite.conductor import programming
from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.db import trusted_keys as keys_db
from tests import signing_keys
from tests.unit.conductor import bind_helpers
from tests.unit.conductor import programming_flow_helpers as h

NEW = 'ab' * 16
NEW_DASHED = 'abababab-abab-abab-abab-abababababab'


def _bitstream(sha='1', **values):
    fields = dict(function_id=NEW, visibility='public', project_id='p1')
    fields.update(values)
    bitstream = h.add_bitstream(uploaded=False, **fields)
    return bitstreams_db.set_uploaded(bitstream.uuid, sha * 64, 10)


def test_function_resolves_to_the_one_fitting_bitstream(db):
    region = h.add_region()
    _bitstream(sha='2', region_type='0' * 32)  # another region type
    _bitstream(sha='3', function_id='cd' * 16)  # another function
    wanted = _bitstream(sha='1')
    assert programming_checks.resolve_function(NEW_DASHED.upper(),
                                            region) == wanted.uuid


def test_same_bytes_twice_is_not_ambiguous(db):
    region = h.add_region()
    first = _bitstream(sha='1')
    _bitstream(sha='1')
    assert programming_checks.resolve_function(NEW, region) == first.uuid


def test_of_the_same_bytes_a_verified_copy_is_taken(db):
    region, key = h.add_region(), signing_keys.new_key()
    keys_db.create(signatures.load_key(signing_keys.public_pem(key)),
                   'lab', None)
    stranger, unsigned, verified = [_bitstream(sha='1') for _ in range(3)]
    # Signed, but by a key nobody trusts: no better than unsigned.
    bitstreams_db.set_signature(stranger.uuid, signatures.encode_signature(
        signatures.sign(signing_keys.new_key(), '1' * 64)[0]))
    bitstreams_db.set_signature(verified.uuid, signatures.encode_signature(
        signatures.sign(key, '1' * 64)[0]))
    assert programming_checks.resolve_function(NEW, region) == verified.uuid


def test_of_the_same_bytes_a_revoked_copy_is_the_last_taken(db, conf):
    conf.set_override('signature_policy', 'warn', group='bitstreams')
    region, key = h.add_region(), signing_keys.new_key()
    trusted = keys_db.create(signatures.load_key(
        signing_keys.public_pem(key)), 'lab', None)
    revoked, unsigned = _bitstream(sha='1'), _bitstream(sha='1')
    bitstreams_db.set_signature(revoked.uuid, signatures.encode_signature(
        signatures.sign(key, '1' * 64)[0]))
    keys_db.revoke(trusted.uuid, 'leaked')
    assert programming_checks.resolve_function(NEW, region) == unsigned.uuid


def test_a_loaded_image_passes_the_check_a_job_of_it_would(db, conf):
    key = signing_keys.new_key()
    keys_db.create(signatures.load_key(signing_keys.public_pem(key)),
                   'lab', None)
    unsigned, verified = _bitstream(sha='1'), _bitstream(sha='2')
    bitstreams_db.set_signature(verified.uuid, signatures.encode_signature(
        signatures.sign(key, '2' * 64)[0]))

    def trusted(bitstream_uuid, function_id=NEW):
        return programming_checks.loaded_image_trusted(
            bitstream_uuid, function_id, 'p1')
    conf.set_override('signature_policy', 'warn', group='bitstreams')
    assert trusted(unsigned.uuid) and trusted(None)
    conf.set_override('signature_policy', 'enforce', group='bitstreams')
    assert trusted(verified.uuid) and trusted(verified.uuid, NEW_DASHED)
    assert not trusted(unsigned.uuid)
    assert not trusted(None)                    # loaded outside cyborg_lite
    assert not trusted('0' * 8 + '-0000-4000-8000-' + '0' * 12)   # gone
    # The region reports another function: reprogrammed since, by
    # something else, whatever bitstream_id the last job recorded.
    assert not trusted(verified.uuid, 'cd' * 16)
    conf.set_override('signature_policy', 'disabled', group='bitstreams')
    assert trusted(None) and trusted(unsigned.uuid)
    # A revoked key's image passes no policy that looks at signatures.
    keys_db.revoke(keys_db.trusted_for([None])[None][0].uuid, 'leaked')
    conf.set_override('signature_policy', 'warn', group='bitstreams')
    assert not trusted(verified.uuid) and trusted(unsigned.uuid)


def test_no_or_several_bitstreams_refused_clearly(db):
    region = h.add_region()
    with pytest.raises(exception.NoBitstreamForFunction, match=NEW):
        programming_checks.resolve_function(NEW, region)
    one, two = _bitstream(sha='1'), _bitstream(sha='2')
    with pytest.raises(exception.AmbiguousFunction) as info:
        programming_checks.resolve_function(NEW, region)
    assert one.uuid in str(info.value) and two.uuid in str(info.value)


def test_private_bitstream_of_another_project_is_not_used(db):
    region = h.add_region()
    _bitstream(visibility='private', project_id='p1')
    with pytest.raises(exception.NoBitstreamForFunction):
        programming_checks.resolve_function(NEW, region, project_id='p2')
    with pytest.raises(exception.NoBitstreamForFunction):
        programming_checks.resolve_function(NEW, region)
    assert programming_checks.resolve_function(NEW, region, project_id='p1')
    assert programming_checks.resolve_function(NEW, region, is_admin=True)


def _programmer(on_job=None):
    flow, agents = h.make_flow(on_job=on_job)
    return programming.BindProgrammer(flow), flow, agents


def test_the_programmer_starts_the_job_linked_to_the_arq_and_returns(db):
    """No wait: the job's end resumes the bind (test_bind_resume.py)."""
    region, arq_uuid = h.add_region(), bind_helpers.make_arq()
    bitstream = _bitstream()
    programmer, _flow, agents = _programmer()
    job_uuid = programmer(context.get_admin_context(), arq_uuid=arq_uuid,
                          deployable_uuid=region.uuid,
                          function_id=NEW_DASHED)
    [job] = jobs_db.list_jobs()
    assert (job.uuid, job.state) == (job_uuid, 'queued')
    assert job.arq_id == bind_helpers.get_arq(arq_uuid).id
    assert agents.sent[0][1]['bitstream']['uuid'] == bitstream.uuid


def test_unknown_arq_refused(db):
    programmer, _flow, agents = _programmer()
    with pytest.raises(exception.ARQNotFound):
        programmer(None, arq_uuid='nope', deployable_uuid='x',
                   bitstream_id='y')
    assert agents.sent == []
