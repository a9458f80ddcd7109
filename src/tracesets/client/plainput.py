"""PUTs to plain http:// URLs with the file's bytes handed to the kernel (``sendfile``),
on kept-alive connections shared by the sending threads (one each at a time).

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
import socket
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


Address = tuple[str, int]


class PlainPuts:
    """PUTs on plain HTTP/1.1 connections: each PUT takes an idle one to its server (or
    opens one) and gives it back after a whole answer, so no more stay open than PUTs
    ran at once, however many uploads the client makes."""

    def __init__(self, timeout: float, headers: Mapping[str, str]) -> None:
        self._timeout = timeout
        self._headers = dict(headers)
        self._idle: dict[Address, list[http.client.HTTPConnection]] = {}
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
        address = (target.hostname or "", target.port or 80)
        connection = self._take(address)
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
            connection.close()
            raise _transport_error(exc, httpx.ReadError) from exc
        except BaseException:
            connection.close()  # half a body went: the connection cannot be reused
            raise
        if answer.will_close:
            connection.close()
        else:
            with self._lock:
                self._idle.setdefault(address, []).append(connection)
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

    def _take(self, address: Address) -> http.client.HTTPConnection:
        """An idle connection to ``address`` the server has not closed, or a new one."""
        while True:
            with self._lock:
                idle = self._idle.get(address)
                kept = idle.pop() if idle else None
            if kept is None:
                return http.client.HTTPConnection(*address, timeout=self._timeout)
            if kept.sock is not None and not _closed_by_server(kept.sock):
                return kept
            kept.close()

    def close(self) -> None:
        with self._lock:
            for connections in self._idle.values():
                for connection in connections:
                    connection.close()
            self._idle.clear()


def _closed_by_server(sock: socket.socket) -> bool:
    """An idle connection with something to read: the server's close (or garbage)."""
    poll = select.poll()
    poll.register(sock, select.POLLIN)
    try:
        return bool(poll.poll(0))
    except OSError:
        return True


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
