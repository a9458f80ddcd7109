"""What keeps slow, stalled or too many clients from holding the service's resources.

A request body that stops arriving is cut (408) so its connection, task and temporary
file are freed; uploads in progress are bounded (503 with Retry-After past the bound),
so each one keeps a file descriptor, two worker threads' turns and disk bandwidth
within a budget.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Iterator
from contextlib import contextmanager

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tracesets.problems import Problem, RequestTimeout, ServiceUnavailable

#: An upload slot, or a descriptor, is freed when an upload ends, usually within seconds.
UPLOAD_RETRY_AFTER = 5

#: The errors of a process, or the system, out of file descriptors.
OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE})


class IdleBodyTimeout:
    """ASGI middleware: a request body that sends nothing for ``timeout`` seconds is cut.

    Only the body is timed: once it has all arrived (or the client left), the app's later
    waits on ``receive`` (a streaming answer listening for a disconnect) are untouched.
    """

    def __init__(self, app: ASGIApp, timeout: float) -> None:
        self.app = app
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        arrived = False

        async def timed_receive() -> Message:
            nonlocal arrived
            if arrived:
                return await receive()
            try:
                async with asyncio.timeout(self.timeout):  # no task per chunk, unlike wait_for
                    message = await receive()
            except TimeoutError:
                raise RequestTimeout.of(
                    [
                        Problem(
                            "body",
                            None,
                            f"The request body sent nothing for {self.timeout:g} seconds",
                        )
                    ]
                ) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                arrived = True
            return message

        await self.app(scope, timed_receive, send)


class UploadSlots:
    """A bound on the uploads one process receives at once.

    The event loop is single-threaded, so a counter needs no lock.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.taken = 0

    @contextmanager
    def slot(self) -> Iterator[None]:
        if self.taken >= self.limit:
            raise ServiceUnavailable.busy(
                f"The service receives {self.limit:,} uploads at once already",
                UPLOAD_RETRY_AFTER,
            )
        self.taken += 1
        try:
            yield
        finally:
            self.taken -= 1
