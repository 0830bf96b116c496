"""The apiserver stand-in restarts as an apiserver does: what a client
kept open to the stopped one is cut, so nothing is served while it is
down (a watch relisting over a kept connection once saw the stopped
server's objects: tests/functional/kubernetes/test_slice_watch.py)."""
import http.client

import pytest

NODE = '/api/v1/nodes/node-1'


def _get(conn):
    conn.request('GET', NODE)
    response = conn.getresponse()
    return response.status, response.read()


def test_a_stop_cuts_the_connections_clients_kept(apiserver):
    conn = http.client.HTTPConnection('127.0.0.1', apiserver.port,
                                      timeout=10)
    assert _get(conn)[0] == 200     # kept alive (HTTP/1.1)
    port = apiserver.port

    apiserver.stop()

    with pytest.raises((http.client.HTTPException, OSError)):
        _get(conn)
    conn.close()
    apiserver.start(port=port)
    again = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
    assert _get(again)[0] == 200
    again.close()
