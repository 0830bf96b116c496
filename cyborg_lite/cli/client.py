"""HTTP client for the accelerator API, on a keystoneauth1 session.

The same class serves both front ends: the standalone ``cyborg-lite`` app
builds the session itself (noauth endpoint or Keystone from OS_*), the
OpenStackClient plugin hands over the session OSC already authenticated.

Every call sends ``OpenStack-API-Version: accelerator <version>`` and turns
an HTTP error into :class:`ApiError`, whose text is the API's own one-line
fault string, so the command line can print it without a traceback.
"""
import json
import urllib.parse

SERVICE_TYPE = 'accelerator'
# 2.3 is Cyborg's current maximum and what python-cyborgclient sends; the
# bitstream/program round may raise it if those APIs need a newer version.
DEFAULT_API_VERSION = '2.3'
VERSION_PREFIX = '/v2'


class ClientError(Exception):
    """A failure the CLI reports as one line (no traceback)."""

    def __init__(self, message):
        # NOTE: messages end up on one stderr line; an API text with
        # newlines would break that promise.
        super().__init__(' '.join(str(message).split()))


class ApiError(ClientError):
    """The API answered with an error status."""

    def __init__(self, status, message):
        self.status = status
        super().__init__('%s (HTTP %s)' % (message, status))


def normalize_endpoint(url):
    """The v2 base URL, whether given as the API root or as .../v2."""
    url = url.rstrip('/')
    if not url.endswith(VERSION_PREFIX):
        url += VERSION_PREFIX
    return url


def _fault_from_json(body):
    """Cyborg's fault string, from ``{"error_message": "<json string>"}``."""
    inner = body.get('error_message') if isinstance(body, dict) else None
    if isinstance(inner, str):
        try:
            inner = json.loads(inner)
        except ValueError:
            return inner
    if isinstance(inner, dict):
        return inner.get('faultstring') or inner.get('message')
    # NOTE: Placement-style bodies, in case a proxy or a newer API uses them.
    errors = body.get('errors') if isinstance(body, dict) else None
    if errors and isinstance(errors, list):
        return errors[0].get('detail') or errors[0].get('title')
    return None


def error_message(response):
    """The best one-line description of a failed response."""
    try:
        message = _fault_from_json(response.json())
    except ValueError:
        message = None
    if not message:
        text = (response.text or '').strip()
        message = text.splitlines()[0] if text else response.reason
    return message or 'HTTP error'


def _next_page_params(links):
    """The query of the "next" link, or None on the last page."""
    for link in links or ():
        if link.get('rel') == 'next':
            query = urllib.parse.urlsplit(link['href']).query
            # The href is built from the API's idea of its own URL, which
            # may not be ours (proxies); only its marker/limit matter.
            return dict(urllib.parse.parse_qsl(query))
    return None


class Client:
    """Thin JSON client: paths are relative to the v2 endpoint."""

    def __init__(self, session, endpoint, api_version=DEFAULT_API_VERSION):
        # NOTE: imported here, not at the top: commands import this module
        # and `cyborg-lite --help` should not pay for keystoneauth.
        from keystoneauth1 import adapter
        self.endpoint = normalize_endpoint(endpoint)
        self.api_version = api_version
        self._adapter = adapter.Adapter(
            session, service_type=SERVICE_TYPE,
            endpoint_override=self.endpoint,
            default_microversion=api_version,
            # Per-request headers win (a download will ask for bytes).
            additional_headers={'Accept': 'application/json'})

    def request(self, method, path, **kwargs):
        """The raw response (for streaming); raises ClientError on failure.

        ``kwargs`` go to keystoneauth (json, params, data, stream, headers).
        """
        from keystoneauth1 import exceptions as ksa_exc
        try:
            response = self._adapter.request(path, method, raise_exc=False,
                                             **kwargs)
        except ksa_exc.ConnectFailure:
            # keystoneauth's text repeats the URL and urllib3's internals.
            raise ClientError('Unable to connect to %s' % self.endpoint)
        except ksa_exc.ClientException as exc:
            # Keystone refusing the credentials, a timeout, a missing auth
            # option: all keystoneauth failures, all one line.
            raise ClientError('%s %s: %s' % (method, path, exc))
        if response.status_code >= 400:
            raise ApiError(response.status_code, error_message(response))
        return response

    def _json(self, method, path, **kwargs):
        response = self.request(method, path, **kwargs)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    def get(self, path, params=None):
        return self._json('GET', path, params=params)

    def get_all(self, path, key, params=None):
        """Every item of a list, following ``<key>_links`` "next" pages
        (the API returns at most [api]max_limit items per request)."""
        params = dict(params or {})
        items = []
        while True:
            body = self.get(path, params=params)
            items.extend(body[key])
            next_params = _next_page_params(body.get(key + '_links'))
            if next_params is None:
                return items
            params.update(next_params)

    def post(self, path, body):
        return self._json('POST', path, json=body)

    def put(self, path, body):
        return self._json('PUT', path, json=body)

    def patch(self, path, body):
        return self._json('PATCH', path, json=body)

    def delete(self, path, params=None):
        return self._json('DELETE', path, params=params)
