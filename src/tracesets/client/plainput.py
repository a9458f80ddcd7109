"""PUTs to plain http:// URLs with the file's bytes handed to the kernel (``sendfile``),
on one kept-alive connection per sending thread.

Through httpx every MiB is read into Python and passed through httpcore and h11. Sending
128 MiB in 64 PUTs from 8 threads to a loopback sink took 0.09 to 0.12 s of CPU that way
and 0.03 to 0.05 s with ``sendfile`` (bench/README): CPU the service needs on the same
cores. https:// URLs (S3's), a proxy, and a transport given for tests go through httpx
as before.

The answer is an ``httpx.Response`` and a failure to reach the server an
``httpx.TransportError``, so retries, rewinds and the checks of the answer are the same
code for both ways of sending.
"""

from __future__ import annotations

import http.client
import select
import threading
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

import httpx

from tracesets.client.errors import ClientError

#: Bytes handed to ``sendfile`` at a time: the progress moves, and Ctrl-C is heard, between.
BLOCK: Final = 1024 * 1024


def usable() -> bool:
    """No proxy is set for http:// (httpx would send through it; this does not)."""
    return not urllib.request.getproxies().get("http")


class PlainPuts:
    """PUTs on plain HTTP/1.1 connections, one per thread, kept while the server keeps them."""

    def __init__(self, timeout: float, headers: Mapping[str, str]) -> None:
        self._timeout = timeout
        self._headers = dict(headers)
        self._local = threading.local()
        self._open: set[http.client.HTTPConnection] = set()
        self._lock = threading.Lock()

    def send(
        self,
        url: str,
        headers: Mapping[str, str],
        path: Path,
        offset: int,
        length: int,
        moved: Callable[[int], None],
    ) -> httpx.Response:
        """PUT ``length`` bytes of ``path`` from ``offset``; ``moved(count)`` as they go
        (it may raise to stop the PUT, whose connection is then closed)."""
        target = urlsplit(url)
        where = target.path + (f"?{target.query}" if target.query else "")
        connection = self._connection(target.hostname or "", target.port or 80)
        try:
            try:
                self._request(connection, where or "/", headers, path, offset, length, moved)
            except OSError as exc:
                # The server may have answered and closed before taking the whole body (a
                # refusal): its answer says more than the broken pipe, as httpx reads it too.
                answer = _early_answer(connection)
                if answer is None:
                    raise _transport_error(exc, httpx.WriteError) from exc
            else:
                answer = connection.getresponse()
            body = answer.read()
        except (OSError, http.client.HTTPException) as exc:
            connection.close()  # the next PUT on this thread connects again
            raise _transport_error(exc, httpx.ReadError) from exc
        except BaseException:
            connection.close()  # half a body went: the connection cannot be reused
            raise
        if answer.will_close:
            connection.close()
        return httpx.Response(
            answer.status,
            headers=answer.getheaders(),
            content=body,
            request=httpx.Request("PUT", url),
        )

    def _request(
        self,
        connection: http.client.HTTPConnection,
        where: str,
        headers: Mapping[str, str],
        path: Path,
        offset: int,
        length: int,
        moved: Callable[[int], None],
    ) -> None:
        connection.putrequest("PUT", where, skip_accept_encoding=True)
        for name, value in {**self._headers, **headers}.items():
            connection.putheader(name, value)
        connection.endheaders()
        sock = connection.sock
        if sock is None:
            raise ConnectionResetError("the connection closed before the body")
        with path.open("rb") as source:
            sent = 0
            while sent < length:
                count = sock.sendfile(source, offset + sent, min(BLOCK, length - sent))
                if count == 0:
                    raise ClientError(
                        f"{path} became shorter while it was being uploaded", sent=False
                    )
                sent += count
                moved(count)

    def _connection(self, host: str, port: int) -> http.client.HTTPConnection:
        """This thread's connection to ``host:port``; a fresh one if the server closed it."""
        connections: dict[tuple[str, int], http.client.HTTPConnection] | None
        connections = getattr(self._local, "connections", None)
        if connections is None:
            connections = self._local.connections = {}
        kept = connections.get((host, port))
        if kept is not None and kept.sock is not None and _closed_by_server(kept):
            kept.close()
        if kept is None:
            kept = http.client.HTTPConnection(host, port, timeout=self._timeout)
            connections[(host, port)] = kept
            with self._lock:
                self._open.add(kept)
        return kept

    def close(self) -> None:
        with self._lock:
            for connection in self._open:
                connection.close()
            self._open.clear()


def _closed_by_server(connection: http.client.HTTPConnection) -> bool:
    """An idle connection with something to read: the server's close (or garbage)."""
    assert connection.sock is not None
    try:
        readable, _, _ = select.select([connection.sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _early_answer(connection: http.client.HTTPConnection) -> http.client.HTTPResponse | None:
    """The answer a server sent before it closed, if there is one to read."""
    try:
        return connection.getresponse()
    except (OSError, http.client.HTTPException):
        return None


def _transport_error(exc: Exception, phase: type[httpx.TransportError]) -> httpx.TransportError:
    """``exc`` as httpx names it: retried as httpx's own failures are."""
    if isinstance(exc, ConnectionRefusedError):
        return httpx.ConnectError(str(exc))
    if isinstance(exc, TimeoutError):
        return (
            httpx.WriteTimeout(str(exc))
            if phase is httpx.WriteError
            else httpx.ReadTimeout(str(exc))
        )
    if isinstance(exc, http.client.HTTPException):
        return httpx.RemoteProtocolError(str(exc) or type(exc).__name__)
    return phase(str(exc) or type(exc).__name__)
