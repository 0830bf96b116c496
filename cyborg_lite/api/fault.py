"""Error bodies in Cyborg's form, and the fault-wrap middleware.

Every error response has the body Cyborg's ParsableErrorMiddleware makes::

    {"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"...\",
                        \"debuginfo\": null}"}

The outer value is a JSON *string* (Cyborg inherited that from WSME);
openstacksdk decodes it and shows ``faultstring``, so keep it that way.
"""
import json
import sys

from oslo_log import log
import webob
import webob.exc

LOG = log.getLogger(__name__)


def error_body(status, message):
    fault = {'faultcode': 'Server' if status >= 500 else 'Client',
             'faultstring': message, 'debuginfo': None}
    return json.dumps({'error_message': json.dumps(fault)}).encode('utf-8')


def error_response(status, message, headers=None):
    """A webob Response carrying ``message`` in Cyborg's error form."""
    resp = webob.Response(status=status, body=error_body(status, message),
                          content_type='application/json', charset=None)
    for name, value in headers or ():
        resp.headers[name] = value
    return resp


def _explanation(status):
    cls = webob.exc.status_map.get(status)
    return getattr(cls, 'explanation', None) or 'HTTP error %d.' % status


def _message_of(body, content_type, status):
    """The message of an error body someone else made (a middleware's,
    keystonemiddleware's 401): a JSON ``message`` if there is one, else
    the standard explanation of the status (never the HTML of a page)."""
    if 'json' in (content_type or ''):
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if isinstance(data, dict):
            if 'error_message' in data:
                return None  # already in Cyborg's form
            inner = data.get('error', data)
            if isinstance(inner, dict) and inner.get('message'):
                return str(inner['message'])
    return _explanation(status)


class FaultWrapper:
    """Turns any error response into Cyborg's form, and any exception that
    escapes the application into a JSON 500 without a traceback (the
    traceback goes to the log, with the request id to find it).

    Success bodies pass through untouched and unbuffered (a bitstream
    download may be large); only error bodies are read and rewritten.
    """

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        state = {}

        def capture(status, headers, exc_info=None):
            state['status'] = int(status.split(' ', 1)[0])
            state['status_line'] = status
            state['headers'] = headers
            if state['status'] < 400:
                state['started'] = True
                return start_response(status, headers, exc_info)
            return lambda data: None

        try:
            app_iter = self.app(environ, capture)
            if state.get('status', 500) < 400:
                return app_iter
            try:
                body = b''.join(app_iter)
            finally:
                if hasattr(app_iter, 'close'):
                    app_iter.close()
        except Exception:
            request_id = environ.get('openstack.request_id')
            LOG.exception('Unexpected error in request %s', request_id)
            resp = error_response(
                500, 'Unexpected API error; the service log has the '
                     'details under request id %s.' % request_id)
            # NOTE: exc_info lets a server replace headers the app had
            # already started with a success status (and only then may be
            # given: PEP 3333 servers re-raise it otherwise).
            start_response(resp.status, resp.headerlist,
                           sys.exc_info() if state.get('started') else None)
            return resp.app_iter
        return self._rewrap(state, body)(environ, start_response)

    @staticmethod
    def _rewrap(state, body):
        headers = [(k, v) for k, v in state['headers']
                   if k.lower() not in ('content-length', 'content-type')]
        content_type = dict((k.lower(), v) for k, v in state['headers']).get(
            'content-type')
        message = _message_of(body, content_type, state['status'])
        if message is None:
            resp = webob.Response(status=state['status_line'], body=body,
                                  content_type='application/json',
                                  charset=None)
            for name, value in headers:
                resp.headers.add(name, value)
            return resp
        resp = error_response(state['status'], message)
        resp.status = state['status_line']
        for name, value in headers:
            resp.headers.add(name, value)
        return resp
