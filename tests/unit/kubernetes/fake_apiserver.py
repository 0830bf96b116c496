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

Its parts: apiserver_http.py (the HTTP serving and routing),
apiserver_store.py (the objects it stores) and apiserver_watch.py (the
watch streams); here, its state and what a test does to it.
"""
import copy
import threading
import uuid

from tests.unit.kubernetes import fake_claims
from tests.unit.kubernetes import schemas
from tests.unit.kubernetes.apiserver_http import ALL_CLAIMS
from tests.unit.kubernetes.apiserver_http import ApiError
from tests.unit.kubernetes.apiserver_http import CLAIM_RE
from tests.unit.kubernetes.apiserver_http import CLAIM_STATUS_RE
from tests.unit.kubernetes.apiserver_http import CLAIMS_RE
from tests.unit.kubernetes.apiserver_http import DRY_RUN
from tests.unit.kubernetes.apiserver_http import EVENTS_RE
from tests.unit.kubernetes.apiserver_http import LISTS
from tests.unit.kubernetes.apiserver_http import NODE_RE
from tests.unit.kubernetes.apiserver_http import NODES_PATH
from tests.unit.kubernetes.apiserver_http import RESOURCE
from tests.unit.kubernetes.apiserver_http import Serving
from tests.unit.kubernetes.apiserver_http import SLICES_RE
from tests.unit.kubernetes.apiserver_store import _unversioned
from tests.unit.kubernetes.apiserver_store import BINDING_FIELDS
from tests.unit.kubernetes.apiserver_store import IMMUTABLE
from tests.unit.kubernetes.apiserver_store import PER_DEVICE_NODES
from tests.unit.kubernetes.apiserver_store import SLICE_FIELDS
from tests.unit.kubernetes.apiserver_store import Store
from tests.unit.kubernetes.apiserver_watch import Watches

__all__ = ['ALL_CLAIMS', 'ApiError', 'BINDING_FIELDS', 'CLAIM_RE',
           'CLAIM_STATUS_RE', 'CLAIMS_RE', 'DRY_RUN', 'EVENTS_RE',
           'FakeKubeApiServer', 'IMMUTABLE', 'LISTS', 'NODE_RE',
           'NODES_PATH', 'PER_DEVICE_NODES', 'RESOURCE', 'SLICE_FIELDS',
           'SLICES_RE']


class FakeKubeApiServer(Serving, Store, Watches):
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
