"""Bind notifiers: the log notifier, and the Nova one against a real HTTP
server on loopback."""
import http.server
import json
import logging

import pytest

from cyborg_lite.common import exception
from cyborg_lite.conductor import bind
from cyborg_lite.conductor import notifier
from tests import json_http
from tests import servers
from tests.unit.conductor import bind_helpers as h


class FakeNova(http.server.ThreadingHTTPServer):
    """Answers POST /v2.1/os-server-external-events as told, and records."""

    def __init__(self):
        super().__init__(('127.0.0.1', 0), _Handler)
        self.requests = []
        self.reply = (200, None)
        self.url = 'http://127.0.0.1:%d/v2.1' % self.server_address[1]


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers['Content-Length'])
        body = json.loads(self.rfile.read(length))
        self.server.requests.append((self.path, dict(self.headers), body))
        status, reply = self.server.reply
        if reply is None:
            reply = {'events': [dict(e, code=status)
                                for e in body['events']]}
        json_http.send_json(self, status, reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def nova(conf):
    server = FakeNova()
    servers.serve_in_thread(server)
    conf.set_override('auth_type', 'none', group='nova')
    conf.set_override('endpoint_override', server.url, group='nova')
    yield server
    server.shutdown()
    server.server_close()


EVENTS = [notifier.make_event('arq-1', 'inst-1', True),
          notifier.make_event('arq-2', 'inst-2', False)]


def test_nova_notifier_sends_the_external_events(nova):
    assert notifier.load('nova').notify(None, EVENTS) == {
        'arq-1': 200, 'arq-2': 200}
    [(path, headers, body)] = nova.requests
    assert path == '/v2.1/os-server-external-events'
    assert headers['OpenStack-API-Version'] == 'compute 2.82'
    assert body == {'events': [
        {'name': 'accelerator-request-bound', 'server_uuid': 'inst-1',
         'tag': 'arq-1', 'status': 'completed'},
        {'name': 'accelerator-request-bound', 'server_uuid': 'inst-2',
         'tag': 'arq-2', 'status': 'failed'}]}


def test_nova_207_with_422s_is_tolerated(nova, caplog):
    nova.reply = (207, {'events': [
        {'tag': 'arq-1', 'code': 200, 'status': 'completed'},
        {'tag': 'arq-2', 'code': 422, 'status': 'failed'}]})
    with caplog.at_level(logging.INFO, logger=notifier.__name__):
        codes = notifier.NovaNotifier().notify(None, EVENTS)
    assert codes == {'arq-1': 200, 'arq-2': 422}
    assert any('422' in r.getMessage() and r.levelno == logging.INFO
               for r in caplog.records)


def test_nova_422_is_tolerated(nova):
    nova.reply = (422, {'itemNotFound': {'message': 'no host'}})
    assert notifier.NovaNotifier().notify(None, EVENTS) == {
        'arq-1': 422, 'arq-2': 422}


def test_nova_errors_never_reach_the_caller(nova, caplog):
    nova.reply = (500, {'computeFault': {}})
    with caplog.at_level(logging.ERROR, logger=notifier.__name__):
        assert notifier.NovaNotifier().notify(None, EVENTS) == {
            'arq-1': 500, 'arq-2': 500}
    assert 'HTTP 500' in caplog.text


def test_unreachable_nova_is_logged(conf, caplog):
    conf.set_override('auth_type', 'none', group='nova')
    conf.set_override('endpoint_override', 'http://127.0.0.1:%d'
                      % servers.free_port(), group='nova')
    conf.set_override('connect_retries', 0, group='nova')
    with caplog.at_level(logging.ERROR, logger=notifier.__name__):
        assert notifier.NovaNotifier().notify(None, EVENTS) == {}
    assert 'Could not send 2' in caplog.text


def test_events_without_instance_are_not_sent(nova):
    only = [notifier.make_event('arq-3', None, False)]
    assert notifier.NovaNotifier().notify(None, only) == {}
    assert nova.requests == []


def test_bind_tells_nova_through_config(db, nova):
    nova.reply = (200, None)
    region = h.make_region()
    arq_uuid = h.make_arq()
    wanted = h.binding(region)
    bind.bind_arqs(None, {arq_uuid: wanted}, notifier=notifier.load('nova'))
    [(_path, _headers, body)] = nova.requests
    assert body['events'] == [{'name': 'accelerator-request-bound',
                               'server_uuid': wanted['instance_uuid'],
                               'tag': arq_uuid, 'status': 'completed'}]


def test_log_notifier_logs_bound_and_failed(db, caplog):
    region = h.make_region(handles=1)
    good, bad = h.make_arqs(2)
    with caplog.at_level(logging.INFO, logger=notifier.__name__):
        bind.bind_arqs(None, {good: h.binding(region),
                              bad: h.binding(region)},
                       notifier=notifier.load('log'))
    lines = [r.getMessage() for r in caplog.records
             if r.name == notifier.__name__]
    assert len(lines) == 2
    assert ('ARQ %s' % good in lines[0]
            and lines[0].endswith('bind completed'))
    assert 'ARQ %s' % bad in lines[1] and lines[1].endswith('bind failed')


def test_default_notifier_is_log(conf):
    assert conf.arq.notifier == 'log'
    assert isinstance(notifier.load(), notifier.LogNotifier)


def test_notifier_by_import_path_and_unknown_name(conf):
    path = 'tests.unit.conductor.bind_helpers:RecordingNotifier'
    assert isinstance(notifier.load(path), h.RecordingNotifier)
    with pytest.raises(exception.NotifierNotFound, match='log'):
        notifier.load('carrier-pigeon')
    with pytest.raises(exception.NotifierNotFound):
        notifier.load('no.such.module:Notifier')


def test_a_failing_notifier_does_not_fail_the_bind(db):
    class Broken:
        def notify(self, ctxt, events):
            raise RuntimeError('down')
    region = h.make_region()
    arq_uuid = h.make_arq()
    assert bind.bind_arqs(None, {arq_uuid: h.binding(region)},
                          notifier=Broken()) == {arq_uuid: 'Bound'}
