"""The kube-apiserver stand-in's HTTP (fake_apiserver.py): the paths it
serves, a threaded server on a loopback port whose ``stop()`` cuts the
clients' connections as a restart does, the way in for a client (a
kubeconfig, an ApiClient), and the routing of a request to what the
stand-in stores, a refusal answered as the apiserver's Status."""
import copy
import http.server
import json
import re
import socket
import urllib.parse

import kubernetes

from tests import json_http
from tests import servers
from tests.unit.kubernetes import fake_claims

RESOURCE = '/apis/resource.k8s.io/v1'
SLICES_RE = re.compile(RESOURCE + r'/resourceslices(?:/([^/]+))?')
CLAIMS_RE = re.compile(RESOURCE + r'/namespaces/([^/]+)/resourceclaims')
CLAIM_RE = re.compile(RESOURCE + r'/namespaces/([^/]+)/resourceclaims/([^/]+)')
LISTS = {RESOURCE + '/deviceclasses': ('DeviceClassList', 'device_classes')}
EVENTS_RE = re.compile(r'/apis/events\.k8s\.io/v1/namespaces/([^/]+)/events')
ALL_CLAIMS = RESOURCE + '/resourceclaims'
CLAIM_STATUS_RE = re.compile(CLAIM_RE.pattern + '/status')
NODES_PATH = '/api/v1/nodes'
NODE_RE = re.compile(r'/api/v1/nodes/([^/]+)')
DRY_RUN = '?dryRun=All'     # how a dry run is recorded in ``requests``


class ApiError(Exception):
    """A request the stand-in refuses: answered as the apiserver's
    Status of ``code`` and ``reason``."""

    def __init__(self, code, reason, message):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


class Serving:
    """The stand-in's serving over HTTP and its routing of requests."""

    def start(self, port=0):
        """Serve on ``port`` (a free one by default; the same one again
        after ``stop()``, as an apiserver restart: the objects stay, as
        etcd keeps them)."""
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                with server._lock:
                    server._connections.add(self.connection)

            def finish(self):
                with server._lock:
                    server._connections.discard(self.connection)
                super().finish()

            def _serve(self):
                length = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(length) if length else b''
                if server.is_watch(self.command, self.path):
                    server.watch(self)
                    return
                code, obj = server.handle(self.command, self.path, body)
                json_http.send_json(self, code, obj)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

        self._httpd = http.server.ThreadingHTTPServer(('127.0.0.1', port),
                                                      Handler)
        self._httpd.daemon_threads = True
        self._running = True
        servers.serve_in_thread(self._httpd)
        return self

    def stop(self):
        """Stop serving; open watches are cut off (no last chunk) and every
        client's kept-alive connection closed, as a restart of the
        apiserver cuts them (a client must not be served by the stopped
        server over a connection it kept)."""
        with self._changed:
            self._running = False
            self._changed.notify_all()
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
        with self._lock:
            connections, self._connections = self._connections, set()
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass        # the client closed it first

    @property
    def port(self):
        return self._httpd.server_address[1]

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    def write_kubeconfig(self, path):
        """A kubeconfig file for this server at ``path`` (for
        k8s_client.new_api_client, the services' way in); its path."""
        with open(path, 'w') as f:
            json.dump({
                'apiVersion': 'v1', 'kind': 'Config',
                'current-context': 'stand-in',
                'clusters': [{'name': 'stand-in',
                              'cluster': {'server': self.url}}],
                'users': [{'name': 'tester', 'user': {'token': 'unused'}}],
                'contexts': [{'name': 'stand-in', 'context': {
                    'cluster': 'stand-in', 'user': 'tester'}}]}, f)
        return str(path)

    def api_client(self):
        configuration = kubernetes.client.Configuration()
        configuration.host = self.url
        return kubernetes.client.ApiClient(configuration)

    def handle(self, method, raw_path, body):
        url = urllib.parse.urlsplit(raw_path)
        query = dict(urllib.parse.parse_qsl(url.query))
        with self._lock:
            self.requests.append((method, url.path + (
                DRY_RUN if query.get('dryRun') == 'All' else '')))
            hook, self.before_write = (
                (self.before_write, None) if method != 'GET'
                else (None, self.before_write))
        if hook:
            hook(self)
        try:
            payload = json.loads(body) if body else None
            with self._lock:
                return self._route(method, url.path, query, payload)
        except ApiError as e:
            self.refused.append((e.code, e.message))
            return e.code, {'kind': 'Status', 'apiVersion': 'v1',
                            'metadata': {}, 'status': 'Failure',
                            'message': e.message, 'reason': e.reason,
                            'code': e.code}

    def _route(self, method, path, query, payload):
        match = SLICES_RE.fullmatch(path)
        if match and match.group(1) is None:
            if method == 'GET':
                return self._list(query)
            if method == 'DELETE':
                return self._delete_collection(query)
            if method == 'POST':
                return self._create(payload, query.get('dryRun') == 'All')
        elif match:
            name = match.group(1)
            if method == 'GET':
                return 200, self._get(name)
            if method == 'PUT':
                return self._replace(name, payload)
            if method == 'DELETE':
                return self._delete(name, payload)
        if path.startswith(ALL_CLAIMS) or CLAIM_STATUS_RE.fullmatch(path):
            return fake_claims.route(self, method, path, payload)
        if path in LISTS and method == 'GET':
            kind, store = LISTS[path]
            return 200, {'apiVersion': 'resource.k8s.io/v1', 'kind': kind,
                         'metadata': {'resourceVersion': str(self._version)},
                         'items': [copy.deepcopy(o) for _, o in sorted(
                             getattr(self, store).items())]}
        match = EVENTS_RE.fullmatch(path)
        if match and method == 'POST':
            return self._create_event(match.group(1), payload)
        match = CLAIMS_RE.fullmatch(path)
        if match and method == 'POST':
            return self._create_claim(match.group(1), payload)
        match = CLAIM_RE.fullmatch(path)
        if match and method in ('GET', 'DELETE'):
            claim = self.claims.get(match.groups())
            if claim is None:
                raise ApiError(404, 'NotFound', 'resourceclaims "%s" not '
                               'found' % match.group(2))
            if method == 'DELETE':
                del self.claims[match.groups()]
                if claim['metadata'].get('resourceVersion'):
                    self._record_deletion(claim)    # watched claims
            return 200, claim
        if path == NODES_PATH and method == 'GET':
            return 200, {'apiVersion': 'v1', 'kind': 'NodeList',
                         'metadata': {}, 'items': [
                             n for _, n in sorted(self.nodes.items())]}
        match = NODE_RE.fullmatch(path)
        if match and method == 'GET':
            node = self.nodes.get(match.group(1))
            if node is None:
                raise ApiError(404, 'NotFound', 'nodes "%s" not found'
                               % match.group(1))
            return 200, node
        raise ApiError(404, 'NotFound', 'no route %s %s in the stand-in'
                       % (method, path))
