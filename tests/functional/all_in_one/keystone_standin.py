"""A stand-in Keystone (identity v3) for tests: just enough for
keystonemiddleware.auth_token to log its service user in and validate
user tokens.

Tokens in ``users`` (token -> roles) are valid; any other token is 404 at
validation, as Keystone answers for an unknown token. ``requests`` lists
(method, path, subject token) of everything asked, so a test can see the
middleware really asked this Keystone.
"""
import http.server
import json

from tests import servers

EXPIRES = '2099-01-01T00:00:00.000000Z'
SERVICE_TOKEN = 'service-token'
DOMAIN = {'id': 'default', 'name': 'Default'}


def _token_body(roles, project_id, catalog):
    return {'token': {
        'methods': ['password'], 'expires_at': EXPIRES,
        'issued_at': '2024-01-01T00:00:00.000000Z',
        'user': {'id': 'u-' + project_id, 'name': 'user', 'domain': DOMAIN},
        'project': {'id': project_id, 'name': 'project', 'domain': DOMAIN},
        'roles': [{'id': 'r-' + r, 'name': r} for r in roles],
        'catalog': catalog}}


class KeystoneStandIn:

    def __init__(self, users=None):
        self.users = dict(users or {})
        self.requests = []
        self.port = servers.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self._server = http.server.ThreadingHTTPServer(
            ('127.0.0.1', self.port), self._handler_class())

    def start(self):
        servers.serve_in_thread(self._server)
        return self

    def stop(self):
        self._server.shutdown()
        self._server.server_close()

    def _catalog(self):
        endpoints = [{'id': 'e-' + i, 'interface': i, 'region': 'RegionOne',
                      'region_id': 'RegionOne', 'url': self.url + '/v3'}
                     for i in ('public', 'internal', 'admin')]
        return [{'id': 'identity', 'type': 'identity', 'name': 'keystone',
                 'endpoints': endpoints}]

    def _version(self):
        return {'id': 'v3.14', 'status': 'stable',
                'updated': '2020-04-07T00:00:00Z',
                'links': [{'rel': 'self', 'href': self.url + '/v3/'}],
                'media-types': [{'base': 'application/json', 'type':
                                 'application/vnd.openstack.identity-v3+json'}]}

    def answer(self, method, path, headers):
        """(status, headers, body) for one request."""
        subject = headers.get('X-Subject-Token')
        self.requests.append((method, path, subject))
        path = path.rstrip('/')
        if method == 'GET' and path in ('', '/v3'):
            body = ({'version': self._version()} if path else
                    {'versions': {'values': [self._version()]}})
            return 200, {}, body
        if path == '/v3/auth/tokens' and method == 'POST':
            return 201, {'X-Subject-Token': SERVICE_TOKEN}, _token_body(
                ['service', 'admin'], 'service', self._catalog())
        if path == '/v3/auth/tokens' and method == 'GET':
            if headers.get('X-Auth-Token') != SERVICE_TOKEN:
                return 401, {}, {'error': {'code': 401}}
            if subject in self.users:
                return 200, {'X-Subject-Token': subject}, _token_body(
                    self.users[subject], 'p-' + subject, [])
            return 404, {}, {'error': {'code': 404, 'message':
                                       'Could not find token'}}
        return 404, {}, {'error': {'code': 404}}

    def _handler_class(self):
        standin = self

        class Handler(http.server.BaseHTTPRequestHandler):

            def _reply(self):
                length = int(self.headers.get('Content-Length') or 0)
                if length:
                    self.rfile.read(length)
                status, headers, body = standin.answer(
                    self.command, self.path.split('?')[0], self.headers)
                raw = json.dumps(body).encode()
                self.send_response(status)
                for name, value in dict(
                        headers, **{'Content-Type': 'application/json',
                                    'Content-Length': str(len(raw))}
                ).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_HEAD = _reply

            def log_message(self, *args):
                pass

        return Handler
