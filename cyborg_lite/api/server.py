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
"""
import threading

from cheroot import wsgi

THREADS = 8
# As waitress's defaults: a generous header limit, a deep listen queue.
MAX_HEADER_BYTES = 256 * 1024
LISTEN_BACKLOG = 1024
# Seconds a connection may stay silent (mid-upload included).
SOCKET_TIMEOUT = 60


class Server:
    """``app`` served on host:port; ``start()`` binds (an error such as a
    port in use is raised there) and serves from a daemon thread."""

    def __init__(self, app, host, port, threads=THREADS):
        self._server = wsgi.Server(
            (host, port), app, numthreads=threads,
            request_queue_size=LISTEN_BACKLOG, timeout=SOCKET_TIMEOUT,
            server_name='cyborg-lite')
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
