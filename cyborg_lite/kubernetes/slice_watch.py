"""Notice when someone else deletes or changes our ResourceSlices.

The conductor writes a host's slices when the database changes; anything
else that removes them would leave the host's devices unscheduled for
good. The kubelet does so on purpose: it deletes its node's slices of a
driver (a DeleteCollection filtered by spec.nodeName and spec.driver) at
every kubelet start and 30 s after the driver's plugin stops being usable
(wipeResourceSlices, pkg/kubelet/cm/dra/plugin); an operator may delete
or edit one too. Like the resourceslice controller of
k8s.io/dynamic-resource-allocation, ``SliceWatch`` lists and watches our
driver's slices through the client's watch (kubernetes.watch) and tells
``changed(node)`` about a slice of a node it publishes that was deleted,
added or modified by anyone but this process; the sink then syncs that
node again (kubernetes/resync.py), which writes only what differs.

One watch for all the nodes this conductor publishes, selected by
``spec.driver`` (the field selector the controller and the kubelet use),
not one per node. The watch is opened from the list's resourceVersion and
again from the last one seen each time the server ends it
(kubernetes/list_watch.py). Each list after the first is compared with
the slices known, so what changed while no watch was open (a 410 Gone,
an apiserver restart) is seen too.

Our own writes are told apart by ``OwnWrites``: the resourceVersion each
answer of a create or update carried, and the uid of each slice deleted
(an event that comes while one of our writes is in flight waits for it).
"""
import collections
import contextlib
import logging
import threading
import time

import kubernetes

from cyborg_lite.kubernetes import client as k8s_client
from cyborg_lite.kubernetes import list_watch

LOG = logging.getLogger(__name__)

# Deletes remembered until their event comes back; writes of one slice
# remembered (their events may come after the next write).
MAX_OWN_DELETES = 10000
MAX_VERSIONS_PER_SLICE = 8
# Seconds an event waits for our writes in flight before it is taken as
# someone else's (at worst, one sync too many).
MAX_WRITE_WAIT = 30


class OwnWrites:
    """What this process wrote to the slices, as its watch will see it.

    A write's event may reach the watch before its answer reaches the
    writer; so a write is made inside ``writing()``, and ``is_own`` waits
    for the writes in flight before it calls an event someone else's.
    """

    def __init__(self):
        self._cond = threading.Condition()
        self._in_flight = 0
        # name: the resourceVersions our last writes of it were given
        self._versions = collections.defaultdict(
            lambda: collections.deque(maxlen=MAX_VERSIONS_PER_SLICE))
        self._deleted = collections.OrderedDict()    # uid: None

    @contextlib.contextmanager
    def writing(self):
        with self._cond:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._cond:
                self._in_flight -= 1
                self._cond.notify_all()

    def wrote(self, obj):
        meta = obj['metadata']
        with self._cond:
            self._versions[meta['name']].append(meta.get('resourceVersion'))
            self._cond.notify_all()

    def deleted(self, obj):
        """``obj`` is about to be deleted by us."""
        meta = obj['metadata']
        with self._cond:
            self._versions.pop(meta['name'], None)
            if meta.get('uid'):
                self._deleted[meta['uid']] = None
                while len(self._deleted) > MAX_OWN_DELETES:
                    self._deleted.popitem(last=False)

    def not_deleted(self, obj):
        """The delete noted with ``deleted`` did not happen."""
        with self._cond:
            self._deleted.pop(obj['metadata'].get('uid'), None)

    def is_own(self, kind, obj):
        """Whether the event ``kind`` of ``obj`` is one of our writes."""
        deadline = time.monotonic() + MAX_WRITE_WAIT
        with self._cond:
            while not self._is_own(kind, obj):
                left = deadline - time.monotonic()
                if not self._in_flight or left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def _is_own(self, kind, obj):
        meta = obj['metadata']
        if kind == 'DELETED':
            if meta.get('uid') in self._deleted:
                del self._deleted[meta['uid']]
                return True
            return False
        versions = self._versions.get(meta['name'], ())
        return meta.get('resourceVersion') in versions


class _Known:
    """A slice as last seen: its node, version and uid."""

    __slots__ = ('node', 'version', 'uid')

    def __init__(self, obj):
        self.node = obj['spec'].get('nodeName')
        self.version = obj['metadata'].get('resourceVersion')
        self.uid = obj['metadata'].get('uid')


class SliceWatch(list_watch.ListWatch):
    """Watches the slices of ``driver_name`` in a thread of its own; calls
    ``changed(node)`` (from that thread) for each node of ``nodes`` whose
    slices someone else changed."""
    KIND = 'ResourceSlice'

    def __init__(self, api_client, driver_name, nodes, changed, own,
                 backoff=(0.5, 30.0)):
        super().__init__(backoff)
        self._resource = kubernetes.client.ResourceV1Api(api_client)
        self.selector = 'spec.driver=%s' % driver_name
        self.nodes = frozenset(nodes)
        self.changed = changed
        self.own = own
        self._known = None          # name: _Known, once listed

    def _list(self):
        """List the slices, tell about those changed since the last list
        (none the first time), and return the list's resourceVersion."""
        body = k8s_client.raw_json(self._resource.list_resource_slice(
            field_selector=self.selector, _preload_content=False,
            _request_timeout=(list_watch.CONNECT_TIMEOUT,
                              list_watch.READ_TIMEOUT)))
        k8s_client.OUTAGE.succeeded()
        listed = {o['metadata']['name']: o for o in body.get('items') or []}
        if self._known is not None:
            self._compare(listed)
        self._known = {name: _Known(o) for name, o in listed.items()}
        return body['metadata']['resourceVersion']

    def _compare(self, listed):
        """Tell about the nodes of ours whose slices differ from those
        known by more than our own writes."""
        nodes = set()
        for name, known in self._known.items():
            obj = listed.get(name)
            if known.node not in self.nodes or known.node in nodes:
                continue
            if obj is None:
                gone = {'metadata': {'name': name, 'uid': known.uid}}
                if not self.own.is_own('DELETED', gone):
                    nodes.add(known.node)
            elif obj['metadata'].get('resourceVersion') != known.version \
                    and not self.own.is_own('MODIFIED', obj):
                nodes.add(known.node)
        for name, obj in listed.items():
            node = obj['spec'].get('nodeName')
            if name not in self._known and node in self.nodes and \
                    node not in nodes and not self.own.is_own('ADDED', obj):
                nodes.add(node)
        for node in sorted(nodes):
            self.changed(node)

    def _follow(self, version):
        """Follow the watch from ``version`` until it breaks or we stop."""
        while not self._stopping.is_set():
            self._watch = kubernetes.watch.Watch()
            for event in self._watch.stream(
                    self._resource.list_resource_slice,
                    field_selector=self.selector, resource_version=version,
                    allow_watch_bookmarks=True,
                    timeout_seconds=list_watch.WATCH_SECONDS,
                    _request_timeout=(list_watch.CONNECT_TIMEOUT,
                              list_watch.READ_TIMEOUT)):
                version = self._seen(event) or version
            self._watch = None

    def _seen(self, event):
        """Note one event; its resourceVersion."""
        kind, obj = event['type'], event['raw_object']
        version = obj.get('metadata', {}).get('resourceVersion')
        if kind == 'BOOKMARK':
            return version
        name = obj['metadata']['name']
        if kind == 'DELETED':
            self._known.pop(name, None)
        else:
            self._known[name] = _Known(obj)
        node = obj['spec'].get('nodeName')
        if node in self.nodes and not self.own.is_own(kind, obj):
            LOG.info('ResourceSlice %s of node %s %s by someone else: '
                     'publishing the node again', name, node, kind.lower())
            self.changed(node)
        return version
