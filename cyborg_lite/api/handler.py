"""The route table of the API and the WSGI application that dispatches it.

Every URL the API serves is declared in ROUTE_DECLARATIONS, read top to
bottom: ``{path template: {METHOD: handler}}``, a handler being a plain
function ``handler(req, **path_params) -> webob.Response`` in the module
of its resource under ``handlers/``. An unknown path is a 404; a known
path asked with another method is a 405 with ``Allow``. A path without
the version segment is served as under /v2, as Cyborg does. A test
compares this table with docs/api/openapi.yaml.

The same idea as openstack-placement's handler.py, without its Routes
dependency: a template is a list of literal segments and ``{name}``
parameters, matched segment by segment.
"""
import webob.exc

from cyborg_lite.api.handlers import accelerator_requests
from cyborg_lite.api.handlers import attributes
from cyborg_lite.api.handlers import bitstream_file
from cyborg_lite.api.handlers import bitstream_signature
from cyborg_lite.api.handlers import bitstreams
from cyborg_lite.api.handlers import deployables
from cyborg_lite.api.handlers import device_profiles
from cyborg_lite.api.handlers import devices
from cyborg_lite.api.handlers import programs
from cyborg_lite.api.handlers import provider_trees
from cyborg_lite.api.handlers import resource_slices
from cyborg_lite.api.handlers import root
from cyborg_lite.api.handlers import services
from cyborg_lite.api.handlers import trusted_keys
from cyborg_lite.api import wsgi_wrapper
from cyborg_lite.common import exception

ROUTE_DECLARATIONS = {
    '/': {'GET': root.index},
    '/v2': {'GET': root.show_version},
    '/v2/devices': {'GET': devices.list_devices},
    '/v2/devices/{uuid}': {'GET': devices.show_device},
    '/v2/devices/{uuid}/disable': {'POST': devices.disable_device},
    '/v2/devices/{uuid}/enable': {'POST': devices.enable_device},
    # From microversion 2.7 (microversion.DEVICE_HISTORY).
    '/v2/devices/{uuid}/history': {'GET': devices.show_history},
    '/v2/services': {'GET': services.list_services},
    '/v2/deployables': {'GET': deployables.list_deployables},
    '/v2/deployables/{uuid}': {'GET': deployables.show_deployable},
    # From microversion 2.5.
    '/v2/deployables/{uuid}/clean': {'POST': deployables.clean_deployable},
    '/v2/attributes': {'GET': attributes.list_attributes,
                       'POST': attributes.create_attribute},
    '/v2/attributes/{uuid}': {'GET': attributes.show_attribute,
                              'DELETE': attributes.delete_attribute},
    '/v2/device_profiles': {'GET': device_profiles.list_profiles,
                            'POST': device_profiles.create_profile,
                            'DELETE': device_profiles.delete_profiles_by_name},
    '/v2/device_profiles/{uuid_or_name}': {
        'GET': device_profiles.show_profile,
        'DELETE': device_profiles.delete_profile},
    '/v2/device_profiles/{name}/explain': {
        'GET': device_profiles.explain_profile},
    '/v2/accelerator_requests': {'GET': accelerator_requests.list_arqs,
                                 'POST': accelerator_requests.create_arqs,
                                 'DELETE': accelerator_requests.delete_arqs,
                                 'PATCH': accelerator_requests.patch_arqs},
    '/v2/accelerator_requests/{uuid}': {
        'GET': accelerator_requests.show_arq,
        'PATCH': accelerator_requests.patch_arq,
        'DELETE': accelerator_requests.delete_arq},
    # From microversion 2.4 (the handlers answer 404 below it).
    '/v2/bitstreams': {'GET': bitstreams.list_bitstreams,
                       'POST': bitstreams.create_bitstream},
    '/v2/bitstreams/{uuid}': {'GET': bitstreams.show_bitstream,
                              'DELETE': bitstreams.delete_bitstream},
    '/v2/bitstreams/{uuid}/file': {'GET': bitstream_file.download_image,
                                   'PUT': bitstream_file.upload_image},
    '/v2/programs': {'GET': programs.list_programs,
                     'POST': programs.create_program},
    # From microversion 2.11; before {uuid}, which would take "stats".
    '/v2/programs/stats': {'GET': programs.program_stats},
    '/v2/programs/{uuid}': {'GET': programs.show_program},
    '/v2/programs/{uuid}/cancel': {'POST': programs.cancel_program},
    '/v2/resource_provider_trees/{hostname}': {
        'GET': provider_trees.show_tree},
    # From microversion 2.5.
    '/v2/resource_slices/{hostname}': {'GET': resource_slices.show_slices},
    # From the signed bitstreams microversion (bitstreams/signatures).
    '/v2/bitstreams/{uuid}/signature': {
        'GET': bitstream_signature.show_signature,
        'PUT': bitstream_signature.put_signature,
        'DELETE': bitstream_signature.delete_signature},
    '/v2/trusted_keys': {'GET': trusted_keys.list_keys,
                         'POST': trusted_keys.create_key},
    '/v2/trusted_keys/{uuid}': {'GET': trusted_keys.show_key,
                                'DELETE': trusted_keys.delete_key},
    '/v2/trusted_keys/{uuid}/revoke': {'POST': trusted_keys.revoke_key},
    '/v2/signature_policies': {'GET': trusted_keys.list_policies},
    '/v2/signature_policies/{project_id}': {
        'GET': trusted_keys.show_policy,
        'PUT': trusted_keys.update_policy,
        'DELETE': trusted_keys.delete_policy},
}

VERSION_SEGMENT = 'v2'
# Where the route a request matched is left for the metrics.
ROUTE_KEY = 'cyborg_lite.route'


class Router:
    """Finds the handler of a path and method in route declarations."""

    def __init__(self, declarations):
        # {number of segments: [(template segments, methods, Allow)]},
        # each list in declaration order.
        self._by_length = {}
        for template, methods in declarations.items():
            segments = template.strip('/').split('/') if template != '/' \
                else []
            allow = ', '.join(sorted(methods))
            self._by_length.setdefault(len(segments), []).append(
                (segments, methods, allow, template))

    def _match(self, segments):
        for template, methods, allow, name in self._by_length.get(
                len(segments), ()):
            params = {}
            for want, got in zip(template, segments):
                if want[0] == '{':
                    params[want[1:-1]] = got
                elif want != got:
                    break
            else:
                return methods, allow, params, name
        raise exception.NotFound('The resource could not be found.')

    @staticmethod
    def _segments(path):
        segments = [s for s in path.split('/') if s]
        # Cyborg sends paths without a version segment to v2.
        if segments and segments[0] != VERSION_SEGMENT:
            segments.insert(0, VERSION_SEGMENT)
        return segments

    def route(self, method, path):
        """(handler, path params, the declared template); NotFound (404)
        or 405 with Allow."""
        methods, allow, params, template = self._match(self._segments(path))
        method = method.upper()
        if method not in methods:
            raise webob.exc.HTTPMethodNotAllowed(
                detail='Method %s is not allowed here; allowed: %s.'
                       % (method, allow),
                headers={'Allow': allow})
        return methods[method], params, template

    def template(self, path):
        """The declared template ``path`` matches; NotFound if none."""
        return self._match(self._segments(path))[3]


class ApiHandler:
    """The WSGI application below the middleware (see deploy.py)."""

    def __init__(self, conductor_factory=None,
                 declarations=ROUTE_DECLARATIONS):
        self.router = Router(declarations)
        self.wrapper = wsgi_wrapper.Wrapper(conductor_factory)

    def _find(self, req):
        try:
            path = req.path_info
        except UnicodeDecodeError:
            raise wsgi_wrapper.undecodable()
        handler, params, template = self.router.route(req.method, path)
        # The route metrics count by (api/metrics.py).
        req.environ[ROUTE_KEY] = template
        return handler, params

    def __call__(self, environ, start_response):
        req = webob.Request(environ)
        try:
            handler, params = self._find(req)
        except Exception as exc:
            resp = wsgi_wrapper.error_response(exc)
            if resp is None:
                raise
        else:
            resp = self.wrapper.call(handler, req, params)
        return resp(environ, start_response)


def served_routes(declarations=ROUTE_DECLARATIONS):
    """{(path, METHOD)} of the declarations."""
    return {(path, method) for path, methods in declarations.items()
            for method in methods}
