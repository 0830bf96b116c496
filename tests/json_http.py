"""Stand-ins for HTTP services in tests: a JSON answer."""
import json


def send_json(handler, status, body):
    """Answer the request ``handler`` serves with ``body`` as JSON."""
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header('Content-Type', 'application/json')
    handler.send_header('Content-Length', str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
