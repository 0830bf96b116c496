"""The root controller: the version document and the route table.

Routing is a plain table (see v2.ROUTES) read top to bottom, rather than
pecan's object-graph routing, so that every URL the API serves is listed
in one place, a test can compare it with docs/api/openapi.yaml, and an
unknown path is always a 404 and a known path with another method a 405.
"""
import pecan
import webob.exc

from cyborg_lite.api.controllers import v2
from cyborg_lite.api import microversion
from cyborg_lite.api import utils
from cyborg_lite.common import exception

ROUTE_KEY = 'cyborg_lite.route'


def version_document(req):
    return {
        'id': 'v2',
        'status': 'CURRENT',
        'min_version': str(microversion.min_version()),
        'max_version': str(microversion.max_version()),
        'links': [{'href': '%s/v2' % utils.base_url(req), 'rel': 'self'}],
    }


def index(req):
    """GET /: the versions this service offers (Cyborg's document)."""
    version = version_document(req)
    return utils.response({
        'name': 'OpenStack Cyborg API',
        'description': 'cyborg_lite: lifecycle management of hardware '
                       'accelerators (FPGAs, GPUs, ...), Cyborg v2 '
                       'compatible.',
        'versions': [version],
        'default_version': version,
    })


ROUTES = {'/': {'GET': index}}
ROUTES.update(v2.routes(version_document))


def _compile(routes):
    return [(template.strip('/').split('/') if template != '/' else [],
             methods) for template, methods in routes.items()]


_TABLE = _compile(ROUTES)


def match(segments):
    """(methods, path params) of the route for these path segments."""
    for template, methods in _TABLE:
        if len(template) != len(segments):
            continue
        params = {}
        for want, got in zip(template, segments):
            if want.startswith('{'):
                params[want[1:-1]] = got
            elif want != got:
                break
        else:
            return methods, params
    raise exception.NotFound('The resource could not be found.')


class RootController:

    @pecan.expose()
    def _route(self, args, request=None):
        request = request or pecan.request
        segments = [a for a in args if a != '']
        # Cyborg sends paths without a version segment to v2.
        if segments and segments[0] != 'v2':
            segments = ['v2'] + segments
        methods, params = match(segments)
        method = request.method.upper()
        if method not in methods:
            allowed = ', '.join(sorted(methods))
            raise webob.exc.HTTPMethodNotAllowed(
                detail='Method %s is not allowed here; allowed: %s.'
                       % (method, allowed),
                headers={'Allow': allowed})
        request.environ[ROUTE_KEY] = (methods[method], params)
        return self.call, []

    @pecan.expose()
    def call(self, *args, **kwargs):
        handler, params = pecan.request.environ[ROUTE_KEY]
        return handler(pecan.request, **params)
