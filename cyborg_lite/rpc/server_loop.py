"""An RPC server plus one background loop thread: the agent's and the
conductor's shared lifecycle.

Subclasses call ``_init_rpc_loop()`` in ``__init__``, implement ``_loop()``
(which runs until ``self._stopping`` is set and sleeps on ``self._wake``),
and call ``_start_rpc_loop`` / ``_stop_rpc_loop`` from start/stop.
"""
import threading

from cyborg_lite.rpc import transport as rpc


class RpcLoop:

    def _init_rpc_loop(self):
        self._stopping = threading.Event()
        # Set to end the loop's sleep early (new work, or stopping).
        self._wake = threading.Event()
        self._thread = None
        self._server = None

    def _start_rpc_loop(self, topic, endpoints, thread_name):
        self._server = rpc.get_server(topic, self.host, endpoints)
        self._server.start()
        self._thread = threading.Thread(target=self._loop, name=thread_name,
                                        daemon=True)
        self._thread.start()

    def _stop_rpc_loop(self):
        """Stop taking RPC calls, let those in flight finish, end the
        loop; safe to call twice."""
        if self._server is not None:
            self._server.stop()
            self._server.wait()
            self._server = None
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _loop(self):
        raise NotImplementedError
