"""The Adapters' requests session: the environment read once per host,
applied by requests' own rules."""
import http.server

from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
from oslo_config import cfg
import pytest
import requests
from requests import utils as rq_utils

from cyborg_lite.common import service_clients
from cyborg_lite.conf import _keystoneauth
from tests import servers


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers 200 and records the request line: a proxy is sent the
    whole URL, a server only its path."""

    def do_GET(self):
        self.server.lines.append(self.requestline)
        self.send_response(200)
        self.send_header('Content-Length', '0')
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def recorder():
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Recorder)
    server.lines = []
    servers.serve_in_thread(server)
    yield server
    server.shutdown()
    server.server_close()


def _url(server, path='/x'):
    return 'http://127.0.0.1:%d%s' % (server.server_address[1], path)


def _clear_proxy_env(monkeypatch):
    for name in ('http_proxy', 'https_proxy', 'all_proxy', 'no_proxy',
                 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE'):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.mark.parametrize('url', [
    'http://placement.example:8778/resource_providers',
    'http://127.0.0.1:8778/traits?name=in:A',
    'https://nova.example/v2.1/os-server-external-events',
    'http://internal.example/x',
])
@pytest.mark.parametrize('request_proxies', [{}, {'no_proxy': 'example'}])
def test_settings_equal_requests_own(monkeypatch, url, request_proxies):
    _clear_proxy_env(monkeypatch)
    monkeypatch.setenv('HTTP_PROXY', 'http://proxy.example:3128')
    monkeypatch.setenv('HTTPS_PROXY', 'http://tls-proxy.example:3128')
    monkeypatch.setenv('NO_PROXY', '127.0.0.1,internal.example')
    monkeypatch.setenv('REQUESTS_CA_BUNDLE', '/etc/ssl/bundle.pem')
    ours = service_clients.EnvironmentOnceSession()
    theirs = requests.Session()
    for _ in range(2):  # the second answer comes from what was read
        for verify in (None, True, False, '/other.pem'):
            assert (ours.merge_environment_settings(
                url, dict(request_proxies), None, verify, None) ==
                theirs.merge_environment_settings(
                    url, dict(request_proxies), None, verify, None))


def test_environment_read_once_per_host(monkeypatch):
    _clear_proxy_env(monkeypatch)
    reads = []
    real = rq_utils.get_environ_proxies

    def counting(url, no_proxy=None):
        reads.append(url)
        return real(url, no_proxy=no_proxy)

    monkeypatch.setattr(rq_utils, 'get_environ_proxies', counting)
    session = service_clients.EnvironmentOnceSession()
    for path in ('/a', '/b?c=d', '/a'):
        session.merge_environment_settings(
            'http://placement.example' + path, {}, None, None, None)
    session.merge_environment_settings(
        'http://nova.example/a', {}, None, None, None)
    assert reads == ['http://placement.example/a', 'http://nova.example/a']


def test_trust_env_off_reads_nothing(monkeypatch):
    _clear_proxy_env(monkeypatch)
    monkeypatch.setenv('HTTP_PROXY', 'http://proxy.example:3128')
    session = service_clients.EnvironmentOnceSession()
    session.trust_env = False
    settings = session.merge_environment_settings(
        'http://placement.example/', {}, None, None, None)
    assert settings['proxies'] == {}
    assert settings['verify'] is True


def _adapter(url):
    conf = cfg.ConfigOpts()
    _keystoneauth.register(conf, cfg.OptGroup('placement'), 'placement')
    conf([], default_config_files=[])
    conf.register_opts(ks_loading.get_auth_plugin_conf_options('none'),
                       group='placement')
    conf.set_override('auth_type', 'none', group='placement')
    conf.set_override('endpoint_override', url, group='placement')
    return service_clients.adapter_from_conf(conf, 'placement')


def test_adapter_keeps_keystoneauth_transport(recorder):
    adapter = _adapter(_url(recorder, ''))
    rq_session = adapter.session.session
    assert isinstance(rq_session, service_clients.EnvironmentOnceSession)
    assert all(isinstance(a, ks_session.TCPKeepAliveAdapter)
               for a in rq_session.adapters.values())
    assert adapter.get('/x', raise_exc=False).status_code == 200
    assert recorder.lines == ['GET /x HTTP/1.1']


def test_adapter_obeys_proxy_and_no_proxy(monkeypatch, recorder):
    _clear_proxy_env(monkeypatch)
    proxy = _url(recorder, '')
    monkeypatch.setenv('HTTP_PROXY', proxy)
    adapter = _adapter('http://placement.invalid')
    for _ in range(2):
        assert adapter.get('/x', raise_exc=False).status_code == 200
    # Sent to the proxy, as the whole URL.
    assert recorder.lines == ['GET http://placement.invalid/x HTTP/1.1'] * 2

    recorder.lines.clear()
    monkeypatch.setenv('NO_PROXY', '127.0.0.1')
    direct = _adapter(_url(recorder, ''))
    assert direct.get('/y', raise_exc=False).status_code == 200
    assert recorder.lines == ['GET /y HTTP/1.1']
