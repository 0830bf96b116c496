"""A thin Placement client over a keystoneauth1 Adapter.

Every request is pinned to one microversion, sends and reads JSON, and
turns failures into cyborg_lite exceptions: ``PlacementUnavailable`` when
Placement cannot be reached or answers 5xx (the caller retries later),
``PlacementConflict`` on 409 (the caller re-reads and retries) and
``PlacementError`` otherwise. ``counts`` tallies requests by method so
tests and the bench can prove that an unchanged report writes nothing.
"""
import collections
import threading
import urllib.parse

from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.common import service_clients

LOG = logging.getLogger(__name__)

# 1.39 is openstack-placement 16.0.0's newest; the sync needs in_tree
# (1.31), required on /resource_providers (1.18), reserved == total
# (1.26) and error codes (1.23).
MICROVERSION = '1.39'
WRITE_METHODS = ('POST', 'PUT', 'PATCH', 'DELETE')


def adapter_from_conf(conf):
    """A keystoneauth1 Adapter built from the [placement] options."""
    return service_clients.adapter_from_conf(conf, 'placement')


class PlacementClient:
    """JSON requests to Placement through ``adapter``."""

    def __init__(self, adapter):
        self.adapter = adapter
        self.counts = collections.Counter()
        self._count_lock = threading.Lock()

    @classmethod
    def from_conf(cls, conf):
        return cls(adapter_from_conf(conf))

    @property
    def writes(self):
        return sum(self.counts[m] for m in WRITE_METHODS)

    def reset_counts(self):
        with self._count_lock:
            self.counts.clear()

    def request(self, method, url, body=None, ok=(200, 201, 204)):
        """Send one request; the decoded JSON body (or None) on success."""
        with self._count_lock:
            self.counts[method] += 1
        kwargs = {'microversion': MICROVERSION, 'raise_exc': False,
                  'headers': {'Accept': 'application/json'}}
        if body is not None:
            kwargs['json'] = body
        try:
            resp = self.adapter.request(url, method, **kwargs)
        except (ks_exc.ConnectionError, ks_exc.EndpointNotFound) as exc:
            # ConnectionError covers refused connections and timeouts.
            raise exception.PlacementUnavailable(method=method, url=url,
                                                 reason=str(exc))
        except ks_exc.ClientException as exc:
            # Authentication or discovery trouble: a configuration problem
            # to report, but still retried later like any failed sync.
            raise exception.PlacementError(method=method, url=url,
                                           status='no response',
                                           detail=str(exc))
        if resp.status_code in ok:
            return resp.json() if resp.content else None
        raise self._error(method, url, resp)

    @staticmethod
    def _error(method, url, resp):
        detail = resp.text[:500]
        try:
            errors = resp.json().get('errors') or [{}]
            # Schema errors quote the whole schema; keep the message short.
            detail = '%s (%s)' % (
                str(errors[0].get('detail', detail))[:500],
                errors[0].get('code', 'no code'))
        except ValueError:
            pass
        if resp.status_code >= 500:
            return exception.PlacementUnavailable(
                method=method, url=url,
                reason='%s %s' % (resp.status_code, detail))
        cls = (exception.PlacementConflict if resp.status_code == 409
               else exception.PlacementError)
        err = cls(method=method, url=url, status=resp.status_code,
                  detail=detail)
        err.status = resp.status_code
        err.error_code = _error_code(resp)
        return err

    def get(self, url):
        return self.request('GET', url)

    def put(self, url, body=None):
        return self.request('PUT', url, body)

    def post(self, url, body):
        return self.request('POST', url, body)

    def delete(self, url):
        return self.request('DELETE', url)

    def provider_named(self, name):
        """The provider Placement has under ``name`` (its JSON), or None."""
        found = self.get('/resource_providers?name=%s'
                         % urllib.parse.quote(name, safe=''))
        return (found['resource_providers'] or [None])[0]


def _error_code(resp):
    try:
        return (resp.json().get('errors') or [{}])[0].get('code')
    except ValueError:
        return None
