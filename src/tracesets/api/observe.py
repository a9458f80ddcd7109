"""Every request observed once, outside every other layer: its id, route, status, time, bytes.

The hot routes are served past the middleware stack (``api.front``), so a middleware
would miss them; this wraps the whole stack, which every request passes. A request's id
is the client's ``X-Request-ID`` when it is a plain one (1 to 128 of ``A-Z a-z 0-9 . _
-``: nothing a log line could be forged with), else one made here; every answer carries
it back. A made id is 16 hex digits: a random start drawn once per process, counted up
by one a request (unique within the process, and across processes unless two started
within as many requests of each other out of 2**64): a random one per request, read
from the system, cost more than the rest of the id's work. Its route is the template (``/api/v1/tracesets/{traceset_id}``), never the path
itself, and ``unmatched`` when no route matched: a label of bounded values, whatever
the paths sent. The fields the layers inside learn (the workspace, the problem's type)
are added to ``logs.FIELDS`` as they go, and end in the request's log line.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import time
from collections.abc import Callable
from typing import Any, Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tracesets.api.logs import FIELDS

access_log = logging.getLogger("tracesets.access")

_REQUEST_ID: Final = re.compile(rb"[A-Za-z0-9._-]{1,128}")
UNMATCHED: Final = "unmatched"
#: The scope's key the protocol (``connections``) sets on a request past its limit, and
#: the route such a request is counted under: it is answered 503 unrouted.
BUSY: Final = "tracesets.busy"
BUSY_ROUTE: Final = "busy"
#: The scope's key the protocol sets when it dropped the app's answer and refused the
#: request itself (counted there, under ``unread``): not reported again here.
DROPPED: Final = "tracesets.dropped"
_ID_MASK: Final = (1 << 64) - 1


def _new_ids() -> itertools.count[int]:
    return itertools.count(int.from_bytes(os.urandom(8)))


_ids = _new_ids()


def _draw_again() -> None:
    """A forked process counts from a start of its own, not its parent's."""
    global _ids  # noqa: PLW0603 (the process's one counter, replaced only in a new process)
    _ids = _new_ids()


os.register_at_fork(after_in_child=_draw_again)

#: Called once a request is answered: route template, method, status, seconds, bytes in,
#: bytes out, and its fields.
Report = Callable[[str, str, int, float, int, int, dict[str, Any]], None]


def request_id(scope: Scope) -> str:
    """The client's ``X-Request-ID`` if it is a plain one, else a new one."""
    for name, value in scope["headers"]:
        if name == b"x-request-id" and _REQUEST_ID.fullmatch(value):
            return bytes(value).decode()
    return format(next(_ids) & _ID_MASK, "016x")


def route_of(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str) and path:
        return path
    return BUSY_ROUTE if scope.get(BUSY) else UNMATCHED


def note(name: str, value: object) -> None:
    """Add a field to the log line of the request being served (none outside one)."""
    fields = FIELDS.get()
    if fields is not None:
        fields[name] = value


def log_access(
    route: str,
    method: str,
    status: int,
    seconds: float,
    received: int,
    sent: int,
    fields: dict[str, Any],
) -> None:
    """The request's JSON line (``TRACESETS_LOG_FORMAT=json``): never its query."""
    if not access_log.isEnabledFor(logging.INFO):
        return
    access_log.info(
        "%s %s %d",
        method,
        route,
        status,
        extra={
            "route": route,
            "method": method,
            "status": status,
            "duration_ms": round(seconds * 1000, 3),
            "bytes_in": received,
            "bytes_out": sent,
        },
    )


class Observer:
    """ASGI middleware: the request's id in and out, and ``reports`` once it is answered;
    a request past the limit (``BUSY``) is answered by ``busy`` instead of ``app``, so
    it is counted, logged and given its id like any other."""

    def __init__(self, app: ASGIApp, reports: list[Report], busy: ASGIApp) -> None:
        self.app = app
        self.reports = reports
        self.busy = busy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        rid = request_id(scope)
        fields: dict[str, Any] = {"request_id": rid}
        context = FIELDS.set(fields)
        header = (b"x-request-id", rid.encode())
        status = 0
        received = sent = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            return message

        async def sender(message: Message) -> None:
            nonlocal status, sent
            kind = message["type"]
            if kind == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), header]
            elif kind == "http.response.body":
                sent += len(message.get("body", b""))
            await send(message)

        try:
            await (self.busy if scope.get(BUSY) else self.app)(scope, counted, sender)
        finally:
            seconds = time.perf_counter() - started
            route, method = route_of(scope), scope["method"]
            if not scope.get(DROPPED):
                for report in self.reports:
                    report(route, method, status, seconds, received, sent, fields)
            FIELDS.reset(context)
