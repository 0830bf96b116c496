"""The cleanup between tenants in the API (2.5): deployables show their
device_state, an admin asks for a clean, a deleted bound ARQ leaves its
region to be wiped and a conductor is told."""
import pytest

from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MANAGER_A
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import error_of

V25 = {'OpenStack-API-Version': 'accelerator 2.5'}
V24 = {'OpenStack-API-Version': 'accelerator 2.4'}


def _region(state='available', error=None):
    dep = fx.add_deployable(fx.add_device(hostname='host1'))
    with session.writer() as s:
        row = s.get(models.Deployable, dep.id)
        row.device_state, row.cleaning_error = state, error
    return dep


def _state(dep):
    with session.reader() as s:
        return s.get(models.Deployable, dep.id).device_state


def test_device_state_is_shown_from_2_5(app):
    dep = _region('error', 'nvidia-smi -r: GPU in use')
    path = '/v2/deployables/%s' % dep.uuid
    old = app.get(path, headers=dict(ADMIN, **V24)).json
    assert 'device_state' not in old and 'cleaning_error' not in old
    shown = app.get(path, headers=dict(ADMIN, **V25)).json
    assert (shown['device_state'], shown['cleaning_error']) == \
        ('error', 'nvidia-smi -r: GPU in use')
    [listed] = app.get('/v2/deployables',
                       headers=dict(ADMIN, **V25)).json['deployables']
    assert listed['device_state'] == 'error'


@pytest.mark.parametrize('state', ['error', 'available'])
def test_an_admin_asks_for_a_clean(app, conductor, state):
    dep = _region(state, 'old reason')

    resp = app.post('/v2/deployables/%s/clean' % dep.uuid,
                    headers=dict(ADMIN, **V25), status=202)

    assert (resp.json['device_state'], resp.json['cleaning_error']) == \
        ('pending_cleaning', None)
    assert _state(dep) == 'pending_cleaning'
    # Reserved in every view before it answers, then wiped.
    assert conductor.calls == [
        ('release', 'admin-project', (['host1'], ['host1']))]


@pytest.mark.parametrize('state', ['allocated', 'pending_cleaning',
                                   'cleaning'])
def test_no_clean_of_a_region_in_use_or_already_cleaning(app, conductor,
                                                         state):
    dep = _region(state)
    resp = app.post('/v2/deployables/%s/clean' % dep.uuid,
                    headers=dict(ADMIN, **V25), status=409)
    assert 'is %s' % state in error_of(resp)
    assert _state(dep) == state
    assert conductor.calls == []


@pytest.mark.parametrize('caller,headers,status', [
    ('manager', dict(MANAGER_A, **V25), 403),
    ('member', dict(MEMBER_A, **V25), 403),
    ('admin below 2.5', dict(ADMIN, **V24), 404),
])
def test_clean_is_an_admin_action_of_2_5(app, conductor, caller, headers,
                                         status):
    dep = _region('error')
    app.post('/v2/deployables/%s/clean' % dep.uuid, headers=headers,
             status=status)
    assert _state(dep) == 'error'
    assert conductor.calls == []


def test_clean_refuses_a_body_and_unknown_deployables(app, conductor):
    dep = _region('error')
    resp = app.post('/v2/deployables/%s/clean' % dep.uuid, '{"force": 1}',
                    headers=dict(ADMIN, **V25),
                    content_type='application/json', status=400)
    assert 'takes no body' in error_of(resp)
    missing = '00000000-0000-4000-8000-000000000000'
    app.post('/v2/deployables/%s/clean' % missing,
             headers=dict(ADMIN, **V25), status=404)
    app.post('/v2/deployables/not-a-uuid/clean',
             headers=dict(ADMIN, **V25), status=404)
    assert _state(dep) == 'error'
    assert conductor.calls == []


@pytest.mark.parametrize('by_instance', [False, True])
def test_deleting_a_bound_arq_leaves_its_region_to_be_wiped(
        app, conductor, by_instance):
    fx.create_profile(app, ADMIN)
    [arq] = fx.create_arqs(app, ADMIN).json['arqs']
    dep = _region('allocated')
    handle = fx.add_handle(dep, in_use=True)
    instance = '7e57ab1e-0000-4000-8000-000000000001'
    fx.set_arq(arq['uuid'], state='Bound', attach_handle_id=handle.id,
               deployable_id=dep.id, hostname='host1',
               instance_uuid=instance, device_rp_uuid=dep.rp_uuid)

    if by_instance:
        app.delete('/v2/accelerator_requests?instance=%s' % instance,
                   headers=ADMIN, status=204)
    else:
        app.delete('/v2/accelerator_requests/%s' % arq['uuid'],
                   headers=ADMIN, status=204)

    assert _state(dep) == 'pending_cleaning'
    # Reserved in every view before it answers, then wiped.
    assert conductor.calls == [
        ('release', 'admin-project', (['host1'], ['host1']))]


def test_deleting_an_unbound_arq_tells_no_conductor(app, conductor):
    fx.create_profile(app, ADMIN)
    [arq] = fx.create_arqs(app, ADMIN).json['arqs']
    app.delete('/v2/accelerator_requests/%s' % arq['uuid'], headers=ADMIN,
               status=204)
    assert conductor.calls == []
