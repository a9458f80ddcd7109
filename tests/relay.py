"""A TCP relay on loopback that counts the bytes a server sends back through it.

Put between the service and its S3 server (the service's ``AWS_ENDPOINT_URL``), it tells
how many bytes the S3 server sent while something ran, such as ``complete``: a read of
the object back shows as its size.
"""

from __future__ import annotations

import socket
import threading
from types import TracebackType
from typing import Final, Self
from urllib.parse import urlparse

_BUFFER: Final = 1024 * 1024


class CountingRelay:
    def __init__(self, target_url: str) -> None:
        parsed = urlparse(target_url)
        self._target = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self._received = 0
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def received(self) -> int:
        """Bytes the server has sent back so far, over every connection."""
        with self._lock:
            return self._received

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(self._target)
            with self._lock:
                self._open += [client, server]
            threading.Thread(target=self._pipe, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, True), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, count: bool) -> None:
        buffer = bytearray(_BUFFER)
        view = memoryview(buffer)
        try:
            while n := source.recv_into(buffer):
                sink.sendall(view[:n])
                if count:
                    with self._lock:
                        self._received += n
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            for end in (source, sink):
                end.close()

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for end in self._open:
                end.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
