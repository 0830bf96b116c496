"""The kube-apiserver stand-in's watch streams (fake_apiserver.py): the
history of changes they are served from, one JSON event a line
(chunked) from the resourceVersion asked for, ERROR 410 Expired for a
version older than the history, and their ending (a timeout, or the
test's ``end_watches()``)."""
import copy
import json
import time
import urllib.parse

from tests.unit.kubernetes.apiserver_http import ALL_CLAIMS
from tests.unit.kubernetes.apiserver_http import SLICES_RE
from tests.unit.kubernetes.apiserver_store import _field_filter


class Watches:
    """The stand-in's changes, and the watches that stream them."""

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
