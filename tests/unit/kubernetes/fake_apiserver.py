"""A small stand-in for kube-apiserver, on a loopback port, for the real
``kubernetes`` client.

It serves exactly the paths cyborg_lite and its real-cluster test use:
resource.k8s.io/v1 resourceslices (list and watch with field selectors
spec.nodeName / spec.driver, create, get, replace, delete with
preconditions, DeleteCollection as the kubelet's wipe), resourceclaims
(get; create and delete for the real-cluster test; list across namespaces),
deviceclasses (list), events.k8s.io/v1 events (create) and core v1 nodes
(get, list). It behaves as the real one does where our code depends on
it: resourceVersion on every write and 409 Conflict on a stale one, 409
AlreadyExists, 404 NotFound, immutable fields, taint timeAdded filled in,
and every body validated against the strict schemas of Kubernetes
1.34-1.37 plus the apiserver's rules the schemas omit (422 Invalid), so a
bad object fails the test that wrote it.
It answers a create with ``dryRun=All`` without storing it, and plays the
DRADeviceTaints and DRAPartitionableDevices feature gates both ways
(``device_taints``, ``partitionable_devices``: off, their fields are
dropped as the real apiserver's dropDisabledFields does), and the counter
rules of 1.34 (``counter_sets_with_devices``) or of 1.35 on.
Watches stream one JSON event a line (chunked) from the resourceVersion
asked, a DELETED event carrying the deletion's own version; a version
older than the history (``compact()``) gets an ERROR event 410 Expired;
``stop()`` cuts the streams as a restart does, and ``start(port)`` serves
the same objects again. Claims of every namespace are listed and watched,
and their status replaced, as fake_claims.py serves them; it plays the
DRADeviceBindingConditions gate both ways too (``binding_conditions``).
"""
import copy
import datetime
import http.server
import json
import re
import socket
import threading
import time
import urllib.parse
import uuid

import kubernetes

from tests import servers
from tests.unit.kubernetes import fake_claims
from tests.unit.kubernetes import schemas

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
SLICE_FIELDS = {'metadata.name': lambda s: s['metadata']['name'],
                'spec.nodeName': lambda s: s['spec'].get('nodeName'),
                'spec.driver': lambda s: s['spec'].get('driver')}
IMMUTABLE = ('driver', 'nodeName')
DRY_RUN = '?dryRun=All'     # how a dry run is recorded in ``requests``
PER_DEVICE_NODES = ('nodeName', 'nodeSelector', 'allNodes')
BINDING_FIELDS = ('bindingConditions', 'bindingFailureConditions',
                  'bindsToNode')


class ApiError(Exception):
    def __init__(self, code, reason, message):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


def _rfc3339(text):
    """A timestamp as the apiserver stores and returns it (UTC, ``Z``);
    now when unset."""
    if not text:
        return _now()
    try:
        when = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    except ValueError:
        raise ApiError(400, 'BadRequest', 'bad time %r' % text)
    return when.astimezone(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


def _unversioned(obj):
    return dict(obj, metadata={k: v for k, v in obj['metadata'].items()
                               if k != 'resourceVersion'})


def _field_filter(selector):
    terms = []
    for term in filter(None, (selector or '').split(',')):
        field, sep, value = term.partition('=')
        value = value[1:] if value.startswith('=') else value
        if not sep or field not in SLICE_FIELDS:
            raise ApiError(400, 'BadRequest',
                           'field label not supported: %s' % field)
        terms.append((SLICE_FIELDS[field], value))
    return lambda obj: all(get(obj) == value for get, value in terms)


class FakeKubeApiServer:
    """State and behaviour; ``start()`` serves it over HTTP."""

    def __init__(self):
        self.slices = {}
        self.claims = {}
        self.device_classes = {}
        self.k8s_events = []         # events.k8s.io/v1 Events created
        self.nodes = {}
        self.requests = []           # (method, path) of every request
        self.refused = []            # (code, message) of every error sent
        self.before_write = None     # hook: called once before a write
        # The DRADeviceTaints feature gate (on by default from 1.36): off,
        # the taints of a device are dropped as the real apiserver's
        # dropDisabledFields does, unless the stored slice has some.
        self.device_taints = True
        # The DRAPartitionableDevices gate (on by default from 1.36): off,
        # sharedCounters, consumesCounters and per-device node selection
        # are dropped, unless the stored slice uses them. With
        # ``counter_sets_with_devices`` (1.34 with the gate on) a device
        # must consume from a counter set of its own slice.
        self.partitionable_devices = True
        self.counter_sets_with_devices = False
        # DRADeviceBindingConditions (beta, on from 1.36): off, the binding
        # (failure) conditions and bindsToNode of devices are dropped.
        self.binding_conditions = True
        self._version = 0
        self._lock = threading.Lock()
        self._httpd = None
        # The sockets of the clients' open connections: a stop cuts them.
        self._connections = set()
        # Watches: every change of a slice as (resourceVersion, type,
        # object), from the oldest not yet compacted away.
        self._events = []
        self._compacted = 0
        self._changed = threading.Condition(self._lock)
        self._running = False
        self.watches = 0            # slice watch streams open now
        self.watches_opened = 0
        self.claim_watches = 0      # claim watch streams open now
        self._watches_ended = 0     # end_watches() calls
        self._watch_gate = threading.Event()
        self._watch_gate.set()

    # --- test set-up ---------------------------------------------------
    def add_node(self, name):
        self.nodes[name] = {'apiVersion': 'v1', 'kind': 'Node',
                            'metadata': {'name': name,
                                         'uid': str(uuid.uuid4())}}
        return self.nodes[name]['metadata']['uid']

    def put_claim(self, claim):
        """Store ``claim`` as it is (no event for the watches), with a
        resourceVersion if it has none: every object the apiserver
        serves has one."""
        claim = copy.deepcopy(claim)
        meta = claim['metadata']
        with self._lock:
            meta.setdefault('resourceVersion', self._next_version())
            self.claims[(meta['namespace'], meta['name'])] = claim

    def write_claim(self, claim):
        """Store ``claim`` with a new resourceVersion if it changed."""
        claim = copy.deepcopy(claim)
        meta = claim['metadata']
        key = (meta['namespace'], meta['name'])
        with self._lock:
            old = self.claims.get(key)
            if old is not None and _unversioned(old) == _unversioned(claim):
                return
            fake_claims.put(self, claim)

    def put_device_class(self, device_class):
        assert schemas.schema_errors(device_class) == []
        self.device_classes[device_class['metadata']['name']] = \
            copy.deepcopy(device_class)

    def add_claim(self, claim):
        """Store ``claim`` as a write does: a resourceVersion, an event
        for the watches of claims (fake_claims.put)."""
        with self._lock:
            return copy.deepcopy(fake_claims.put(self, copy.deepcopy(claim)))

    @property
    def writes(self):
        """The requests that could change something (not dry runs)."""
        return [r for r in self.requests
                if r[0] in ('POST', 'PUT', 'DELETE', 'PATCH')
                and not r[1].endswith(DRY_RUN)]

    @property
    def dry_runs(self):
        return [r for r in self.requests if r[1].endswith(DRY_RUN)]

    # --- HTTP ----------------------------------------------------------
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
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

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

    # --- resourceslices --------------------------------------------------
    def _next_version(self):
        self._version += 1
        return str(self._version)

    def _list(self, query):
        keep = _field_filter(query.get('fieldSelector'))
        items = [copy.deepcopy(s) for _, s in sorted(self.slices.items())
                 if keep(s)]
        return 200, {'apiVersion': 'resource.k8s.io/v1',
                     'kind': 'ResourceSliceList',
                     'metadata': {'resourceVersion': str(self._version)},
                     'items': items}

    def _get(self, name):
        if name not in self.slices:
            raise ApiError(404, 'NotFound', 'resourceslices.resource.k8s.io '
                           '"%s" not found' % name)
        return copy.deepcopy(self.slices[name])

    def _validate(self, obj):
        errors = schemas.schema_errors(obj) + schemas.slice_rule_errors(
            obj, self.counter_sets_with_devices)
        if errors:
            raise ApiError(422, 'Invalid', '; '.join(errors))

    def _stamp(self, obj, old=None):
        meta = obj['metadata']
        meta['resourceVersion'] = self._next_version()
        meta.setdefault('uid', old['metadata']['uid'] if old
                        else str(uuid.uuid4()))
        meta.setdefault('creationTimestamp', _now())
        for device in obj['spec'].get('devices') or []:
            for taint in device.get('taints') or []:
                taint['timeAdded'] = _rfc3339(taint.get('timeAdded'))
        return obj

    def _drop_disabled_fields(self, obj, old=None):
        old_spec = old['spec'] if old is not None else {}
        old_devices = old_spec.get('devices') or []
        devices = obj['spec'].get('devices') or []
        if not (self.device_taints or any(d.get('taints')
                                          for d in old_devices)):
            for device in devices:
                device.pop('taints', None)
        partitioned = old_spec.get('sharedCounters') or \
            'perDeviceNodeSelection' in old_spec or any(
                d.get('consumesCounters') or set(d) & set(PER_DEVICE_NODES)
                for d in old_devices)
        if not (self.binding_conditions or any(
                set(d) & set(BINDING_FIELDS) for d in old_devices)):
            for device in devices:
                for field in BINDING_FIELDS:
                    device.pop(field, None)
        if not (self.partitionable_devices or partitioned):
            obj['spec'].pop('sharedCounters', None)
            obj['spec'].pop('perDeviceNodeSelection', None)
            for device in devices:
                for field in ('consumesCounters',) + PER_DEVICE_NODES:
                    device.pop(field, None)

    def _create(self, obj, dry_run=False):
        """A create; with ``dry_run`` (dryRun=All) the object is completed
        and checked as for a real one, answered, and not stored."""
        self._drop_disabled_fields(obj)
        self._validate(obj)
        name = obj['metadata'].get('name')
        if name in self.slices:
            raise ApiError(409, 'AlreadyExists', 'resourceslices.resource.'
                           'k8s.io "%s" already exists' % name)
        if obj['metadata'].get('resourceVersion'):
            raise ApiError(400, 'BadRequest', 'resourceVersion should not '
                           'be set on objects to be created')
        if dry_run:     # completed, not stored: no resourceVersion
            for device in obj['spec'].get('devices') or []:
                for taint in device.get('taints') or []:
                    taint['timeAdded'] = _rfc3339(taint.get('timeAdded'))
            return 201, obj
        self.slices[name] = self._stamp(obj)
        self._record('ADDED', obj)
        return 201, copy.deepcopy(obj)

    def _replace(self, name, obj):
        old = self._get(name)
        self._drop_disabled_fields(obj, old)
        self._validate(obj)
        if obj['metadata'].get('name') != name:
            raise ApiError(400, 'BadRequest', 'the name of the object does '
                           'not match the name on the URL')
        if obj['metadata'].get('resourceVersion') != \
                old['metadata']['resourceVersion']:
            raise ApiError(409, 'Conflict', 'Operation cannot be fulfilled '
                           'on resourceslices.resource.k8s.io "%s": the '
                           'object has been modified' % name)
        for field in IMMUTABLE:
            if obj['spec'].get(field) != old['spec'].get(field):
                raise ApiError(422, 'Invalid', 'spec.%s: field is immutable'
                               % field)
        if obj['spec']['pool']['name'] != old['spec']['pool']['name']:
            raise ApiError(422, 'Invalid', 'spec.pool.name: field is '
                           'immutable')
        self.slices[name] = self._stamp(obj, old)
        self._record('MODIFIED', obj)
        return 200, copy.deepcopy(obj)

    def _delete(self, name, options):
        old = self._get(name)
        wanted = ((options or {}).get('preconditions') or {}).get(
            'resourceVersion')
        if wanted and wanted != old['metadata']['resourceVersion']:
            raise ApiError(409, 'Conflict', 'Precondition failed: '
                           'ResourceVersion in precondition: %s, '
                           'ResourceVersion in object meta: %s'
                           % (wanted, old['metadata']['resourceVersion']))
        del self.slices[name]
        self._record_deletion(old)
        return 200, old

    def _delete_collection(self, query):
        """DELETE of the collection, as the kubelet's wipe of a node's
        slices (a field selector on spec.nodeName and spec.driver)."""
        keep = _field_filter(query.get('fieldSelector'))
        gone = [s for _, s in sorted(self.slices.items()) if keep(s)]
        for obj in gone:
            del self.slices[obj['metadata']['name']]
            self._record_deletion(obj)
        return 200, {'apiVersion': 'resource.k8s.io/v1',
                     'kind': 'ResourceSliceList',
                     'metadata': {'resourceVersion': str(self._version)},
                     'items': gone}

    def _record_deletion(self, obj):
        # NOTE: a deletion has a resourceVersion of its own, which its
        # DELETED event's object carries (as etcd's watch gives it).
        obj = copy.deepcopy(obj)
        obj['metadata']['resourceVersion'] = self._next_version()
        self._record('DELETED', obj)

    def _record(self, kind, obj):
        """A change for the watches; called with the lock held."""
        self._events.append((int(obj['metadata']['resourceVersion']), kind,
                             copy.deepcopy(obj)))
        self._changed.notify_all()

    def _create_claim(self, namespace, claim):
        errors = schemas.schema_errors(claim)
        if errors:
            raise ApiError(422, 'Invalid', '; '.join(errors))
        meta = claim['metadata']
        if meta.get('namespace', namespace) != namespace:
            raise ApiError(400, 'BadRequest', 'namespace mismatch')
        if (namespace, meta['name']) in self.claims:
            raise ApiError(409, 'AlreadyExists', 'resourceclaims "%s" '
                           'already exists' % meta['name'])
        meta.update(namespace=namespace, uid=str(uuid.uuid4()),
                    resourceVersion=self._next_version(),
                    creationTimestamp=_now())
        claim.pop('status', None)
        self.claims[(namespace, meta['name'])] = claim
        return 201, copy.deepcopy(claim)

    def _create_event(self, namespace, event):
        errors = schemas.schema_errors(event) + schemas.event_rule_errors(
            event)
        if errors:
            raise ApiError(422, 'Invalid', '; '.join(errors))
        meta = event['metadata']
        if meta.get('namespace', namespace) != namespace:
            raise ApiError(400, 'BadRequest', 'namespace mismatch')
        if any(e['metadata']['name'] == meta['name'] and e['metadata'][
                'namespace'] == namespace for e in self.k8s_events):
            raise ApiError(409, 'AlreadyExists', 'events.events.k8s.io '
                           '"%s" already exists' % meta['name'])
        meta.update(namespace=namespace, uid=str(uuid.uuid4()),
                    resourceVersion=self._next_version(),
                    creationTimestamp=_now())
        self.k8s_events.append(event)
        return 201, copy.deepcopy(event)

    # --- what a concurrent writer does -----------------------------------
    def touch_slice(self, name):
        """Another writer updates the slice: its resourceVersion moves."""
        with self._lock:
            self.slices[name]['metadata']['resourceVersion'] = \
                self._next_version()
            self._record('MODIFIED', self.slices[name])

    def compact(self):
        """Forget the history of changes, as etcd's compaction does: a
        watch from an older resourceVersion gets 410 Gone."""
        with self._lock:
            self._compacted = self._version
            self._events = []

    # --- watch -------------------------------------------------------------
    def end_watches(self, hold=False):
        """End the open watches as their timeout would (a last chunk); with
        ``hold``, new watches wait for ``release_watches()``."""
        if hold:
            self._watch_gate.clear()
        with self._changed:
            self._watches_ended += 1
            self._changed.notify_all()

    def release_watches(self):
        self._watch_gate.set()

    def is_watch(self, method, raw_path):
        url = urllib.parse.urlsplit(raw_path)
        query = dict(urllib.parse.parse_qsl(url.query))
        return (method == 'GET' and query.get('watch') in ('true', '1')
                and (url.path == ALL_CLAIMS or (
                    SLICES_RE.fullmatch(url.path) is not None
                    and SLICES_RE.fullmatch(url.path).group(1) is None)))

    def watch(self, handler):
        """Stream the changes of the selected slices after the
        resourceVersion asked for, one JSON event a line, until
        timeoutSeconds pass or the server stops; a version older than the
        history kept is an ERROR event with 410 Expired, as the real
        apiserver answers it."""
        url = urllib.parse.urlsplit(handler.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        with self._lock:
            self.requests.append(('GET', url.path + '?watch'))
        self._watch_gate.wait()
        kind = 'ResourceClaim' if url.path == ALL_CLAIMS else 'ResourceSlice'
        selected = _field_filter(query.get('fieldSelector'))

        def keep(obj):
            return obj.get('kind', kind) == kind and (
                kind == 'ResourceClaim' or selected(obj))
        deadline = time.monotonic() + float(query.get('timeoutSeconds')
                                            or 1800)
        handler.send_response(200)
        handler.send_header('Content-Type', 'application/json')
        handler.send_header('Transfer-Encoding', 'chunked')
        handler.end_headers()
        handler.close_connection = True
        with self._lock:
            if kind == 'ResourceClaim':
                self.claim_watches += 1
            else:
                self.watches += 1
                self.watches_opened += 1
            since = query.get('resourceVersion')
            if since and int(since) < self._compacted:
                pending = [('ERROR', {
                    'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
                    'status': 'Failure', 'reason': 'Expired', 'code': 410,
                    'message': 'too old resource version: %s (%d)'
                               % (since, self._compacted)})]
                deadline = 0
            elif since:
                pending = []
            else:       # from now, the current objects first
                pending = [('ADDED', copy.deepcopy(o)) for _, o in sorted(
                    (self.claims if kind == 'ResourceClaim'
                     else self.slices).items())]
            position = int(since) if since else self._version
            ended = self._watches_ended
        try:
            self._stream(handler, keep, pending, position, deadline, ended)
        except OSError:
            pass        # the client went away
        finally:
            with self._lock:
                if kind == 'ResourceClaim':
                    self.claim_watches -= 1
                else:
                    self.watches -= 1

    def _stream(self, handler, keep, pending, position, deadline, ended):
        while True:
            for kind, obj in pending:
                line = json.dumps({'type': kind, 'object': obj}) + '\n'
                data = line.encode()
                handler.wfile.write(b'%x\r\n%s\r\n' % (len(data), data))
            handler.wfile.flush()
            with self._changed:
                while self._running and time.monotonic() < deadline and \
                        self._watches_ended == ended and \
                        not any(rv > position for rv, _, _ in self._events):
                    self._changed.wait(min(1.0, max(
                        0, deadline - time.monotonic())))
                if not self._running:
                    return      # cut off: no last chunk
                if time.monotonic() >= deadline or \
                        self._watches_ended != ended:
                    break
                new = [e for e in self._events if e[0] > position]
                position = new[-1][0]
                pending = [(kind, copy.deepcopy(obj))
                           for _, kind, obj in new if keep(obj)]
        handler.wfile.write(b'0\r\n\r\n')
