"""docs/api/openapi.yaml is true: it is what the code describes, it names
exactly the routes the app serves, and every answer the app gives is as
it documents (status, content type, body schema): fuzzing every operation
it lists (schemathesis), and a walk through every operation on real
rows."""
import json
import os

import hypothesis
import jsonschema
import pytest
import schemathesis
from schemathesis import checks
import yaml

from cyborg_lite.api import openapi
from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import cleaning as cleaning_db
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.db import services as services_db
from tests.functional.api import bitstream_helpers as bh
from tests.functional.api import conftest as fx
from tests.functional.api.conftest import ADMIN
from tests.functional.api.conftest import error_of
from tests.functional.api.test_real_clients import endpoint  # noqa: F401
from tests import signing_keys as sk
from tests.unit.bitstreams import builders

SPEC = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'docs',
                    'api', 'openapi.yaml')
UUID = '5d6a8f0e-6a47-4b5b-9c50-1a2b3c4d5e6f'


def _spec():
    with open(SPEC) as f:
        return yaml.safe_load(f)


def test_file_is_what_the_code_builds():
    assert _spec() == openapi.build(), (
        'regenerate: python -m cyborg_lite.api.openapi > '
        'docs/api/openapi.yaml')


def test_file_lists_exactly_the_served_routes():
    listed = {(path, method.upper()) for path, ops in _spec()['paths'].items()
              for method in ops}
    assert listed == openapi.served_routes()


@pytest.mark.parametrize('path,method', sorted(openapi.served_routes()))
def test_each_listed_route_is_routed(app, path, method):
    url = path.replace('{uuid}', UUID).replace('{uuid_or_name}', UUID)
    resp = app.request(url, method=method, headers=ADMIN,
                       expect_errors=True)
    # Routed: the handler answered (a missing object is its own 404).
    assert resp.status_int != 405
    if resp.status_int == 404:
        assert error_of(resp) != 'The resource could not be found.'


SCHEMA = schemathesis.openapi.from_path(SPEC)
# Every answer: not a 5xx, a status the operation documents, its content
# type, a body valid against its schema, the headers it documents.
CHECKS = [checks.not_a_server_error, checks.status_code_conformance,
          checks.content_type_conformance,
          checks.response_schema_conformance,
          checks.response_headers_conformance]


@SCHEMA.parametrize()
@hypothesis.settings(max_examples=15, deadline=None, derandomize=True,
                     suppress_health_check=list(hypothesis.HealthCheck))
def test_fuzz_every_answer_is_as_documented(case, seeded):
    case.headers = dict(case.headers or {}, **ADMIN)
    response = case.call(base_url=seeded)
    case.validate_response(response, checks=CHECKS)


@pytest.fixture
def seeded(endpoint):  # noqa: F811
    """The API on a port, with a device, a region, its attributes and a
    free attach handle: lists then show rows the schemas check."""
    _rows()
    return endpoint


# --- every operation on real rows, each answer against the file ----------

def conforms(spec, method, template, resp):
    """Assert ``resp`` is as the file documents ``method template``:
    a listed status, its content type, a body valid against its
    schema (an empty body where none is documented)."""
    responses = spec['paths'][template][method.lower()]['responses']
    what = (method, template, resp.status_int, resp.body[:300])
    assert str(resp.status_int) in responses, what
    documented = responses[str(resp.status_int)]
    if 'content' not in documented:
        assert resp.body == b'', what
        return resp
    [(media, content)] = documented['content'].items()
    assert resp.content_type == media, what
    if media == 'application/json':
        errors = list(jsonschema.Draft202012Validator(
            content['schema']).iter_errors(resp.json))
        assert not errors, (what, [e.message for e in errors])
    return resp


class Walk:
    """Calls the app and checks each answer against the file."""

    def __init__(self, app, version):
        self.app = app
        self.spec = _spec()
        self.headers = dict(ADMIN, **{'OpenStack-API-Version':
                                      'accelerator %s' % version})
        self.seen = set()

    def __call__(self, method, template, status, body=None, query='',
                 content_type='application/json', **params):
        path = template.format(**params) + query
        kwargs = {}
        if body is not None:
            kwargs = {'body': body if isinstance(body, bytes)
                      else json.dumps(body).encode(),
                      'content_type': content_type}
        resp = self.app.request(path, method=method, headers=self.headers,
                                expect_errors=True, **kwargs)
        assert resp.status_int == status, (method, path, resp.body[:300])
        self.seen.add((template, method))
        return conforms(self.spec, method, template, resp)


def _rows():
    device = fx.add_device()
    dep = fx.add_deployable(device, attributes=[('rc', 'FPGA'),
                                                ('trait0', 'CUSTOM_X')])
    return device, dep, fx.add_handle(dep, in_use=False)


def _walk_cyborg_routes(walk, dep, handle):
    walk('GET', '/', 200)
    walk('GET', '/v2', 200)
    device = walk('GET', '/v2/devices', 200).json['devices'][0]
    walk('GET', '/v2/devices/{uuid}', 200, uuid=device['uuid'])
    walk('GET', '/v2/devices/{uuid}', 404, uuid=UUID)
    walk('GET', '/v2/devices', 400, query='?limit=0')
    walk('GET', '/v2/deployables', 200)
    walk('GET', '/v2/deployables/{uuid}', 200, uuid=dep.uuid)
    walk('GET', '/v2/attributes', 200)
    attr = walk('POST', '/v2/attributes', 201, body={
        'deployable_id': dep.id, 'key': 'trait9', 'value': 'CUSTOM_Y'}).json
    walk('GET', '/v2/attributes/{uuid}', 200, uuid=attr['uuid'])
    walk('DELETE', '/v2/attributes/{uuid}', 204, uuid=attr['uuid'])
    walk('POST', '/v2/attributes', 415, body=b'{}', content_type='text/plain')

    profile = walk('POST', '/v2/device_profiles', 201, body=[{
        'name': 'dp', 'description': 'd', 'groups': [
            {'resources:FPGA': '1', 'trait:CUSTOM_X': 'required'}]}]).json
    walk('GET', '/v2/device_profiles', 200, query='?name=dp')
    walk('GET', '/v2/device_profiles/{uuid_or_name}', 200,
         uuid_or_name=profile['uuid'])
    arqs = walk('POST', '/v2/accelerator_requests', 201,
                body={'device_profile_name': 'dp'}).json['arqs']
    arq = arqs[0]['uuid']
    walk('GET', '/v2/accelerator_requests', 200)
    walk('PATCH', '/v2/accelerator_requests', 202, body={arq: [
        {'op': 'add', 'path': '/hostname', 'value': 'host1'},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': dep.rp_uuid},
        {'op': 'add', 'path': '/instance_uuid', 'value': UUID}]})
    # As the conductor leaves it: Bound, with its attach handle.
    fx.set_arq(arq, state='Bound', attach_handle_id=handle.id,
               deployable_id=dep.id)
    bound = walk('GET', '/v2/accelerator_requests/{uuid}', 200,
                 uuid=arq).json
    assert bound['attach_handle_info']['bus'] == '5e'
    walk('GET', '/v2/accelerator_requests', 200,
         query='?instance=%s&bind_state=resolved' % UUID)
    walk('PATCH', '/v2/accelerator_requests/{uuid}', 202, uuid=arq,
         body={arq: [{'op': 'remove', 'path': p} for p in (
             '/hostname', '/device_rp_uuid', '/instance_uuid')]})
    fx.set_arq(arq, state='Unbound', attach_handle_id=None)
    walk('DELETE', '/v2/accelerator_requests/{uuid}', 204, uuid=arq)
    walk('DELETE', '/v2/accelerator_requests', 404, query='?arqs=' + UUID)
    walk('DELETE', '/v2/device_profiles/{uuid_or_name}', 204,
         uuid_or_name=profile['uuid'])
    walk('DELETE', '/v2/device_profiles', 404, query='?value=dp')


def _walk_signatures(walk, bitstream_uuid, data):
    key = sk.new_key('ecdsa')
    trusted = walk('POST', '/v2/trusted_keys', 201, body={
        'name': 'lab', 'public_key': sk.certificate_pem(key)}).json
    walk('POST', '/v2/trusted_keys', 409, body={
        'name': 'again', 'public_key': sk.public_pem(key)})
    walk('POST', '/v2/trusted_keys', 400, body={
        'name': 'rsa', 'public_key': sk.public_pem(sk.new_key('rsa'))})
    walk('GET', '/v2/trusted_keys', 200)
    walk('GET', '/v2/trusted_keys/{uuid}', 200, uuid=trusted['uuid'])
    signed = walk('PUT', '/v2/bitstreams/{uuid}/signature', 200,
                  uuid=bitstream_uuid, body={'signature': sk.sign(key, data)})
    assert signed.json['signature_status'] == 'verified'
    walk('PUT', '/v2/bitstreams/{uuid}/signature', 400, uuid=bitstream_uuid,
         body={'signature': '@'})
    walk('GET', '/v2/bitstreams/{uuid}/signature', 200, uuid=bitstream_uuid)
    walk('POST', '/v2/trusted_keys/{uuid}/revoke', 200,
         uuid=trusted['uuid'], body={'reason': 'test'})
    walk('POST', '/v2/trusted_keys/{uuid}/revoke', 409,
         uuid=trusted['uuid'])
    assert walk('GET', '/v2/bitstreams/{uuid}', 200, uuid=bitstream_uuid
                ).json['signature_status'] == 'revoked_key'
    walk('DELETE', '/v2/trusted_keys/{uuid}', 409, uuid=trusted['uuid'])
    other = walk('POST', '/v2/trusted_keys', 201, body={
        'name': 'other', 'public_key': sk.public_pem(sk.new_key()),
        'project_id': 'project-a'}).json
    walk('DELETE', '/v2/trusted_keys/{uuid}', 204, uuid=other['uuid'])
    walk('DELETE', '/v2/bitstreams/{uuid}/signature', 204,
         uuid=bitstream_uuid)
    walk('GET', '/v2/signature_policies/{project_id}', 200,
         project_id='project-a')
    walk('PUT', '/v2/signature_policies/{project_id}', 200,
         project_id='project-a', body={'policy': 'enforce'})
    walk('PUT', '/v2/signature_policies/{project_id}', 400,
         project_id='project-a', body={'policy': 'on'})
    walk('GET', '/v2/signature_policies', 200)
    walk('DELETE', '/v2/signature_policies/{project_id}', 204,
         project_id='project-a')
    walk('DELETE', '/v2/signature_policies/{project_id}', 404,
         project_id='project-a')


@pytest.mark.parametrize('version', ['2.0', '2.3'])
def test_cyborg_routes_answer_as_documented(app, version):
    _device, dep, handle = _rows()
    _walk_cyborg_routes(Walk(app, version), dep, handle)


def test_every_operation_answers_as_documented(app, conf):
    device, dep, handle = _rows()
    walk = Walk(app, 'latest')
    _walk_cyborg_routes(walk, dep, handle)
    walk('GET', '/v2/resource_provider_trees/{hostname}', 200,
         hostname=device.hostname)
    walk('GET', '/v2/resource_slices/{hostname}', 200,
         hostname=device.hostname)
    walk('GET', '/v2/resource_slices/{hostname}', 404, hostname='nowhere')
    walk('POST', '/v2/device_profiles', 201, body=[{
        'name': 'dp-explain', 'groups': [{'resources:FPGA': '1'}]}])
    walk('GET', '/v2/device_profiles/{name}/explain', 200, name='dp-explain')
    walk('GET', '/v2/device_profiles/{name}/explain', 404, name='nodp')
    walk('GET', '/v2/device_profiles/{name}/explain', 400, name='dp-explain',
         query='?hostname=')
    walk('POST', '/v2/devices/{uuid}/disable', 200, uuid=device.uuid)
    walk('POST', '/v2/devices/{uuid}/enable', 200, uuid=device.uuid)
    walk('POST', '/v2/devices/{uuid}/enable', 404, uuid=UUID)

    data = builders.build_gbs()
    bitstream = walk('POST', '/v2/bitstreams', 201, body={
        'name': 'nlb', 'format': 'gbs', 'sha256': bh.sha256(data)}).json
    walk('GET', '/v2/bitstreams/{uuid}/file', 409, uuid=bitstream['uuid'])
    walk('PUT', '/v2/bitstreams/{uuid}/file', 204, body=data,
         content_type=bh.OCTETS, uuid=bitstream['uuid'])
    walk('GET', '/v2/bitstreams/{uuid}/file', 200, uuid=bitstream['uuid'])
    walk('GET', '/v2/bitstreams', 200)
    walk('GET', '/v2/bitstreams/{uuid}', 200, uuid=bitstream['uuid'])

    # The unbind above released the region: wiped, as the conductor's
    # clean would end it (the stand-in conductor of these tests runs none).
    tried = cleaning_db.begin(dep.id)
    cleaning_db.finish(tried.uuid, tried.cleaning_uuid)
    # A job as the conductor records it; creating and cancelling are
    # fuzzed above against the real one.
    job = jobs_db.create_job(dep.id, bitstreams_db.get(bitstream['uuid']).id,
                             hostname='host1')
    walk('GET', '/v2/programs', 200)
    # An agent's try, running and then ended, as the job shows it.
    jobs_db.transition(job.uuid, 'queued', 'downloading', try_number=1)
    walk('GET', '/v2/programs/{uuid}', 200, uuid=job.uuid)
    walk('POST', '/v2/programs', 400, body={'force': 'yes'})
    walk('GET', '/v2/programs/{uuid}', 404, uuid=UUID)
    jobs_db.transition(job.uuid, 'downloading', 'failed', try_number=1,
                       error='image refused')
    assert walk('GET', '/v2/programs', 200).json['programs'][0]['tries']
    # The failed job counted (its project is NULL: the conductor's own).
    assert walk('GET', '/v2/programs/stats', 200).json[
        'programming_seconds'][0]['jobs'] == 1
    walk('GET', '/v2/programs/stats', 400, query='?project_id=')
    walk('DELETE', '/v2/bitstreams/{uuid}', 409, uuid=bitstream['uuid'])
    walk('POST', '/v2/deployables/{uuid}/clean', 202, uuid=dep.uuid)
    walk('POST', '/v2/deployables/{uuid}/clean', 409, uuid=dep.uuid)
    # Every move above on the device is in its history.
    events = [row['event'] for row in walk(
        'GET', '/v2/devices/{uuid}/history', 200, uuid=device.uuid,
        query='?limit=50').json['history']]
    assert events == [
        'arq.bind.start', 'arq.unbind', 'device.disable', 'device.enable',
        'deployable.clean.start', 'deployable.clean.end',
        'programming_job.program.start', 'programming_job.update',
        'programming_job.program.error', 'deployable.clean.request']
    walk('GET', '/v2/devices/{uuid}/history', 404, uuid=UUID)
    walk('GET', '/v2/devices/{uuid}/history', 400, uuid=device.uuid,
         query='?limit=x')
    _walk_signatures(walk, bitstream['uuid'], data)
    services_db.beat('conductor', 'cond1', '2026.2.0', {'t': '1.10'})
    assert walk('GET', '/v2/services', 200).json['services'][0][
        'state'] == 'up'

    unwalked = openapi.served_routes() - walk.seen - {
        ('/v2/programs/{uuid}/cancel', 'POST')}
    assert unwalked == set()
