"""db/trusted_keys, db/signature_policies and a bitstream's signature, on
SQLite, PostgreSQL and MariaDB; and races for one key, decided by the
database: two revocations held at the conditional UPDATE on PostgreSQL,
two registrations of one key at once."""
import hashlib
import threading

import pytest

from cyborg_lite.bitstreams import signatures
from cyborg_lite.bitstreams import trust as bitstream_trust
from cyborg_lite.common import exception
from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import signature_policies as policies_db
from cyborg_lite.db.sql import pagination
from cyborg_lite.db import trusted_keys as keys_db
from tests import signing_keys as sk
from tests.unit.bitstreams.conftest import add_bitstream
from tests.unit.db.test_races import race


def _info(key=None):
    return signatures.load_key(sk.public_pem(key or sk.new_key()))


def test_keys_global_and_per_project(db):
    global_key = keys_db.create(_info(), 'global')
    mine = keys_db.create(_info(), 'mine', 'p1')
    keys_db.create(_info(), 'theirs', 'p2')
    trusted = keys_db.trusted_for([None, 'p1', 'p3'])
    assert [k.name for k in trusted[None]] == ['global']
    assert [k.name for k in trusted['p1']] == ['global', 'mine']
    assert [k.name for k in trusted['p3']] == ['global']
    seen = keys_db.page_keys('p1', sort_key='name', sort_dir='asc')
    assert [k.name for k in seen] == ['global', 'mine']
    assert len(keys_db.page_keys(pagination.ALL)) == 3
    assert [k.name for k in keys_db.page_keys(None)] == ['global']
    with pytest.raises(exception.TrustedKeyNotFound):
        keys_db.get_visible('p2', mine.uuid)
    assert keys_db.get_visible('p2', global_key.uuid).uuid == \
        global_key.uuid


def test_one_registration_per_key_and_revocation_is_final(db):
    info = _info()
    key = keys_db.create(info, 'lab')
    with pytest.raises(exception.TrustedKeyExists, match='trusted'):
        keys_db.create(info, 'again', 'p1')
    revoked = keys_db.revoke(key.uuid, 'leaked')
    assert revoked.revoked_at is not None
    assert revoked.revocation_reason == 'leaked'
    with pytest.raises(exception.Conflict, match='revoked already'):
        keys_db.revoke(key.uuid)
    with pytest.raises(exception.Conflict, match='record of the revocation'):
        keys_db.delete(key.uuid)
    with pytest.raises(exception.TrustedKeyExists, match='revoked'):
        keys_db.create(info, 'back')
    other = keys_db.create(_info(), 'mistake')
    keys_db.delete(other.uuid)
    with pytest.raises(exception.TrustedKeyNotFound):
        keys_db.delete(other.uuid)


def test_project_policies(db):
    assert policies_db.get('p1') is None and policies_db.get(None) is None
    assert policies_db.set_policy('p1', 'enforce').policy == 'enforce'
    assert policies_db.set_policy('p1', 'disabled').policy == 'disabled'
    assert [(p.project_id, p.policy) for p in policies_db.list_all()] == [
        ('p1', 'disabled')]
    with pytest.raises(exception.Invalid):
        policies_db.set_policy('p1', 'strict')
    policies_db.delete('p1')
    with pytest.raises(exception.NotFound):
        policies_db.delete('p1')


def test_signature_of_an_active_bitstream_only(db):
    queued = add_bitstream(uploaded=False)
    with pytest.raises(exception.Conflict, match='needs one of: active'):
        bitstreams_db.set_signature(queued.uuid, 'c2ln', None)
    active = add_bitstream()
    signed = bitstreams_db.set_signature(active.uuid, 'c2ln', 'a' * 64)
    assert (signed.signature, signed.signature_key_id) == ('c2ln', 'a' * 64)
    assert signed.signed_at is not None
    cleared = bitstreams_db.set_signature(active.uuid, None)
    assert (cleared.signature, cleared.signed_at) == (None, None)


def test_the_trust_of_a_job_follows_the_keys_now(db, conf):
    key = sk.new_key()
    image = b'image'
    bitstream = add_bitstream(project_id='p1')
    with bitstreams_db.session.writer() as s:
        s.get(type(bitstream), bitstream.id).sha256 = \
            hashlib.sha256(image).hexdigest()
    bitstream = bitstreams_db.set_signature(bitstream.uuid,
                                            sk.sign(key, image))
    conf.set_override('signature_policy', 'enforce', group='bitstreams')
    # No key at all, then one of another project's.
    assert bitstream_trust.load(bitstream, 'p1').verdict.status == \
        'untrusted_key'
    keys_db.create(_info(), 'p2 key', 'p2')
    assert bitstream_trust.load(bitstream, 'p1').verdict.status == \
        'untrusted_key'
    trusted = keys_db.create(_info(key), 'p1 key', 'p1')
    trust = bitstream_trust.load(bitstream, 'p1')
    assert (trust.verdict.status, trust.key.uuid) == ('verified',
                                                      trusted.uuid)
    check = bitstream_trust.agent_check(bitstream, trust)
    assert check == {'policy': 'enforce', 'status': 'verified',
                     'signature': bitstream.signature,
                     'key_id': trusted.key_id, 'algorithm': 'ed25519',
                     'public_key': trusted.public_key}
    keys_db.revoke(trusted.uuid)
    assert bitstream_trust.load(bitstream, 'p1').verdict.status == \
        'revoked_key'
    policies_db.set_policy('p2', 'disabled')
    open_ = bitstream_trust.load(bitstream, 'p2')
    assert (open_.policy, open_.verdict) == ('disabled', None)
    assert bitstream_trust.agent_check(bitstream, open_) is None


@pytest.mark.postgresql
def test_two_revocations_have_one_winner(pg_db, monkeypatch):
    key = keys_db.create(_info(), 'lab')
    first, second = race(monkeypatch, 'trusted_keys',
                         lambda: keys_db.revoke(key.uuid, 'one'),
                         lambda: keys_db.revoke(key.uuid, 'two'))
    won = [r for r in (first, second) if not isinstance(r, Exception)]
    lost = [r for r in (first, second) if isinstance(r, Exception)]
    assert len(won) == 1 and len(lost) == 1, (first, second)
    assert isinstance(lost[0], exception.Conflict)
    [row] = keys_db.page_keys(pagination.ALL)
    assert row.revocation_reason == won[0].revocation_reason


def test_two_registrations_of_one_key_have_one_winner(db):
    info = _info()
    barrier = threading.Barrier(2, timeout=30)
    results = []

    def register(name):
        barrier.wait()
        try:
            results.append(keys_db.create(info, name))
        except exception.CyborgLiteException as exc:
            results.append(exc)
    threads = [threading.Thread(target=register, args=(n,))
               for n in ('a', 'b')]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(type(r).__name__ for r in results) == [
        'TrustedKey', 'TrustedKeyExists']
    assert len(keys_db.page_keys(pagination.ALL)) == 1
