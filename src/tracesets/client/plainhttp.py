"""Requests to plain http:// URLs on Python's own ``http.client``, on kept-alive
connections shared by the client's threads (one each at a time): PUTs with the file's
bytes handed to the kernel (``sendfile``), the GETs of a download, and the API's
requests that have no query (an upload's, whoami, a traceset's first page).

Through httpx every MiB is read into Python and passed through httpcore and h11. Sending
128 MiB in 64 PUTs from 8 threads to a loopback sink took 0.09 to 0.12 s of CPU that way
and 0.03 to 0.05 s with ``sendfile`` (bench/README): CPU the service needs on the same
cores. A small request costs httpx about 0.5 ms of CPU and ``http.client`` 0.15 to 0.25
(answer included): a download of many small files makes two each (the redirect, the
bytes). And httpx's own transport (httpcore, h11, anyio: 15 to 40 ms to load) is then
not loaded at all for a plain http:// service. https:// URLs (S3's), a request with a
query, a proxy, and a transport given for tests go through httpx as before.

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
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

import httpx

from tracesets.client.errors import ClientError

#: Bytes handed to ``sendfile`` at a time: the progress moves, and Ctrl-C is heard, between.
BLOCK: Final = 1024 * 1024
#: What httpx accepts, and decodes: the answer is an ``httpx.Response``, which decodes it.
ACCEPTED: Final = {"Accept-Encoding": "gzip, deflate"}


def usable() -> bool:
    """No proxy is set for http:// (httpx would send through it; this does not)."""
    return not urllib.request.getproxies().get("http")


Address = tuple[str, int]


class PlainHttp:
    """Requests on plain HTTP/1.1 connections: each takes an idle one to its server (or
    opens one) and gives it back after a whole answer, so no more stay open than
    requests ran at once, however many uploads and downloads the client makes."""

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
        address, where = _target(url)
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
        self._give_back(address, connection, answer)
        return httpx.Response(
            answer.status,
            headers=answer.getheaders(),
            content=body,
            request=httpx.Request("PUT", url),
        )

    def request(
        self,
        method: str,
        url: str | httpx.URL,
        headers: Mapping[str, str],
        body: bytes | None = None,
        *,
        timeout: float | None = None,
        stream: bool = False,
    ) -> httpx.Response:
        """``method`` ``url`` with ``body``, waiting ``timeout`` seconds (the client's own
        unless given) for each read; with ``stream``, the answer's body is read as its
        ``iter_bytes()`` goes (the connection is kept once it is read whole). An
        ``httpx.URL`` is not parsed again for the answer's request (a signed URL is long)."""
        address, where = _target(str(url))
        connection = self._take(address)
        try:
            _wait_at_most(connection, self._timeout if timeout is None else timeout)
            connection.putrequest(method, where, skip_accept_encoding=True)
            for name, value in {**ACCEPTED, **self._headers, **headers}.items():
                connection.putheader(name, value)
            if body is not None:
                connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            answer = connection.getresponse()
            if not stream:
                content = answer.read()
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise _transport_error(exc, httpx.ReadError) from exc
        except BaseException:
            connection.close()
            raise
        if timeout is not None:
            _wait_at_most(connection, self._timeout)
        request = httpx.Request(method, url)
        if stream:
            body_stream = _Body(answer, lambda: self._give_back(address, connection, answer))
            return httpx.Response(
                answer.status, headers=answer.getheaders(), stream=body_stream, request=request
            )
        self._give_back(address, connection, answer)
        return httpx.Response(
            answer.status, headers=answer.getheaders(), content=content, request=request
        )

    def _give_back(
        self,
        address: Address,
        connection: http.client.HTTPConnection,
        answer: http.client.HTTPResponse,
    ) -> None:
        """A connection whose answer was read whole kept for the next request; closed if
        the server closes it or the answer was left unread."""
        if answer.will_close or not answer.isclosed():
            connection.close()
            return
        with self._lock:
            self._idle.setdefault(address, []).append(connection)

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


class _Body(httpx.SyncByteStream):
    """A streamed answer's body, read in blocks; its connection given back once it is
    read whole (``done``), closed if it is left unread or breaks."""

    def __init__(self, answer: http.client.HTTPResponse, done: Callable[[], None]) -> None:
        self._answer = answer
        self._done = done

    def __iter__(self) -> Iterator[bytes]:
        try:
            while block := self._answer.read1(BLOCK):
                yield block
        except (OSError, http.client.HTTPException) as exc:
            self._answer.close()
            raise _transport_error(exc, httpx.ReadError) from exc
        if self._answer.length:  # the server closed before its Content-Length was sent
            raise httpx.RemoteProtocolError(
                f"the answer ended {self._answer.length:,} bytes short of its length"
            )
        self._answer.close()  # read whole: its connection can carry the next request

    def close(self) -> None:
        self._done()


def _target(url: str) -> tuple[Address, str]:
    """Where ``url``'s connection goes, and the target its request line names."""
    parts = urlsplit(url)
    where = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return (parts.hostname or "", parts.port or 80), where


def _wait_at_most(connection: http.client.HTTPConnection, seconds: float) -> None:
    """Each read (and a connection still to open) waits at most ``seconds``."""
    connection.timeout = seconds
    if connection.sock is not None:
        connection.sock.settimeout(seconds)


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
