"""/v2/accelerator_requests: create, list, show, delete, and the PATCH
validation. The RPC a valid PATCH sends is checked here against a
recording stand-in (conftest.RecordingConductor); test_arq_bind_rpc.py
runs the real conductor."""
import uuid

import pytest
import sqlalchemy as sa

from cyborg_lite.db import models
from cyborg_lite.db.sql import session
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import error_of

PATH = '/v2/accelerator_requests'
INSTANCE = '8f1e3b52-6d1c-4a3e-9a63-0f1f2c3d4e5f'
RP = 'a1b2c3d4-0000-4000-8000-000000000001'


def _bind_ops(host='h1', rp=RP, instance=INSTANCE):
    return [{'op': 'add', 'path': '/hostname', 'value': host},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': rp},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]


UNBIND = [{'op': 'remove', 'path': '/hostname'},
          {'op': 'remove', 'path': '/device_rp_uuid'},
          {'op': 'remove', 'path': '/instance_uuid'}]


@pytest.fixture
def arq(app):
    fx.create_profile(app, ADMIN)
    return fx.create_arqs(app, MEMBER_A).json['arqs'][0]


def test_one_arq_per_requested_accelerator(app):
    groups = [{'resources:FPGA': '2'}, {'resources:GPU': '1',
                                        'resources:CUSTOM_NIC': '1'}]
    fx.create_profile(app, ADMIN, groups=groups)
    arqs = fx.create_arqs(app, MEMBER_A).json['arqs']
    assert sorted(a['device_profile_group_id'] for a in arqs) == [0, 0, 1, 1]
    assert {a['state'] for a in arqs} == {'Initial'}
    assert {a['device_profile_name'] for a in arqs} == {'dp1'}


def test_memory_size_in_a_group_makes_no_extra_arqs(app):
    group = {'resources:FPGA': '1',
             'resources:CUSTOM_FPGA_LOCAL_MEMORY_MB': '4096'}
    fx.create_profile(app, ADMIN, name='mem', groups=[group])
    arqs = app.post_json('/v2/accelerator_requests',
                         {'device_profile_name': 'mem'}, headers=ADMIN,
                         status=201).json['arqs']
    assert len(arqs) == 1


def test_create_for_one_group(app):
    fx.create_profile(app, ADMIN, groups=[{'resources:FPGA': '2'},
                                          {'resources:GPU': '1'}])
    body = {'device_profile_name': 'dp1', 'device_profile_group_id': 1,
            'image_uuid': None}
    arqs = app.post_json(PATH, body, headers=ADMIN, status=201).json['arqs']
    assert [a['device_profile_group_id'] for a in arqs] == [1]
    body['device_profile_group_id'] = 2
    resp = app.post_json(PATH, body, headers=ADMIN, status=400)
    assert 'device_profile_group_id' in error_of(resp)
    with session.reader() as s:
        assert s.scalar(sa.select(sa.func.count()).select_from(
            models.AcceleratorRequest)) == 1


def test_creation_is_a_lookup_and_an_insert(app):
    """On SQLite the profile's lookup and the ARQs' INSERT are sent as
    they are, each its own transaction (no BEGIN, no COMMIT: each a GIL
    hand-over; db/arqs.create_arqs says why that is safe)."""
    fx.create_profile(app, ADMIN)
    engine = session.get_engine()
    begun, sent = [], []

    def on_begin(conn):
        begun.append(conn)

    sa.event.listen(engine, 'begin', on_begin)
    with session.statement_writer() as conn:
        sqlite = conn.connection.driver_connection
    sqlite.set_trace_callback(sent.append)
    try:
        fx.create_arqs(app, MEMBER_A)
    finally:
        sqlite.set_trace_callback(None)
        sa.event.remove(engine, 'begin', on_begin)
    assert begun == []
    assert [s.split()[0] for s in sent] == ['SELECT', 'INSERT']


def test_create_errors(app):
    resp = fx.create_arqs(app, ADMIN, name='nope', status=404)
    assert 'nope' in error_of(resp)
    fx.create_profile(app, ADMIN)
    resp = app.post_json(PATH, {'device_profile_name': 'dp1',
                                'image_uuid': str(uuid.uuid4())},
                         headers=ADMIN, status=400)
    assert 'image_uuid' in error_of(resp)


def test_project_id_shown_from_2_1(app, arq):
    path = '%s/%s' % (PATH, arq['uuid'])
    assert 'project_id' not in app.get(path, headers=MEMBER_A).json
    v21 = dict(MEMBER_A, **{'OpenStack-API-Version': 'accelerator 2.1'})
    assert app.get(path, headers=v21).json['project_id'] == 'project-a'


def test_list_by_instance_and_bind_state(app, arq):
    other = fx.create_arqs(app, MEMBER_A).json['arqs'][0]
    fx.set_arq(arq['uuid'], state='BindStarted', instance_uuid=INSTANCE)
    listed = app.get(PATH, {'instance': INSTANCE}, headers=MEMBER_A).json
    assert [a['uuid'] for a in listed['arqs']] == [arq['uuid']]
    resp = app.get(PATH, {'instance': INSTANCE, 'bind_state': 'resolved'},
                   headers=MEMBER_A, status=423)
    assert arq['uuid'] in error_of(resp)
    fx.set_arq(arq['uuid'], state='Bound')
    resolved = app.get(PATH, {'instance': INSTANCE,
                              'bind_state': 'resolved'}, headers=MEMBER_A)
    assert [a['state'] for a in resolved.json['arqs']] == ['Bound']
    all_resolved = app.get(PATH, {'bind_state': 'resolved'},
                           headers=MEMBER_A).json['arqs']
    assert other['uuid'] not in [a['uuid'] for a in all_resolved]
    app.get(PATH, {'bind_state': 'bound'}, headers=MEMBER_A, status=400)


def test_attach_handle_is_shown(app, arq):
    handle = fx.add_handle(fx.add_deployable(fx.add_device()))
    with session.writer() as s:
        s.query(models.AcceleratorRequest).filter_by(
            uuid=arq['uuid']).update({'attach_handle_id': handle.id,
                                      'state': 'Bound'})
    shown = app.get('%s/%s' % (PATH, arq['uuid']), headers=MEMBER_A).json
    assert shown['attach_handle_type'] == 'PCI'
    assert shown['attach_handle_info']['bus'] == '5e'


def test_delete_by_uuids_frees_the_attach_handle(app, arq):
    handle = fx.add_handle(fx.add_deployable(fx.add_device()), in_use=True)
    fx.set_arq(arq['uuid'], state='Bound', attach_handle_id=handle.id)
    app.delete('%s?arqs=%s' % (PATH, arq['uuid']), headers=MEMBER_A,
               status=204)
    app.get('%s/%s' % (PATH, arq['uuid']), headers=MEMBER_A, status=404)
    with session.reader() as s:
        assert s.get(models.AttachHandle, handle.id).in_use is False


def test_delete_by_uuids_is_all_or_nothing(app, arq):
    missing = str(uuid.uuid4())
    app.delete('%s?arqs=%s,%s' % (PATH, arq['uuid'], missing),
               headers=MEMBER_A, status=404)
    app.get('%s/%s' % (PATH, arq['uuid']), headers=MEMBER_A, status=200)


def test_delete_refuses_a_bind_in_flight(app, arq):
    fx.set_arq(arq['uuid'], state='BindStarted')
    resp = app.delete('%s?arqs=%s' % (PATH, arq['uuid']), headers=MEMBER_A,
                      status=409)
    assert 'BindStarted' in error_of(resp)


def test_delete_by_instance_is_idempotent(app, arq):
    fx.set_arq(arq['uuid'], instance_uuid=INSTANCE, state='Bound')
    for _ in range(2):
        app.delete('%s?instance=%s' % (PATH, INSTANCE), headers=MEMBER_A,
                   status=204)
    app.get('%s/%s' % (PATH, arq['uuid']), headers=MEMBER_A, status=404)


@pytest.mark.parametrize('query', ['', '?arqs=%s&instance=%s' % (RP, RP),
                                   '?arqs=x', '?instance=y'])
def test_delete_needs_exactly_one_valid_form(app, query):
    resp = app.delete(PATH + query, headers=ADMIN, status=400)
    assert error_of(resp).startswith('Invalid value for query')


def test_bind_sends_the_bindings_to_the_conductor(app, arq, conductor):
    # A member's request, as Nova sends it on with its service token
    # (a member alone: test_bind_scope.py).
    app.patch_json(PATH, {arq['uuid']: _bind_ops()}, headers=dict(
        MEMBER_A, **{'X-Service-Roles': 'service'}), status=202)
    assert conductor.calls == [('bind_arqs', 'project-a', {arq['uuid']: {
        'hostname': 'h1', 'device_rp_uuid': RP, 'instance_uuid': INSTANCE}})]


def test_unbind_is_done_before_it_answers(app, arq, conductor):
    fx.set_arq(arq['uuid'], state='Bound', instance_uuid=INSTANCE)
    app.patch_json(PATH, {arq['uuid']: UNBIND}, headers=MEMBER_A,
                   status=202)
    shown = app.get('%s/%s' % (PATH, arq['uuid']), headers=MEMBER_A).json
    assert (shown['state'], shown['instance_uuid']) == ('Unbound', None)
    # No region was held: nothing to publish or to wipe.
    assert conductor.calls == []


def test_admin_may_set_project_id_from_2_1(app, arq, conductor):
    ops = _bind_ops() + [{'op': 'add', 'path': '/project_id',
                          'value': 'project-c'}]
    app.patch_json(PATH, {arq['uuid']: ops}, headers=ADMIN, status=406)
    v21 = {'OpenStack-API-Version': 'accelerator 2.1'}
    app.patch_json(PATH, {arq['uuid']: ops}, headers=dict(MEMBER_A, **v21),
                   status=403)
    app.patch_json(PATH, {arq['uuid']: ops}, headers=dict(ADMIN, **v21),
                   status=202)
    assert conductor.calls[0][2][arq['uuid']]['project_id'] == 'project-c'


@pytest.mark.parametrize('ops,field', [
    (_bind_ops()[:2], 'body.%s'),
    (_bind_ops() + [{'op': 'remove', 'path': '/hostname'}], 'body.%s'),
    (_bind_ops() + [_bind_ops()[0]], 'body.%s'),
    ([{'op': 'replace', 'path': '/hostname', 'value': 'h'}], 'body.%s.0.op'),
    ([{'op': 'add', 'path': '/state', 'value': 'Bound'}], 'body.%s.0.path'),
    ([{'op': 'add', 'path': '/hostname'}], 'body.%s.0'),
    (_bind_ops(rp='not-a-uuid'), 'body.%s./device_rp_uuid'),
    (_bind_ops(instance='x'), 'body.%s./instance_uuid'),
    ([], 'body.%s'),
    ('not a list', 'body.%s'),
])
def test_malformed_patches_are_400(app, arq, conductor, ops, field):
    resp = app.patch_json(PATH, {arq['uuid']: ops}, headers=MEMBER_A,
                          status=400)
    assert error_of(resp).startswith(
        'Invalid value for %s' % (field % arq['uuid']))
    assert conductor.calls == []


def test_patch_keys_must_be_arq_uuids(app, conductor):
    resp = app.patch_json(PATH, {'nope': UNBIND}, headers=ADMIN, status=400)
    assert 'body' in error_of(resp)
    app.patch_json(PATH, {str(uuid.uuid4()): UNBIND}, headers=ADMIN,
                   status=404)
    assert conductor.calls == []


def test_bind_and_unbind_together_is_400(app, arq):
    second = fx.create_arqs(app, MEMBER_A).json['arqs'][0]
    body = {arq['uuid']: _bind_ops(), second['uuid']: UNBIND}
    resp = app.patch_json(PATH, body, headers=MEMBER_A, status=400)
    assert 'bind and unbind' in error_of(resp)


@pytest.mark.parametrize('state,body_ops', [
    ('Bound', _bind_ops()), ('BindStarted', _bind_ops()),
    ('Deleting', UNBIND), ('UnbindFailed', UNBIND)])
def test_patch_in_the_wrong_state_is_409(app, arq, conductor, state,
                                         body_ops):
    fx.set_arq(arq['uuid'], state=state)
    resp = app.patch_json(PATH, {arq['uuid']: body_ops}, headers=MEMBER_A,
                          status=409)
    assert state in error_of(resp)
    assert conductor.calls == []


def test_bind_to_an_instance_that_has_arqs_is_409(app, arq, conductor):
    other = fx.create_arqs(app, MEMBER_A).json['arqs'][0]
    fx.set_arq(other['uuid'], instance_uuid=INSTANCE, state='Bound')
    resp = app.patch_json(PATH, {arq['uuid']: _bind_ops()},
                          headers=MEMBER_A, status=409)
    assert INSTANCE in error_of(resp)
    assert conductor.calls == []
