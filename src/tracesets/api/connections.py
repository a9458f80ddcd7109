"""The service's HTTP/1.1 protocol: uvicorn's httptools one, with the bounds it lacks.

Uvicorn times out only idle keep-alive connections: a client that opens a connection
and sends nothing, or sends its headers a byte at a time, holds a socket (a file
descriptor) for as long as it likes. Here every request's headers must arrive within
``TRACESETS_HEADER_TIMEOUT`` seconds of its first byte (the first request's, of the
connection opening), or the connection is closed. They must also fit in
``MAX_HEAD_BYTES``: the parser keeps a header it has not seen the end of, growing it by
a copy per read, so one endless header value would hold ever more memory and, each copy
longer than the last, the event loop every other client waits on. Past the bound the
answer is 431 and the connection is closed, nothing more read.

Uvicorn's ``limit_concurrency`` answers 503 to requests past the limit, in plain text;
here the answer is problem details with Retry-After, and connections past twice the
limit are closed as soon as they are accepted. So the descriptors sockets hold stay
within the budget ``connection_budget`` leaves beside the files requests open. Health
probes and metrics are answered past the limit (``OPERATOR_PATHS``).

Uvicorn writes an answer's status line and headers, then its body, each as soon as it
has them: two sends, and two TCP segments the client wakes up for, for every small JSON
answer. Here what a connection writes in one step of the event loop leaves in one send
(``CoalescedWrites``): upload-url served 1.04-1.25 times the requests a second over
loopback, in four runs each against the code before.
"""

from __future__ import annotations

import asyncio
import functools
import resource
from typing import Any, Final

from starlette.types import Receive, Scope, Send
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

from tracesets.api import counting, observe, render
from tracesets.api.guards import BODY_ARRIVAL, BodyArrival
from tracesets.api.observe import BUSY, DROPPED
from tracesets.problems import (
    HeadersTooLarge,
    InvalidRequest,
    Problem,
    ServiceUnavailable,
    TracesetsError,
)
from tracesets.settings import Settings

#: A sensible soft limit where the hard one is unlimited (macOS refuses more than OPEN_MAX).
_UNLIMITED_FALLBACK = 65_536

#: Seconds a client is asked to wait when every request slot is taken.
_BUSY_RETRY_AFTER = 1

#: Bytes held for one send at most: a larger body goes out as it comes, with the
#: transport's own flow control (uvicorn waits for it to drain between writes).
COALESCE_LIMIT: Final = 64 * 1024

#: Routes answered whatever the request limit: a probe or a scrape refused because the
#: service is busy would have an orchestrator restart a process that is only busy, and
#: leave the operator without metrics when they matter most. They open no file, and each
#: connection has one request at a time, so the connections' bound (twice the limit)
#: bounds them too.
OPERATOR_PATHS: Final = frozenset(("/livez", "/readyz", "/healthz", "/metrics"))
_OPERATOR_TARGETS: Final = frozenset(path.encode() for path in OPERATOR_PATHS)

#: The route a request refused before it was read whole (malformed, or too long a head)
#: is counted under.
UNREAD: Final = "unread"

#: Bytes of a request's line and headers at most (nginx's and Node's bound is 8 to 16
#: KiB; a token, a signed URL and the usual headers take under 2 KiB).
MAX_HEAD_BYTES: Final = 64 * 1024


def raise_descriptor_limit() -> int:
    """Raise the soft open-file limit to the hard one; return the limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = _UNLIMITED_FALLBACK if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):  # the system caps it lower: keep what we have
            pass
    return _UNLIMITED_FALLBACK if soft == resource.RLIM_INFINITY else soft


def connection_budget(descriptors: int) -> int:
    """Requests served at once with ``descriptors`` open files to spend.

    A reserve goes to the database pool, the event loop, S3's connections and
    inspections. Past the budget, requests are answered 503; up to twice it,
    connections are held (one descriptor each), beyond that closed. Each request
    served may hold a file besides its socket: four descriptors per request slot.
    """
    reserve = max(128, descriptors // 16)
    return max(8, (descriptors - reserve) // 4)


@functools.cache
def _header_timeout() -> float:
    """Read once per process: protocols are made per connection."""
    return float(Settings.from_env().header_timeout)


def _head_too_large() -> HeadersTooLarge:
    return HeadersTooLarge.of(
        [
            Problem(
                "request",
                None,
                f"The request line and headers are longer than {MAX_HEAD_BYTES:,} bytes",
            )
        ]
    )


async def busy_app(scope: Scope, receive: Receive, send: Send) -> None:
    """The answer to a request past the limit (``observe.Observer`` serves it)."""
    refusal = ServiceUnavailable.busy(
        "The service serves all the requests it can at once", _BUSY_RETRY_AFTER
    )
    answer = render.problem_response(
        refusal, {"Retry-After": str(_BUSY_RETRY_AFTER), "Connection": "close"}
    )
    await answer(scope, receive, send)


class CoalescedWrites:
    """A connection's transport, sending what one step of the event loop wrote at once.

    The first write of a step is held and a send of everything held is scheduled for
    the loop's next turn; writes before it join it, in order. Closing sends what is
    held first, and so does a write that would hold more than ``COALESCE_LIMIT``.
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self.loop = loop
        self.held: list[bytes] = []
        self.held_bytes = 0

    def write(self, data: bytes) -> None:
        if self.held_bytes + len(data) > COALESCE_LIMIT:
            self.flush()
            self.transport.write(data)
            return
        if not self.held:
            self.loop.call_soon(self.flush)
        self.held.append(data)
        self.held_bytes += len(data)

    def flush(self) -> None:
        if not self.held:
            return
        data = b"".join(self.held)
        self.held.clear()
        self.held_bytes = 0
        if not self.transport.is_closing():
            self.transport.write(data)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.header_timeout = _header_timeout()
        self.header_timer: asyncio.TimerHandle | None = None
        self.in_headers = False  # a request's headers have begun and not all come
        self.in_body = False  # a request's headers have all come, its body not yet
        self.head_bytes = 0  # read since the last request ended, while not in a body
        # The limit is checked here, answered with problem details, not by uvicorn.
        self.request_limit = self.limit_concurrency
        self.limit_concurrency = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.writes = CoalescedWrites(transport, self.loop)
        if self.request_limit is not None and len(self.connections) > 2 * self.request_limit:
            transport.close()
            return
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """A request the parser refused (a malformed request line or header, such as a
        Content-Length that is not a number) is answered as every other refusal is, with
        problem details, not uvicorn's plain text; the connection is closed after."""
        self._refuse(
            InvalidRequest.of(
                [
                    Problem(
                        "request",
                        None,
                        "The request is not valid HTTP/1.1: its request line or a header "
                        "(such as Content-Length) is malformed",
                    )
                ]
            )
        )

    def _refuse(self, error: TracesetsError) -> None:
        """Answer ``error`` (problem details) and close: the rest of what the client sent
        cannot be read as requests. Answered before any route, it is counted under
        ``unread``, with a request id of its own (the client's, if its header came)."""
        rid = observe.request_id({"headers": getattr(self, "headers", [])})
        answer = render.problem_response(error, {"X-Request-ID": rid})
        headers = [*self.server_state.default_headers, *answer.raw_headers]
        lines = [name + b": " + value + b"\r\n" for name, value in headers]
        self.writes.flush()  # what an answer before it left in this step goes first
        if self._may_answer():
            counting.record(UNREAD, "unknown", error.status, 0.0, 0, len(answer.body), {})
            self.transport.write(
                b"".join(
                    [STATUS_LINE[error.status], *lines, b"connection: close\r\n\r\n", answer.body]
                )
            )
        self.transport.close()

    def _may_answer(self) -> bool:
        """Whether a refusal can be written now: no answer is being written. A request
        whose headers were whole but whose framing the parser then refused (a
        ``Transfer-Encoding`` it cannot read) has its app started and not yet answering:
        that answer is dropped (the cycle marked disconnected), so the refusal is the
        one answer, not a connection closed without any."""
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            return True
        if cycle.response_started or self.pipeline:  # this or an earlier answer under way
            return False
        cycle.disconnected = True
        cycle.message_event.set()
        self.scope[DROPPED] = True  # type: ignore[typeddict-unknown-key]
        return True

    def data_received(self, data: bytes) -> None:
        """Read ``data``, counting what comes outside a body against ``MAX_HEAD_BYTES``.

        The count starts over once a request ends. A read that goes past the bound is
        parsed only up to it: if no request's headers ended (or a request ended) within
        it, the head is too large, and the rest is never parsed, nor anything after it.
        """
        while not self.in_body and len(data) > MAX_HEAD_BYTES - self.head_bytes:
            room = MAX_HEAD_BYTES - self.head_bytes
            self.head_bytes = MAX_HEAD_BYTES  # reset by a request that ends within ``room``
            self._parse(data[:room])
            data = data[room:]
            if self.transport.is_closing():
                return
            if not self.in_body and self.head_bytes == MAX_HEAD_BYTES:
                self._refuse(_head_too_large())
                return
        if not self.in_body:
            self.head_bytes += len(data)
        self._parse(data)

    def _parse(self, data: bytes) -> None:
        super().data_received(data)
        # Headers still to come: they have the header timeout from their first byte, which
        # came in this read. Headers that came whole (most) never cost a timer.
        if self.in_headers and self.header_timer is None and not self.transport.is_closing():
            self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.in_headers = True
        self.arrival = BodyArrival()
        self.scope[BODY_ARRIVAL] = self.arrival  # type: ignore[literal-required]

    def on_message_complete(self) -> None:
        self.arrival.complete = True
        self.in_body = False
        self.head_bytes = 0
        super().on_message_complete()

    def on_headers_complete(self) -> None:
        """Start the request's cycle (uvicorn's), writing through ``writes``; past the
        limit, marked ``BUSY``, for the observer to answer 503 in the app's place."""
        self.in_headers = False
        self.in_body = True
        self._disarm()
        if self._busy():
            self.scope[BUSY] = True  # type: ignore[typeddict-unknown-key]
        transport = self.transport
        self.transport = self.writes  # type: ignore[assignment]
        try:
            super().on_headers_complete()
        finally:
            self.transport = transport

    def _busy(self) -> bool:
        """Whether this request is past the limit: connections or requests at it, and
        not for an operator's route (the scope has no path yet: the target is read)."""
        limit = self.request_limit
        if limit is None or self.url.partition(b"?")[0] in _OPERATOR_TARGETS:
            return False
        return len(self.connections) >= limit or len(self.tasks) >= limit

    def shutdown(self) -> None:
        self.writes.flush()  # an answer written in this step, before the connection closes
        super().shutdown()

    def _arm(self) -> None:
        self.header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _headers_too_slow(self) -> None:
        self.header_timer = None
        if not self.transport.is_closing():
            self.transport.close()
