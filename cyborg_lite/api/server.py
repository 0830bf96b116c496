"""The threaded HTTP server of the all-in-one: cheroot, in a thread.

Why cheroot and not waitress: waitress reads every request body (into
memory, then a temporary file) before the application runs, and applies
its own limit of 1 GiB with a plain-text 413. So an image of exactly
``[bitstreams] max_size_mb`` (1024 by default) was refused, a larger
limit had no effect, an oversized Content-Length got its 413 only once
the whole body had been sent, and an upload with neither a length nor
chunked encoding arrived as an empty body (400, not 411). cheroot hands
the application the socket as ``wsgi.input``: the API's own checks
(middleware.BodySizeLimit, handlers/bitstream_file) answer 413 and 411,
in JSON, from the headers alone, and the upload streams to disk. cheroot
(CherryPy's server) is a pure-Python threaded server, maintained, with
keep-alive and chunked request bodies.

``cyborg-lite-api`` uses gunicorn, which streams request bodies as well.

A response given before the whole request body was read (a 413 from the
headers, or mid-upload) closes the connection with a lingering close:
cheroot would close at once, and the kernel answers the bytes the client
is still sending with a reset, which can reach the client before it has
read the response (it then sees "broken pipe", not the 413). So the
server sends its FIN, then reads and discards what still comes, for a
bounded time, before closing (RFC 9112 section 9.6; Apache's and nginx's
lingering close).

What cheroot answers itself, before the application runs (a malformed
request line or header, a framing it cannot trust), is in the API's JSON
error form too (``_Request.simple_response``). Its framing is as strict
as gunicorn's: a Content-Length is ASCII digits, given once, and never
beside Transfer-Encoding (RFC 9112 section 6.3); anything else is a 400
and the connection closes, since where the next request starts is then
unknown.
"""
import http
import re
import socket
import threading
import time

from cheroot import errors as cheroot_errors
from cheroot import server as cheroot_server
from cheroot import wsgi

from cyborg_lite.api import fault

THREADS = 8
# As waitress's defaults: a generous header limit, a deep listen queue.
MAX_HEADER_BYTES = 256 * 1024
LISTEN_BACKLOG = 1024
# Seconds a connection may stay silent (mid-upload included).
SOCKET_TIMEOUT = 60
# Lingering close: at most this long in all, and this long per silent read
# (Apache's values); the worker thread is held meanwhile.
LINGER_SECONDS = 30
LINGER_READ_SECONDS = 2


def _body_left_unread(rfile):
    if isinstance(rfile, cheroot_server.ChunkedRFile):
        return not rfile.closed
    return getattr(rfile, 'remaining', 0) > 0


def _discard_until_quiet(sock):
    """Half-close ``sock``, then read and drop what the client still sends
    until it closes, falls silent, or the time is up."""
    deadline = time.monotonic() + LINGER_SECONDS
    try:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(LINGER_READ_SECONDS)
        while time.monotonic() < deadline and sock.recv(65536):
            pass
    except OSError:   # a timeout, or the client reset it: done either way
        pass


_DIGITS = re.compile(rb'[0-9]+')


class _Headers(dict):
    """cheroot's dict of request headers: a second Content-Length is a
    ValueError, which cheroot answers with a 400 (it keeps the last one)."""

    def __setitem__(self, name, value):
        if name == b'Content-Length' and name in self:
            raise ValueError('Content-Length given more than once.')
        super().__setitem__(name, value)


def _framing_error(headers):
    """Why the body's framing cannot be trusted, or None."""
    length = headers.get(b'Content-Length')
    if length is None:
        return None
    if not _DIGITS.fullmatch(length):
        return 'Malformed Content-Length header: %r is not a number of ' \
               'bytes.' % length.decode('latin-1')
    if b'Transfer-Encoding' in headers:
        return 'Content-Length and Transfer-Encoding are both given.'
    return None


class _Request(cheroot_server.HTTPRequest):
    def read_request_headers(self):
        self.inheaders = _Headers()
        if not super().read_request_headers():
            return False
        error = _framing_error(self.inheaders)
        if error:
            self.simple_response('400 Bad Request', error)
            return False
        return True

    def simple_response(self, status, msg=''):
        """cheroot's own answer (no application behind it), as JSON in
        Cyborg's error form for an error; the connection closes after it.
        """
        code = int(str(status)[:3])
        if code < 400:
            return super().simple_response(status, msg)
        if isinstance(msg, bytes):
            msg = msg.decode('latin-1')
        body = fault.error_body(code, msg or http.HTTPStatus(code).phrase)
        self.close_connection = True
        head = ['%s %s' % (self.server.protocol, status),
                'Content-Type: application/json',
                'Content-Length: %d' % len(body), 'Connection: close']
        try:
            self.conn.wfile.write(
                ('\r\n'.join(head) + '\r\n\r\n').encode('latin-1') + body)
        except OSError as exc:
            if exc.args[0] not in cheroot_errors.socket_errors_to_ignore:
                raise

    def respond(self):
        super().respond()
        if self.close_connection and _body_left_unread(self.rfile):
            self.conn.body_left_unread = True


class _Connection(cheroot_server.HTTPConnection):
    RequestHandlerClass = _Request
    body_left_unread = False

    def close(self):
        if self.body_left_unread and not self.linger:
            _discard_until_quiet(self.socket)
        super().close()


class Server:
    """``app`` served on host:port; ``start()`` binds (an error such as a
    port in use is raised there) and serves from a daemon thread."""

    def __init__(self, app, host, port, threads=THREADS):
        self._server = wsgi.Server(
            (host, port), app, numthreads=threads,
            request_queue_size=LISTEN_BACKLOG, timeout=SOCKET_TIMEOUT,
            server_name='cyborg-lite')
        self._server.ConnectionClass = _Connection
        # Body limits are the application's (JSON errors, per route).
        self._server.max_request_body_size = 0
        self._server.max_request_header_size = MAX_HEADER_BYTES
        self._thread = None

    @property
    def port(self):
        """The bound port (useful when asked for port 0)."""
        return self._server.bind_addr[1]

    def start(self):
        self._server.prepare()
        self._thread = threading.Thread(target=self._server.serve,
                                        name='api', daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._server.stop()
        if self._thread is not None:
            self._thread.join(timeout=30)
