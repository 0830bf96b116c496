"""/v2/device_profiles: create, validation, show, list, delete."""
import pytest

from tests.functional.api import bitstream_helpers as bh
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import MEMBER_B
from tests.functional.api.conftest import error_of

V22 = dict(ADMIN, **{'OpenStack-API-Version': 'accelerator 2.2'})


def test_create_show_by_uuid_and_name(app):
    created = fx.create_profile(app, ADMIN).json
    assert created['name'] == 'dp1' and created['project_id'] is None
    assert created['groups'] == [fx.GROUP]
    by_uuid = app.get('/v2/device_profiles/%s' % created['uuid'],
                      headers=ADMIN).json
    assert by_uuid == {'device_profile': created}
    by_name = app.get('/v2/device_profiles/dp1', headers=V22).json
    assert by_name['device_profile']['uuid'] == created['uuid']


def test_show_by_name_needs_2_2(app):
    fx.create_profile(app, ADMIN)
    resp = app.get('/v2/device_profiles/dp1', headers=ADMIN, status=406)
    assert '2.2' in error_of(resp)


def test_create_normalises_spaces_and_counts(app):
    group = {'resources: FPGA': 2, 'trait: CUSTOM_X ': 'required',
             'accel:function_id': 'abc', 'accel:custom_key': 'v'}
    created = fx.create_profile(app, ADMIN, groups=[group]).json
    assert created['groups'] == [{'resources:FPGA': '2',
                                  'trait:CUSTOM_X': 'required',
                                  'accel:function_id': 'abc',
                                  'accel:custom_key': 'v'}]


def test_create_with_given_uuid_and_description(app):
    uuid = '5d6a8f0e-6a47-4b5b-9c50-1a2b3c4d5e6f'
    body = [{'name': 'x', 'uuid': uuid, 'description': 'd',
             'groups': [fx.GROUP]}]
    assert app.post_json('/v2/device_profiles', body, headers=ADMIN,
                         status=201).json['uuid'] == uuid
    body[0]['name'] = 'y'
    resp = app.post_json('/v2/device_profiles', body, headers=ADMIN,
                         status=409)
    assert uuid in error_of(resp)


@pytest.mark.parametrize('body,field', [
    ({'name': 'x', 'groups': [fx.GROUP]}, 'body'),  # not a list
    ([], 'body'),
    ([{'name': 'a', 'groups': [fx.GROUP]}] * 2, 'body'),
    ([{'groups': [fx.GROUP]}], 'body.0.name'),
    ([{'name': 'bad name', 'groups': [fx.GROUP]}], 'body.0.name'),
    ([{'name': 'x'}], 'body.0.groups'),
    ([{'name': 'x', 'groups': []}], 'body.0.groups'),
    ([{'name': 'x', 'groups': [{}]}], 'body.0.groups.0'),
    ([{'name': 'x', 'groups': [{'color': 'red'}]}], 'body.0.groups.0'),
    ([{'name': 'x', 'groups': [{'resources:FPGA': '0'}]}],
     'body.0.groups.0.resources:FPGA'),
    ([{'name': 'x', 'groups': [{'resources:FPGA': -1}]}],
     'body.0.groups.0.resources:FPGA'),
    ([{'name': 'x', 'groups': [{'resources:DISK_GB': '1'}]}],
     'body.0.groups.0'),
    ([{'name': 'x', 'groups': [{'resources:FPGA': '1',
                                'trait:HW_CPU_X86_AVX': 'required'}]}],
     'body.0.groups.0'),
    ([{'name': 'x', 'groups': [{'resources:FPGA': '1',
                                'trait:CUSTOM_A': 'maybe'}]}],
     'body.0.groups.0.trait:CUSTOM_A'),
    ([{'name': 'x', 'groups': [{'resources:FPGA': '1',
                                'accel:bitstream_id': 'not-a-uuid'}]}],
     'body.0.groups.0.accel:bitstream_id'),
    ([{'name': 'x', 'groups': [{'resources:FPGA': '1',
                                'accel:bitstream_id':
                                '5d6a8f0e-6a47-4b5b-9c50-1a2b3c4d5e6f',
                                'accel:function_id': 'f'}]}],
     'body.0.groups.0'),
    ([{'name': 'x', 'groups': [{'trait:CUSTOM_A': 'required'}]}],
     'body.0.groups.0'),
    ([{'name': 'x', 'groups': [fx.GROUP], 'extra': 1}], 'body.0.extra'),
    ([{'name': 'x', 'groups': [{'resources:CUSTOM_FPGA_LOCAL_MEMORY_MB':
                                '4096'}]}], 'body.0.groups.0'),
    ([{'name': 'x', 'groups': [{'resources:FPGA': '129'}]}],
     'body.0.groups.0'),
    ([{'name': 'x', 'groups': [{'resources:FPGA': '1',
                                'resources:CUSTOM_FPGA_LOCAL_MEMORY_MB':
                                '99999999999'}]}],
     'body.0.groups.0.resources:CUSTOM_FPGA_LOCAL_MEMORY_MB'),
])
def test_invalid_profiles_are_400_naming_the_field(app, body, field):
    resp = app.post_json('/v2/device_profiles', body, headers=ADMIN,
                         status=400)
    message = error_of(resp)
    assert message.startswith('Invalid value for %s' % field), message


def test_duplicate_name_is_409(app):
    fx.create_profile(app, ADMIN)
    resp = fx.create_profile(app, ADMIN, status=409)
    assert 'dp1' in error_of(resp)


def test_list_filters_by_names(app):
    for name in ('a', 'b', 'c'):
        fx.create_profile(app, ADMIN, name=name)
    body = app.get('/v2/device_profiles', {'name': 'a,c'},
                   headers=ADMIN).json
    assert sorted(p['name'] for p in body['device_profiles']) == ['a', 'c']


def test_delete_by_uuid_name_and_value_list(app):
    uuid = fx.create_profile(app, ADMIN, name='a').json['uuid']
    for name in ('b', 'c', 'd'):
        fx.create_profile(app, ADMIN, name=name)
    app.delete('/v2/device_profiles/%s' % uuid, headers=ADMIN, status=204)
    app.delete('/v2/device_profiles/b', headers=ADMIN, status=204)
    app.delete('/v2/device_profiles?value=c,d', headers=ADMIN, status=204)
    assert app.get('/v2/device_profiles',
                   headers=ADMIN).json['device_profiles'] == []
    app.delete('/v2/device_profiles/%s' % uuid, headers=ADMIN, status=404)


def test_delete_of_a_list_is_all_or_nothing(app):
    fx.create_profile(app, ADMIN, name='a')
    app.delete('/v2/device_profiles?value=a,missing', headers=ADMIN,
               status=404)
    assert len(app.get('/v2/device_profiles',
                       headers=ADMIN).json['device_profiles']) == 1


def test_delete_without_names_is_400(app):
    resp = app.delete('/v2/device_profiles', headers=ADMIN, status=400)
    assert 'value' in error_of(resp)


def test_profile_in_use_cannot_be_deleted(pg_app):
    fx.create_profile(pg_app, ADMIN)
    fx.create_arqs(pg_app, ADMIN)
    resp = pg_app.delete('/v2/device_profiles/dp1', headers=ADMIN,
                         status=409)
    assert 'accelerator request' in error_of(resp)


# --- accel:bitstream_id: a bitstream the profile's users may load --------

def _bitstream_group(bitstream_uuid):
    return {'resources:FPGA': '1', 'accel:bitstream_id': bitstream_uuid}


def test_a_bitstream_the_profiles_project_cannot_see_is_refused_as_missing(
        app):
    private_a = bh.create(app, MEMBER_A).json['uuid']
    missing = '5d6a8f0e-6a47-4b5b-9c50-1a2b3c4d5e6f'
    answers = []
    for bitstream in (private_a, missing):
        resp = fx.create_profile(app, MEMBER_B, name='b',
                                 groups=[_bitstream_group(bitstream)],
                                 status=404)
        answers.append(error_of(resp).replace(bitstream, '<uuid>'))
    assert answers[0] == answers[1] == 'Bitstream <uuid> could not be found.'
    # An admin's profile is public: every project uses it, so it may name
    # only a public bitstream.
    fx.create_profile(app, ADMIN, name='pub',
                      groups=[_bitstream_group(private_a)], status=404)
    assert app.get('/v2/device_profiles', headers=ADMIN).json[
        'device_profiles'] == []


def test_own_and_public_bitstreams_may_be_named(app):
    private_a = bh.create(app, MEMBER_A).json['uuid']
    public = bh.create(app, ADMIN, visibility='public').json['uuid']
    fx.create_profile(app, MEMBER_A, name='own',
                      groups=[_bitstream_group(private_a.upper())])
    fx.create_profile(app, MEMBER_B, name='pub_b',
                      groups=[_bitstream_group(public)])
    created = fx.create_profile(app, ADMIN, name='pub',
                                groups=[_bitstream_group(public)]).json
    assert created['groups'][0]['accel:bitstream_id'] == public
    own = app.get('/v2/device_profiles?name=own', headers=MEMBER_A).json
    # Stored as the bind looks it up: lower case.
    assert own['device_profiles'][0]['groups'][0][
        'accel:bitstream_id'] == private_a


# A member's token without a project (the noauth default has none).
MEMBER_OF_NO_PROJECT = {'X-Roles': 'member,reader', 'X-User-Id': 'nobody'}


@pytest.mark.parametrize('how', ['uuid', 'name'])
def test_a_caller_of_no_project_deletes_no_public_profile(app, how):
    """A public profile has no project and neither has the caller: that
    is no match ('project_id:%(project_id)s' never compares None with
    None), so only an admin may delete it."""
    public = fx.create_profile(app, ADMIN).json
    path = ('/v2/device_profiles/%s' % public['uuid'] if how == 'uuid'
            else '/v2/device_profiles?value=%s' % public['name'])

    resp = app.delete(path, headers=MEMBER_OF_NO_PROJECT, status=403)

    assert 'cyborg:device_profile:delete' in error_of(resp)
    assert app.get('/v2/device_profiles/%s' % public['uuid'],
                   headers=ADMIN).json['device_profile'] == public
