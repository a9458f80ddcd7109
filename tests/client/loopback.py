"""A small HTTP/1.1 server on loopback for the plain-connection tests: it accepts, counts
connections and serves each on a thread of its own; the tests' subclasses answer."""

from __future__ import annotations

import socket
import threading


class LoopbackServer:
    def __init__(self) -> None:
        self.connections = 0
        self.lock = threading.Lock()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                peer, _ = self.server.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(peer,), daemon=True).start()

    def _serve(self, peer: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.server.close()
