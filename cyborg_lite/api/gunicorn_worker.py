"""cyborg-lite-api's gunicorn worker: gunicorn's threaded one (gthread),
whose own answers are in the API's JSON error form too.

gunicorn answers some requests before the application sees them: one it
cannot parse or whose body it cannot frame (a malformed or repeated
Content-Length, Content-Length beside Transfer-Encoding, a bad request
line or header). Its answer is an HTML page; every error the service
sends is Cyborg's JSON error body (api/fault.py). gunicorn has no hook for
that page, so ``handle_error`` hands it a socket that writes the same
status with the JSON body instead.
"""
import http

from gunicorn.workers import gthread

from cyborg_lite.api import fault


class _JsonErrorSocket:
    """The client's socket, as gunicorn's ``handle_error`` writes its error
    page to it (one ``sendall`` of the whole response)."""

    def __init__(self, sock, detail):
        self._sock = sock
        self._detail = detail

    def __getattr__(self, name):
        return getattr(self._sock, name)

    def sendall(self, data):
        status_line = data.split(b'\r\n', 1)[0]
        code = int(status_line.split()[1])
        # NOTE: a 500 is a bug of ours: its detail goes to the log only.
        message = (self._detail if code < 500 and self._detail
                   else http.HTTPStatus(code).phrase)
        body = fault.error_body(code, message)
        head = b'\r\n'.join([status_line, b'Connection: close',
                             b'Content-Type: application/json',
                             b'Content-Length: %d' % len(body)])
        self._sock.sendall(head + b'\r\n\r\n' + body)


class ThreadWorker(gthread.ThreadWorker):
    """gthread, with its error answers in JSON."""

    def handle_error(self, req, client, addr, exc):
        super().handle_error(req, _JsonErrorSocket(client, str(exc)), addr,
                             exc)
