"""db/k8s_claims.py on SQLite, PostgreSQL and MariaDB: a claim holds a
region as a Bound ARQ does (its device_state included), a claim may hold
several regions, and its release frees all of them for their wipe."""
import pytest
import sqlalchemy as sa

from cyborg_lite.common import exception
from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import k8s_claims
from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.unit.conductor import bind_helpers as h

CLAIM_UID = '0c1a1a00-0000-4000-8000-00000000000b'


def _claim(region, device_name):
    return k8s_claims.claim(region['deployable_id'], CLAIM_UID, 'ns',
                            'claim', device_name)


def _device_states(*regions):
    with session.reader() as s:
        return [s.get(models.Deployable, r['deployable_id']).device_state
                for r in regions]


def _held():
    """{deployable id: attach handle id} the claim holds."""
    claim = models.KubernetesClaimDevice
    with session.reader() as s:
        return dict(s.execute(
            sa.select(claim.deployable_id, claim.attach_handle_id)
            .where(claim.claim_uid == CLAIM_UID)).all())


def test_a_claim_allocates_its_region_and_its_release_dirties_it(db):
    region = h.make_region()
    _claim(region, 'fpga-region0')
    assert _device_states(region) == ['allocated']
    assert k8s_claims.release(CLAIM_UID) == {'host1'}
    assert _device_states(region) == ['pending_cleaning']


def test_one_claim_holds_two_regions_and_frees_both(db):
    region0, region1 = h.make_region(), h.make_region()
    first = _claim(region0, 'fpga-region0')
    second = _claim(region1, 'fpga-region1')
    assert first.new and second.new and first.id != second.id
    assert _held() == {
        region0['deployable_id']: h.handles_of(region0)[0].id,
        region1['deployable_id']: h.handles_of(region1)[0].id}
    # The kubelet asks again: each device gets its own row back.
    again = _claim(region1, 'fpga-region1')
    assert (again.new, again.id) == (False, second.id)
    assert _device_states(region0, region1) == ['allocated'] * 2

    assert k8s_claims.release(CLAIM_UID) == {'host1'}

    assert _held() == {}
    assert not any(handle.in_use for handle in
                   h.handles_of(region0) + h.handles_of(region1))
    assert _device_states(region0, region1) == ['pending_cleaning'] * 2


def test_a_claim_on_a_device_in_maintenance_is_refused_and_holds_nothing(db):
    """The availability decision is the claim's own (the same as a
    bind's, inventory/views.region_refusal, under the locks): whoever
    calls it gets the refusal with the reason."""
    region, = h.make_card(regions=1)
    devices_db.set_status(region['device_uuid'], 'maintaining')
    with pytest.raises(exception.ClaimRefused) as refused:
        _claim(region, 'fpga-region0')
    assert '[maintaining]' in str(refused.value)
    assert _held() == {}
    assert _device_states(region) == ['available']

    devices_db.set_status(region['device_uuid'], 'enabled')
    assert _claim(region, 'fpga-region0').new
