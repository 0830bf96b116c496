"""What Cyborg's own API tests (openstack/cyborg-tempest-plugin,
cyborg_tempest_plugin/tests/api/*_negative.py and test_device.py) expect,
request for request, as its REST client sends them. Where Cyborg answers
500 we answer 400/409 on purpose (docs/api.md lists these), and the test
says so."""
import random
import string
import uuid

import pytest

from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MANAGER_A
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import error_of

ARQS = '/v2/accelerator_requests'
PROFILES = '/v2/device_profiles'
FAKE_GROUP = {'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}


@pytest.mark.parametrize('name', ['', 'fake_dp', '!@#$%^&*()=-[]',
                                  'x' * 300])
def test_arq_for_a_profile_name_that_names_none_is_404(app, name):
    resp = app.post_json(ARQS, {'device_profile_name': name},
                         headers=MEMBER_A, status=404)
    assert 'could not be found' in error_of(resp)


def test_arq_without_a_profile_name_is_400(app):
    # Cyborg: DeviceProfileNameNeeded, a 500.
    resp = app.post_json(ARQS, {}, headers=MEMBER_A, status=400)
    assert 'body.device_profile_name' in error_of(resp)


def test_missing_arq_is_404_to_show_and_to_delete(app):
    missing = str(uuid.uuid4())
    app.get(ARQS + '/' + missing, headers=MEMBER_A, status=404)
    app.delete(ARQS + '?arqs=' + missing, headers=MEMBER_A, status=404)


def test_devices_of_a_type_nobody_has_is_an_empty_list(app):
    fx.add_device(type_='FPGA')
    for query in ({'type': 'fake_type'}, {'vendor': 'fake_vendor'},
                  {'hostname': 'fake_hostname'}):
        body = app.get('/v2/devices', query, headers=MANAGER_A,
                       status=200).json
        assert body == {'devices': []}, query
    assert len(app.get('/v2/devices', {'type': 'FPGA'},
                       headers=MANAGER_A).json['devices']) == 1


def test_missing_device_deployable_attribute_profile_are_404(app):
    missing = str(uuid.uuid4())
    for path in ('/v2/devices/', '/v2/deployables/', '/v2/attributes/',
                 PROFILES + '/'):
        app.get(path + missing, headers=ADMIN, status=404)
    app.delete(PROFILES + '/' + missing, headers=ADMIN, status=404)
    app.delete(PROFILES + '?value=fake_device_name1,fake_device_name2',
               headers=ADMIN, status=404)


def test_deleting_the_profile_with_an_empty_name_is_400(app):
    # The plugin's client sends DELETE /device_profiles/ for it.
    resp = app.delete(PROFILES + '/', headers=ADMIN, status=400)
    assert 'value' in error_of(resp)


def test_a_second_profile_with_the_same_name_is_409(app):
    body = [{'name': 'fpga_same_test', 'groups': [FAKE_GROUP],
             'description': 'null'}]
    app.post_json(PROFILES, body, headers=ADMIN, status=201)
    app.post_json(PROFILES, body, headers=ADMIN, status=409)


def test_a_profile_reusing_a_uuid_is_409_not_cyborgs_500(app):
    body = [{'name': 'fpga_uuid_test', 'groups': [FAKE_GROUP]}]
    created = app.post_json(PROFILES, body, headers=ADMIN, status=201).json
    body[0].update(name='new-fpga', uuid=created['uuid'])
    resp = app.post_json(PROFILES, body, headers=ADMIN, status=409)
    assert created['uuid'] in error_of(resp)


@pytest.mark.parametrize('name', [
    '', ''.join(random.Random(0).sample(
        string.ascii_letters * 10 + string.digits * 10, 256))])
def test_an_empty_or_256_character_profile_name_is_400_not_cyborgs_500(
        app, name):
    body = [{'name': name, 'groups': [FAKE_GROUP], 'description': 'null'}]
    resp = app.post_json(PROFILES, body, headers=ADMIN, status=400)
    assert 'body.0.name' in error_of(resp)
    assert app.get(PROFILES, headers=ADMIN).json['device_profiles'] == []


def test_an_unbound_arq_shows_its_handle_as_cyborg_does(app):
    fx.create_profile(app, ADMIN)
    arq = fx.create_arqs(app, MEMBER_A).json['arqs'][0]
    shown = app.get(ARQS + '/' + arq['uuid'], headers=MEMBER_A).json
    for body in (arq, shown):
        assert (body['attach_handle_type'], body['attach_handle_uuid'],
                body['attach_handle_info']) == ('', None, {})
