"""List, then watch, in a thread of its own: the loop of an informer's
reflector, shared by the watches of slices and of claims.

The objects are listed, then watched from the list's resourceVersion
until the server ends the watch (``WATCH_SECONDS``), then listed again.
After a 410 Gone (that version is compacted away) or a broken connection
(an apiserver restart) they are listed again at once; a refused
connection waits ``backoff`` seconds, doubling, logged by
k8s_client.OUTAGE. Nothing is polled: between events the watch waits on
the open connection. A subclass says what it lists (``_list()``, which
returns the list's resourceVersion) and follows (``_follow(version)``,
one watch, kept in ``self._watch`` so that ``stop()`` can end it).
"""
import logging
import threading
import time

import kubernetes
import urllib3

from cyborg_lite.kubernetes import client as k8s_client

LOG = logging.getLogger(__name__)

# Seconds the server keeps one watch open before it ends it (client-go
# asks for 5 to 10 minutes); the watch is opened again at once.
WATCH_SECONDS = 300
# Seconds without a byte (the server sends none while nothing changes)
# after which the connection is taken as dead.
READ_TIMEOUT = WATCH_SECONDS + 30
CONNECT_TIMEOUT = 10
GONE = 410
# Seconds stop() waits for the watch thread to end.
STOP_WAIT = 30


class ListWatch:
    """``KIND`` (ResourceSlice, ResourceClaim) names it in logs and its
    thread."""
    KIND = None

    def __init__(self, backoff):
        self.backoff = backoff
        self._watch = None
        self._stopping = threading.Event()
        self._thread = None

    def start(self):
        self._thread = threading.Thread(
            target=self._run, daemon=True, name='%s-watch' % self.KIND.lower())
        self._thread.start()
        return self

    def stop(self):
        self._stopping.set()
        if self._thread is None:
            return
        deadline = time.monotonic() + STOP_WAIT
        while self._thread.is_alive() and time.monotonic() < deadline:
            # NOTE: again and again: a watch stopped before its request
            # went out starts anyway (Watch.stream resets the flag), but
            # one in flight has its socket shut.
            watch = self._watch
            if watch is not None:
                watch.stop()
            self._thread.join(0.1)

    def _list(self):
        raise NotImplementedError

    def _follow(self, version):
        raise NotImplementedError

    def _run(self):
        wait = self.backoff[0]
        while not self._stopping.is_set():
            try:
                version = self._list()
                wait = self.backoff[0]
                self._follow(version)
            except kubernetes.client.exceptions.ApiException as e:
                if e.status == GONE:
                    LOG.info('%s watch expired (%s): listing again',
                             self.KIND, e.reason)
                    continue
                self._failed(e)
            except (urllib3.exceptions.HTTPError, OSError) as e:
                if self._stopping.is_set():
                    return
                self._failed(e)
            except Exception:   # keep watching whatever happened
                LOG.exception('%s watch failed', self.KIND)
            self._stopping.wait(wait)
            wait = min(wait * 2, self.backoff[1])

    def _failed(self, error):
        if k8s_client.is_outage(error):
            k8s_client.OUTAGE.failed(k8s_client.KubernetesUnreachable(
                reason='watch %ss: %s' % (self.KIND, error)))
        else:
            LOG.warning('%s watch refused: %s', self.KIND, error)
