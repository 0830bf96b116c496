"""The OpenAPI 3.1 description of the API, built from the route table and
the request and response schemas (so the two cannot drift), written to
docs/api/openapi.yaml by::

    python -m cyborg_lite.api.openapi > docs/api/openapi.yaml

tests/functional/api/test_openapi.py checks that the file is what this
builds, that it names exactly the routes the app serves, and, fuzzing
every operation, that every answer has a documented status, content type
and body; test_cyborg_api_ref.py compares its fields with Cyborg's API
reference.
"""
import collections
import sys

import yaml

from cyborg_lite.api import handler
from cyborg_lite.api import microversion
from cyborg_lite.api.schemas import accelerator_requests as arq_s
from cyborg_lite.api.schemas import attributes as attr_s
from cyborg_lite.api.schemas import bitstreams as bs_s
from cyborg_lite.api.schemas import deployables as dep_s
from cyborg_lite.api.schemas import device_profiles as dp_s
from cyborg_lite.api.schemas import devices as dev_s
from cyborg_lite.api.schemas import programs as prog_s
from cyborg_lite.api.schemas import provider_trees as tree_s
from cyborg_lite.api.schemas import resource_slices as slices_s
from cyborg_lite.api.schemas import services as services_s
from cyborg_lite.api.schemas import trusted_keys as keys_s
from cyborg_lite.api.schemas import versions as versions_s
from cyborg_lite.bitstreams import signatures

Op = collections.namedtuple('Op', ['summary', 'ok', 'query', 'body', 'errors',
                                   'media', 'empty'])
JSON = 'application/json'
OCTETS = 'application/octet-stream'


def _op(summary, ok=200, query=None, body=None, errors=(), media=JSON,
        empty=None):
    """``media``: the type of the request body and of the success body
    (the bitstream file routes carry raw bytes). ``empty``: the success
    has no body (by default a 202 or 204)."""
    if empty is None:
        empty = ok in (202, 204)
    return Op(summary, ok, query, body, tuple(errors), media, empty)


_PATCH_ERR = (400, 403, 404, 406, 409, 503)
_SIGNED = signatures.MICROVERSION
OPERATIONS = {
    ('/', 'GET'): _op('The API versions.'),
    ('/v2', 'GET'): _op('The v2 version document.'),
    ('/v2/devices', 'GET'): _op('List devices.', query=dev_s.LIST_QUERY,
                                errors=(400, 403)),
    ('/v2/devices/{uuid}', 'GET'): _op('Show a device.', errors=(403, 404)),
    ('/v2/devices/{uuid}/disable', 'POST'): _op(
        'Disable a device for maintenance: status maintaining, every '
        'provider reserved, binds refused (admin; no body).', empty=True,
        errors=(400, 403, 404)),
    ('/v2/devices/{uuid}/enable', 'POST'): _op(
        'Enable a device after maintenance (admin; no body); from %s, 409 '
        'while it is unhealthy.' % microversion.DEVICE_HEALTH, empty=True, errors=(400, 403, 404, 409)),
    ('/v2/devices/{uuid}/history', 'GET'): _op(
        "A device's transitions, oldest first: what, when, who held it, "
        'why (admin; from %s).' % microversion.DEVICE_HISTORY, query=dev_s.HISTORY_QUERY,
        errors=(400, 403, 404)),
    ('/v2/services', 'GET'): _op(
        'Each agent, conductor and API: host, release, RPC versions, state '
        '(up or down by its heartbeat) and last heartbeat (admin; from '
        '%s).' % microversion.SERVICES, errors=(403, 404)),
    ('/v2/deployables', 'GET'): _op('List deployables.',
                                    query=dep_s.LIST_QUERY,
                                    errors=(400, 403)),
    ('/v2/deployables/{uuid}', 'GET'): _op('Show a deployable.',
                                           errors=(403, 404)),
    ('/v2/deployables/{uuid}/clean', 'POST'): _op(
        'Ask for a clean of a deployable in error or available (admin, '
        '2.5).', ok=202, errors=(400, 403, 404, 409), empty=False),
    ('/v2/attributes', 'GET'): _op('List attributes.',
                                   query=attr_s.LIST_QUERY,
                                   errors=(400, 403)),
    ('/v2/attributes', 'POST'): _op('Create an attribute (admin).', ok=201,
                                    body=attr_s.CREATE,
                                    errors=(400, 403, 409)),
    ('/v2/attributes/{uuid}', 'GET'): _op('Show an attribute.',
                                          errors=(403, 404)),
    ('/v2/attributes/{uuid}', 'DELETE'): _op('Delete an attribute (admin).',
                                             ok=204, errors=(403, 404)),
    ('/v2/device_profiles', 'GET'): _op('List device profiles.',
                                        query=dp_s.LIST_QUERY,
                                        errors=(400, 403)),
    ('/v2/device_profiles', 'POST'): _op(
        'Create a device profile (a list of exactly one).', ok=201,
        body=dp_s.CREATE, errors=(400, 403, 409)),
    ('/v2/device_profiles', 'DELETE'): _op(
        'Delete device profiles by name (?value=a,b).', ok=204,
        query=dp_s.DELETE_QUERY, errors=(400, 403, 404, 409)),
    ('/v2/device_profiles/{uuid_or_name}', 'GET'): _op(
        'Show a device profile by uuid, or by name from 2.2.',
        errors=(403, 404, 406)),
    ('/v2/device_profiles/{uuid_or_name}', 'DELETE'): _op(
        'Delete a device profile.', ok=204, errors=(403, 404, 409)),
    ('/v2/accelerator_requests', 'GET'): _op(
        'List ARQs.', query=arq_s.LIST_QUERY, errors=(400, 403, 423)),
    ('/v2/accelerator_requests', 'POST'): _op(
        'Create ARQs from a device profile.', ok=201, body=arq_s.CREATE,
        errors=(400, 403, 404)),
    ('/v2/accelerator_requests', 'DELETE'): _op(
        'Delete ARQs by uuids (?arqs=) or by instance (?instance=).',
        ok=204, query=arq_s.DELETE_QUERY, errors=(400, 403, 404, 409)),
    ('/v2/accelerator_requests', 'PATCH'): _op(
        'Bind or unbind ARQs: {arq uuid: JSON patch}.', ok=202,
        body=arq_s.PATCH, errors=_PATCH_ERR),
    ('/v2/accelerator_requests/{uuid}', 'GET'): _op('Show an ARQ.',
                                                    errors=(403, 404)),
    ('/v2/accelerator_requests/{uuid}', 'PATCH'): _op(
        'Bind or unbind one ARQ (body keyed by its uuid).', ok=202,
        body=arq_s.PATCH, errors=_PATCH_ERR),
    ('/v2/accelerator_requests/{uuid}', 'DELETE'): _op(
        'Delete one ARQ.', ok=204, errors=(403, 404, 409)),
    # From 2.4; older versions get 404 for these routes.
    ('/v2/bitstreams', 'GET'): _op(
        'List bitstreams (2.4).', query=bs_s.LIST_QUERY,
        errors=(400, 403, 404)),
    ('/v2/bitstreams', 'POST'): _op(
        'Create bitstream metadata, status queued (2.4).', ok=201,
        body=bs_s.CREATE, errors=(400, 403, 404)),
    ('/v2/bitstreams/{uuid}', 'GET'): _op('Show a bitstream (2.4).',
                                          errors=(403, 404)),
    ('/v2/bitstreams/{uuid}', 'DELETE'): _op(
        'Delete a bitstream; 409 while jobs refer to it (2.4).', ok=204,
        errors=(403, 404, 409)),
    ('/v2/bitstreams/{uuid}/file', 'PUT'): _op(
        'Upload the image, streamed; header and sha256 checked (2.4).',
        ok=204, body=bs_s.IMAGE, media=OCTETS,
        errors=(400, 403, 404, 409, 411, 415)),
    ('/v2/bitstreams/{uuid}/file', 'GET'): _op(
        'Download the image (2.4).', media=OCTETS, errors=(403, 404, 409)),
    ('/v2/programs', 'GET'): _op(
        'List programming jobs (2.4).', query=prog_s.LIST_QUERY,
        errors=(400, 403, 404)),
    ('/v2/programs', 'POST'): _op(
        'Program a region with a bitstream: a queued job (2.4).', ok=202,
        body=prog_s.CREATE, errors=(400, 403, 404, 409, 503), empty=False),
    ('/v2/programs/stats', 'GET'): _op(
        'Programming seconds of ended jobs by project and namespace '
        '(2.11).', query=prog_s.STATS_QUERY, errors=(400, 403, 404)),
    ('/v2/programs/{uuid}', 'GET'): _op('Show a programming job (2.4).',
                                        errors=(403, 404)),
    ('/v2/programs/{uuid}/cancel', 'POST'): _op(
        'Cancel a job not yet writing the region (2.4).',
        errors=(403, 404, 409, 503)),
    ('/v2/resource_provider_trees/{hostname}', 'GET'): _op(
        "A host's provider tree as the conductor pushes it to Placement "
        '(admin, 2.4).', errors=(400, 403, 404)),
    ('/v2/device_profiles/{name}/explain', 'GET'): _op(
        'Why a device profile gets no accelerator: per request group the '
        'constraints in the scheduler\'s order, the hosts and devices '
        'passing each, the first none passes (permanent or transient, '
        'with the holders), near misses (admin, 2.10).',
        query=dp_s.EXPLAIN_QUERY, errors=(400, 403, 404)),
    ('/v2/resource_slices/{hostname}', 'GET'): _op(
        "A host's Kubernetes ResourceSlices as the conductor would publish "
        'them (admin, 2.5).', errors=(400, 403, 404, 409)),
    # From the signed bitstreams microversion (bitstreams/signatures).
    ('/v2/bitstreams/{uuid}/signature', 'PUT'): _op(
        'Attach the detached signature of the stored image (base64) and '
        'see its status (%s).' % _SIGNED, body=bs_s.SIGNATURE,
        errors=(400, 403, 404, 409)),
    ('/v2/bitstreams/{uuid}/signature', 'GET'): _op(
        'The signature and its status, with the reason (%s).' % _SIGNED,
        errors=(403, 404)),
    ('/v2/bitstreams/{uuid}/signature', 'DELETE'): _op(
        'Remove the signature (%s).' % _SIGNED, ok=204,
        errors=(403, 404, 409)),
    ('/v2/trusted_keys', 'GET'): _op(
        'List the keys trusted to sign bitstreams (%s).' % _SIGNED,
        query=keys_s.LIST_QUERY, errors=(400, 403, 404)),
    ('/v2/trusted_keys', 'POST'): _op(
        'Trust a PEM public key or certificate, globally or for a project '
        '(admin, %s).' % _SIGNED, ok=201, body=keys_s.CREATE,
        errors=(400, 403, 404, 409)),
    ('/v2/trusted_keys/{uuid}', 'GET'): _op(
        'Show a trusted key (%s).' % _SIGNED, errors=(403, 404)),
    ('/v2/trusted_keys/{uuid}', 'DELETE'): _op(
        'Delete a key that is not revoked (admin, %s).' % _SIGNED, ok=204,
        errors=(403, 404, 409)),
    ('/v2/trusted_keys/{uuid}/revoke', 'POST'): _op(
        'Revoke a key for good: nothing it signed is programmed from now '
        'on (admin, %s; the body, with a reason, is optional).' % _SIGNED,
        body=keys_s.REVOKE, errors=(400, 403, 404, 409)),
    ('/v2/signature_policies', 'GET'): _op(
        "The default signature policy and the projects' own (admin, %s)."
        % _SIGNED, errors=(403, 404)),
    ('/v2/signature_policies/{project_id}', 'GET'): _op(
        'The signature policy that applies to a project (%s).' % _SIGNED,
        errors=(400, 403, 404)),
    ('/v2/signature_policies/{project_id}', 'PUT'): _op(
        "Set a project's own signature policy (admin, %s)." % _SIGNED,
        body=keys_s.POLICY_UPDATE, errors=(400, 403, 404)),
    ('/v2/signature_policies/{project_id}', 'DELETE'): _op(
        "Drop a project's own signature policy (admin, %s)." % _SIGNED,
        ok=204, errors=(400, 403, 404)),
}

# The success body of each operation that has a JSON one.
RESPONSES = {
    ('/', 'GET'): versions_s.INDEX,
    ('/v2', 'GET'): versions_s.VERSION,
    ('/v2/devices', 'GET'): dev_s.LIST,
    ('/v2/devices/{uuid}', 'GET'): dev_s.VIEW,
    ('/v2/devices/{uuid}/history', 'GET'): dev_s.HISTORY,
    ('/v2/services', 'GET'): services_s.LIST,
    ('/v2/deployables', 'GET'): dep_s.LIST,
    ('/v2/deployables/{uuid}', 'GET'): dep_s.VIEW,
    ('/v2/deployables/{uuid}/clean', 'POST'): dep_s.VIEW,
    ('/v2/attributes', 'GET'): attr_s.LIST,
    ('/v2/attributes', 'POST'): attr_s.VIEW,
    ('/v2/attributes/{uuid}', 'GET'): attr_s.VIEW,
    ('/v2/device_profiles', 'GET'): dp_s.LIST,
    ('/v2/device_profiles', 'POST'): dp_s.VIEW,
    ('/v2/device_profiles/{uuid_or_name}', 'GET'): dp_s.SHOW,
    ('/v2/accelerator_requests', 'GET'): arq_s.LIST,
    ('/v2/accelerator_requests', 'POST'): arq_s.LIST,
    ('/v2/accelerator_requests/{uuid}', 'GET'): arq_s.VIEW,
    ('/v2/bitstreams', 'GET'): bs_s.LIST,
    ('/v2/bitstreams', 'POST'): bs_s.VIEW,
    ('/v2/bitstreams/{uuid}', 'GET'): bs_s.VIEW,
    ('/v2/programs', 'GET'): prog_s.LIST,
    ('/v2/programs', 'POST'): prog_s.VIEW,
    ('/v2/programs/stats', 'GET'): prog_s.STATS,
    ('/v2/programs/{uuid}', 'GET'): prog_s.VIEW,
    ('/v2/programs/{uuid}/cancel', 'POST'): prog_s.VIEW,
    ('/v2/resource_provider_trees/{hostname}', 'GET'): tree_s.TREE,
    ('/v2/resource_slices/{hostname}', 'GET'): slices_s.SLICES,
    ('/v2/device_profiles/{name}/explain', 'GET'): dp_s.EXPLAIN,
    ('/v2/bitstreams/{uuid}/signature', 'PUT'): bs_s.SIGNATURE_VIEW,
    ('/v2/bitstreams/{uuid}/signature', 'GET'): bs_s.SIGNATURE_VIEW,
    ('/v2/trusted_keys', 'GET'): keys_s.LIST,
    ('/v2/trusted_keys', 'POST'): keys_s.VIEW,
    ('/v2/trusted_keys/{uuid}', 'GET'): keys_s.VIEW,
    ('/v2/trusted_keys/{uuid}/revoke', 'POST'): keys_s.VIEW,
    ('/v2/signature_policies', 'GET'): keys_s.POLICY_LIST,
    ('/v2/signature_policies/{project_id}', 'GET'): keys_s.POLICY_VIEW,
    ('/v2/signature_policies/{project_id}', 'PUT'): keys_s.POLICY_VIEW,
}

_ERROR = {'description': "Cyborg's error body: error_message is a JSON "
                         'string of {faultcode, faultstring, debuginfo}.',
          'content': {'application/json': {'schema': {
              'type': 'object', 'required': ['error_message'],
              'properties': {'error_message': {'type': 'string'}}}}}}


def _parameters(path, query):
    params = [{'name': name, 'in': 'path', 'required': True,
               'schema': {'type': 'string'}}
              for name in (s[1:-1] for s in path.split('/')
                           if s.startswith('{'))]
    params.append({'name': microversion.HEADER, 'in': 'header',
                   'required': False, 'schema': {
                       'type': 'string', 'description':
                       'accelerator X.Y (%s to %s)' % (
                           microversion.min_version(),
                           microversion.max_version())}})
    for name, schema in sorted((query or {}).get('properties', {}).items()):
        params.append({'name': name, 'in': 'query', 'required': False,
                       'schema': schema})
    return params


def _success_schema(path, method, op):
    if op.media != JSON:
        return {'type': 'string', 'format': 'binary'}
    if (path, method) not in RESPONSES:
        raise KeyError('%s %s answers JSON: describe its body in '
                       'openapi.RESPONSES' % (method, path))
    return RESPONSES[(path, method)]


def _operation(path, method, op):
    body = {'summary': op.summary, 'parameters': _parameters(path, op.query),
            'responses': {str(op.ok): {'description': 'Success.'}}}
    if not op.empty:
        body['responses'][str(op.ok)]['content'] = {
            op.media: {'schema': _success_schema(path, method, op)}}
    errors = op.errors + (406, 413)
    if op.body is not None and op.media == JSON:
        # A body declared as anything but application/json.
        errors += (415,)
    for status in errors:
        body['responses'][str(status)] = _ERROR
    if op.body is not None:
        body['requestBody'] = {'required': True, 'content': {
            op.media: {'schema': op.body}}}
    return body


def build():
    paths = {}
    for (path, method), op in sorted(OPERATIONS.items()):
        paths.setdefault(path, {})[method.lower()] = _operation(path,
                                                                method, op)
    return {
        'openapi': '3.1.0',
        'info': {'title': 'cyborg_lite accelerator API (Cyborg v2)',
                 'version': str(microversion.max_version())},
        'paths': paths,
    }


def served_routes():
    """{(path, METHOD)} the app's route table serves."""
    return handler.served_routes()


def dump():
    return yaml.safe_dump(build(), sort_keys=True, default_flow_style=False)


if __name__ == '__main__':
    sys.stdout.write(dump())
