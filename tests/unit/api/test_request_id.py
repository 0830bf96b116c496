"""middleware.RequestId keeps oslo.middleware's RequestId contract: the
request id in the environ and the response, a caller's global request id
passed on only when it is one."""
import uuid

from oslo_context import context as oslo_context
from oslo_middleware import request_id
import pytest

from cyborg_lite.api import middleware


def _call(headers=(), app_headers=()):
    seen = {}

    def app(environ, start_response):
        seen.update(environ)
        start_response('204 No Content', list(app_headers))
        return [b'']

    started = []
    environ = {'REQUEST_METHOD': 'GET', 'PATH_INFO': '/'}
    environ.update(headers)
    middleware.RequestId(app)(environ,
                              lambda s, h, e=None: started.append(h))
    return seen, dict(started[0]), started[0]


def test_each_request_gets_an_id_in_the_environ_and_the_response():
    first, headers, _ = _call()
    second, _, _ = _call()
    req_id = first[request_id.ENV_REQUEST_ID]
    assert req_id.startswith('req-') and uuid.UUID(req_id[4:])
    assert headers[request_id.HTTP_RESP_HEADER_REQUEST_ID] == req_id
    assert second[request_id.ENV_REQUEST_ID] != req_id
    # oslo.context reads it from there, as from oslo.middleware's.
    ctx = oslo_context.RequestContext.from_environ(first)
    assert ctx.request_id == req_id


def test_a_callers_global_request_id_is_passed_on():
    global_id = 'req-%s' % uuid.uuid4()
    seen, _, _ = _call({'HTTP_X_OPENSTACK_REQUEST_ID': global_id})
    assert seen[request_id.GLOBAL_REQ_ID] == global_id
    ctx = oslo_context.RequestContext.from_environ(seen)
    assert ctx.global_request_id == global_id


@pytest.mark.parametrize('value', [
    'req-%s\n' % uuid.UUID(int=1),           # whole strings only
    'req-%s' % str(uuid.UUID(int=2 ** 128 - 1)).upper(),
    str(uuid.UUID(int=1)),
    'req-1234',
    '',
])
def test_anything_else_is_not_a_global_request_id(value):
    seen, _, _ = _call({'HTTP_X_OPENSTACK_REQUEST_ID': value})
    assert request_id.GLOBAL_REQ_ID not in seen


def test_a_request_id_the_app_set_is_not_doubled():
    _, _, started = _call(app_headers=[('X-OpenStack-Request-Id', 'x')])
    assert [v for k, v in started
            if k.lower() == request_id.HTTP_RESP_HEADER_REQUEST_ID] == ['x']
