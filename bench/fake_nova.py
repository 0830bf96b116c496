"""A stand-in for Nova's external-event API, stdlib only.

Both services send ``accelerator-request-bound`` events when an ARQ
becomes Bound (Cyborg does it inside the bind RPC call, so without a Nova
its bind fails after the ARQ is Bound). The API bench points both at this
server so each does the same HTTP notification. It answers version
discovery (any GET) and ``POST .../os-server-external-events`` with 200.
"""
import http.server
import json
import threading


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    # NOTE: buffered, so headers and body leave in one send (flushed after
    # each request): written apart, on a kept-alive connection, the body
    # waited for the client's delayed ACK of the headers (Nagle), 40 ms
    # per notification, which Nova's own server does not do.
    wbufsize = -1

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        base = 'http://%s:%d' % self.server.server_address
        version = {'id': 'v2.1', 'status': 'CURRENT', 'version': '2.96',
                   'min_version': '2.1',
                   'links': [{'rel': 'self', 'href': base + '/v2.1/'}]}
        if self.path.rstrip('/') in ('', '/'):
            self._send(300, {'versions': [version]})
        else:
            self._send(200, {'version': version})

    def do_POST(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = json.loads(self.rfile.read(length) or b'{}')
        if self.path.endswith('/os-server-external-events'):
            events = [dict(e, code=200) for e in body.get('events', [])]
            self.server.events += len(events)
            self._send(200, {'events': events})
        else:
            self._send(404, {'error': self.path})

    def log_message(self, *args):
        pass


class FakeNova:
    def __init__(self):
        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      _Handler)
        self.server.daemon_threads = True
        self.server.events = 0
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever,
                                        daemon=True)

    @property
    def events(self):
        return self.server.events

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
