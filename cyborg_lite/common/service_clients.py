"""keystoneauth1 Adapters for the services cyborg_lite calls.

[placement], [nova] and [image_api] each hold keystoneauth's standard
session, auth and adapter options (conf/_keystoneauth.py); this builds
the Adapter one of those groups describes. The callers own what goes
over it (placement/client.py, conductor/notifier.py,
agent/image_fetch.py).
"""
import os
import threading
import urllib.parse

from keystoneauth1 import loading as ks_loading
import requests
from requests import sessions as rq_sessions
from requests import utils as rq_utils

# Distinct (scheme, host, no_proxy) a process calls: a handful of
# services; the bound only stops a caller with ever-new hosts growing it.
_MAX_ENVIRONMENTS = 64


def adapter_from_conf(conf, group, **kwargs):
    """An Adapter from the options of ``group``; ``kwargs`` are Adapter
    defaults such as ``default_microversion`` or ``raise_exc``."""
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    session = ks_loading.load_session_from_conf_options(conf, group,
                                                        auth=auth)
    session.session = EnvironmentOnceSession.replacing(session.session)
    return ks_loading.load_adapter_from_conf_options(
        conf, group, session=session, auth=auth, **kwargs)


class EnvironmentOnceSession(requests.Session):
    """A requests Session that reads the proxy environment once per host.

    requests looks the proxies (``*_proxy``, ``no_proxy``) and the CA
    bundle up in the process environment on every request, walking all
    of ``os.environ`` three times: about 1 ms a request with a few dozen
    variables, half of a Placement request's client CPU (a Kubernetes
    pod's environment, one variable set per Service, makes it worse).
    A service reads its environment at start, as it reads its
    configuration; so this reads it on the first request to each scheme
    and host and applies the same answer afterwards, by requests' own
    rules.
    """

    def __init__(self):
        super().__init__()
        self._environments = {}
        self._lock = threading.Lock()

    @classmethod
    def replacing(cls, original):
        """One of these with ``original``'s transport adapters (those
        keystoneauth mounts: TCP keep-alive, its TLS options)."""
        session = cls()
        session.adapters = original.adapters
        return session

    def merge_environment_settings(self, url, proxies, stream, verify, cert):
        if self.trust_env:
            env_proxies, env_verify = self._environment(url, proxies)
            if proxies is not None:
                for key, value in env_proxies.items():
                    proxies.setdefault(key, value)
            if verify is True or verify is None:
                verify = env_verify or verify
        return {'proxies': rq_sessions.merge_setting(proxies, self.proxies),
                'stream': rq_sessions.merge_setting(stream, self.stream),
                'verify': rq_sessions.merge_setting(verify, self.verify),
                'cert': rq_sessions.merge_setting(cert, self.cert)}

    def _environment(self, url, proxies):
        no_proxy = proxies.get('no_proxy') if proxies is not None else None
        parts = urllib.parse.urlsplit(url)
        # requests decides a bypass by host and port alone.
        key = (parts.scheme, parts.netloc, no_proxy)
        found = self._environments.get(key)
        if found is None:
            found = (rq_utils.get_environ_proxies(url, no_proxy=no_proxy),
                     os.environ.get('REQUESTS_CA_BUNDLE')
                     or os.environ.get('CURL_CA_BUNDLE'))
            with self._lock:
                if len(self._environments) >= _MAX_ENVIRONMENTS:
                    self._environments.clear()
                self._environments[key] = found
        return found
