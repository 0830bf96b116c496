"""A project member's bind disturbs no other project: it binds only to a
provider its instance holds in the real Placement (Nova claims it before
it binds), in the ARQ's project; and an ARQ of another project naming an
instance does not stop Nova binding that instance's own ARQs. A refusal
is Cyborg's JSON error body with the right status, and changes nothing.

The API's full WSGI stack (identity headers, as in the other API tests),
the real openstack-placement, its allocations written as Nova's
conductor claims them (PUT /allocations/{instance}).
"""
import uuid

import pytest
import requests

from cyborg_lite.cmd import placement_server
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import MEMBER_A
from tests.functional.api.conftest import MEMBER_B
from tests.functional.api.conftest import error_of
from tests.functional.placement.conftest import configure_placement

ARQS = '/v2/accelerator_requests'
PLACEMENT = {'X-Auth-Token': placement_server.TOKEN,
             'OpenStack-API-Version': 'placement 1.39'}
# Nova's service user; and a member's token with Nova's service token
# beside it, as Nova sends a user's request on ([service_user]).
NOVA = {'X-Roles': 'service', 'X-Project-Id': 'service-project',
        'X-User-Id': 'nova'}
MEMBER_A_VIA_NOVA = dict(MEMBER_A, **{'X-Service-Roles': 'service'})


@pytest.fixture
def configured(api_conf, placement):  # noqa: F811
    configure_placement(api_conf, placement.endpoint)
    return placement


def _provider(placement, total=1):  # noqa: F811
    """A provider of ``total`` FPGAs, as the conductor reports one."""
    rp_uuid = str(uuid.uuid4())
    resp = requests.put(placement.endpoint +
                        '/resource_classes/CUSTOM_FPGA_LOCAL_MEMORY_MB',
                        headers=PLACEMENT, timeout=30)
    assert resp.status_code in (201, 204), resp.text
    resp = requests.post(placement.endpoint + '/resource_providers',
                         headers=PLACEMENT, timeout=30, json={
                             'uuid': rp_uuid, 'name': 'region-' + rp_uuid})
    assert resp.status_code == 200, resp.text
    resp = requests.put(
        '%s/resource_providers/%s/inventories' % (placement.endpoint,
                                                   rp_uuid),
        headers=PLACEMENT, timeout=30, json={
            'resource_provider_generation': 0,
            'inventories': {'FPGA': {'total': total},
                            'CUSTOM_FPGA_LOCAL_MEMORY_MB': {'total': 4096}}})
    assert resp.status_code == 200, resp.text
    return rp_uuid


def _claim(placement, instance, rp_uuid, project_id):  # noqa: F811
    """Nova's claim of the instance's allocation."""
    resp = requests.put(
        '%s/allocations/%s' % (placement.endpoint, instance),
        headers=PLACEMENT, timeout=30, json={
            'allocations': {rp_uuid: {'resources': {
                'FPGA': 1, 'CUSTOM_FPGA_LOCAL_MEMORY_MB': 4096}}},
            'project_id': project_id, 'user_id': 'u1',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    assert resp.status_code == 204, resp.text


def _arq(app, member):
    fx.create_profile(app, ADMIN, name='fpga-%s' % uuid.uuid4().hex[:6])
    name = app.get('/v2/device_profiles', headers=ADMIN).json[
        'device_profiles'][-1]['name']
    return fx.create_arqs(app, member, name=name).json['arqs'][0]['uuid']


def _bind(app, arq, instance, rp_uuid, headers, status):
    ops = [{'op': 'add', 'path': '/hostname', 'value': 'compute1'},
           {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
           {'op': 'add', 'path': '/instance_uuid', 'value': instance}]
    return app.patch_json(ARQS, {arq: ops}, headers=headers, status=status)


def _untouched(app, arq, conductor):
    shown = app.get('%s/%s' % (ARQS, arq), headers=ADMIN).json
    assert (shown['state'], shown['instance_uuid']) == ('Initial', None)
    assert conductor.calls == []


def test_a_member_binds_to_the_provider_its_instance_holds(
        app, conductor, configured):
    rp_uuid, instance = _provider(configured), str(uuid.uuid4())
    _claim(configured, instance, rp_uuid, 'project-a')
    arq = _arq(app, MEMBER_A)

    _bind(app, arq, instance, rp_uuid, MEMBER_A, 202)

    assert conductor.calls == [('bind_arqs', 'project-a', {arq: {
        'hostname': 'compute1', 'device_rp_uuid': rp_uuid,
        'instance_uuid': instance}})]


def test_a_member_cannot_take_capacity_placement_still_offers(
        app, conductor, configured):
    offered, instance = _provider(configured), str(uuid.uuid4())
    held = _provider(configured)
    _claim(configured, instance, held, 'project-a')
    arq = _arq(app, MEMBER_A)

    resp = _bind(app, arq, instance, offered, MEMBER_A, 403)

    assert ('Instance %s holds 0 accelerator(s) on resource provider %s'
            % (instance, offered)) in error_of(resp)
    _untouched(app, arq, conductor)
    # Nor with an instance Placement has never heard of.
    _bind(app, arq, str(uuid.uuid4()), held, MEMBER_A, 403)
    _untouched(app, arq, conductor)


def test_a_member_binds_no_more_arqs_to_a_provider_than_it_holds(
        app, conductor, configured):
    """The instance holds one accelerator of a provider offering two:
    one of its ARQs may be bound there, not two."""
    rp_uuid, instance = _provider(configured, total=2), str(uuid.uuid4())
    _claim(configured, instance, rp_uuid, 'project-a')
    first, second = _arq(app, MEMBER_A), _arq(app, MEMBER_A)
    ops = [{'op': 'add', 'path': '/hostname', 'value': 'compute1'},
           {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
           {'op': 'add', 'path': '/instance_uuid', 'value': instance}]

    resp = app.patch_json(ARQS, {first: ops, second: ops}, headers=MEMBER_A,
                          status=403)

    assert 'holds 1 accelerator(s)' in error_of(resp)
    assert 'and 2 ARQ(s) are bound to them' in error_of(resp)
    _untouched(app, first, conductor)
    _untouched(app, second, conductor)


def test_a_member_cannot_bind_to_another_projects_instance(
        app, conductor, configured):
    rp_uuid, theirs = _provider(configured), str(uuid.uuid4())
    _claim(configured, theirs, rp_uuid, 'project-a')
    arq = _arq(app, MEMBER_B)

    resp = _bind(app, arq, theirs, rp_uuid, MEMBER_B, 403)

    assert 'for project project-b' in error_of(resp)
    _untouched(app, arq, conductor)


def test_nova_binds_what_it_claimed_and_a_service_token_counts(
        app, conductor, configured):
    """Nova (the service role, or a member's token with Nova's service
    token beside it) binds whatever provider it names: it claimed it."""
    rp_uuid = _provider(configured)
    first, second = _arq(app, MEMBER_A), _arq(app, MEMBER_A)
    _bind(app, first, str(uuid.uuid4()), rp_uuid, NOVA, 202)
    _bind(app, second, str(uuid.uuid4()), rp_uuid, MEMBER_A_VIA_NOVA, 202)
    assert [call[0] for call in conductor.calls] == ['bind_arqs'] * 2


def test_another_projects_arq_naming_an_instance_leaves_novas_bind_alone(
        app, conductor):
    instance = str(uuid.uuid4())
    foreign = _arq(app, MEMBER_B)
    fx.set_arq(foreign, state='BindFailed', instance_uuid=instance)
    own, again = _arq(app, MEMBER_A), _arq(app, MEMBER_A)

    _bind(app, own, instance, str(uuid.uuid4()), NOVA, 202)

    # The instance's own project's ARQs still refuse another, as Cyborg's.
    fx.set_arq(own, state='Bound')
    resp = _bind(app, again, instance, str(uuid.uuid4()), NOVA, 409)
    assert instance in error_of(resp)
    assert len(conductor.calls) == 1


def test_placement_unreachable_is_503_and_changes_nothing(
        app, conductor, api_conf):
    configure_placement(api_conf, 'http://127.0.0.1:%d'
                        % placement_server.free_port())
    arq = _arq(app, MEMBER_A)

    resp = _bind(app, arq, str(uuid.uuid4()), str(uuid.uuid4()), MEMBER_A,
                 503)

    assert 'Placement is unavailable (GET /allocations/' in error_of(resp)
    _untouched(app, arq, conductor)


def test_without_placement_credentials_only_a_service_binds(app, conductor):
    arq = _arq(app, MEMBER_A)

    resp = _bind(app, arq, str(uuid.uuid4()), str(uuid.uuid4()), MEMBER_A,
                 403)

    assert 'no [placement] credentials' in error_of(resp)
    _untouched(app, arq, conductor)
    _bind(app, arq, str(uuid.uuid4()), str(uuid.uuid4()), NOVA, 202)
