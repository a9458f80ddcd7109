"""What keeps slow, stalled or too many clients from holding the service's resources.

A request body that stops arriving is cut (408) so its connection, task and temporary
file are freed; uploads in progress are bounded (past the bound an upload waits a
moment for a slot, then 503 with Retry-After), so each one keeps a file descriptor, two
worker threads' turns and disk bandwidth within a budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import math
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tracesets.problems import Problem, RequestTimeout, ServiceUnavailable

#: An upload slot, or a descriptor, is freed when an upload ends, usually within seconds.
UPLOAD_RETRY_AFTER = 5

#: The errors of a process, or the system, out of file descriptors.
OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE})


#: The scope's key for a request's ``BodyArrival``, where the server keeps one.
BODY_ARRIVAL = "tracesets.body_arrival"


class BodyArrival:
    """Set by the service's HTTP protocol once a request's whole body has arrived."""

    __slots__ = ("complete",)

    def __init__(self) -> None:
        self.complete = False


class IdleBodyTimeout:
    """ASGI middleware: a request body that sends nothing for ``timeout`` seconds is cut.

    Only the body is timed: once it has all arrived (or the client left), the app's later
    waits on ``receive`` (a streaming answer listening for a disconnect) are untouched.
    A body the server says has arrived whole (``BodyArrival``: most JSON bodies come
    with their headers) is read without a timer: arming and cancelling one was 4 % of
    upload-url's time on the event loop.
    """

    def __init__(self, app: ASGIApp, timeout: float) -> None:
        self.app = app
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        arrival = scope.get(BODY_ARRIVAL)
        if arrival is not None and arrival.complete:  # nothing to time
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
    """A bound on the uploads one process receives at once, with a short wait for a slot.

    An upload that finds every slot taken waits up to ``wait`` seconds, first come first
    served, and starts as soon as one frees: its body is not read while it waits, so it
    holds a connection, not memory or a file. Uploads of many clients that start together
    (the ranks of a job that ends) then run one after the other instead of being told to
    come back seconds later. Past the wait, or with as many uploads waiting as the bound
    itself, the answer is 503 with a Retry-After of the wait: no slot freed for that long.

    The event loop is single-threaded, so the counts need no lock. A slot that frees is
    handed to the first waiter still waiting, never counted free in between.
    """

    def __init__(self, limit: int, wait: float = 0.0) -> None:
        self.limit = limit
        self.wait = wait
        self.taken = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        return sum(1 for future in self._waiting if not future.done())

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        await self._take()
        try:
            yield
        finally:
            self._give_back()

    async def _take(self) -> None:
        if self.taken < self.limit and not self.waiting:
            self.taken += 1
            return
        if self.wait <= 0:
            raise self._refusal("")
        if self.waiting >= self.limit:
            raise self._refusal(f" and {self.waiting:,} more wait for them")
        handed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(handed)
        try:
            async with asyncio.timeout(self.wait):
                await handed
        except TimeoutError:
            if not self._was_handed(handed):
                raise self._refusal(f"; none ended within {self.wait:g} seconds") from None
        except BaseException:  # the request's task was cancelled: pass on a slot handed to it
            if self._was_handed(handed):
                self._give_back()
            raise

    def _was_handed(self, handed: asyncio.Future[None]) -> bool:
        """Whether the slot came (just as the wait ended); if not, the waiter leaves the queue."""
        if handed.done() and not handed.cancelled():
            return True
        with contextlib.suppress(ValueError):
            self._waiting.remove(handed)
        return False

    def _give_back(self) -> None:
        while self._waiting:
            handed = self._waiting.popleft()
            if not handed.done():
                handed.set_result(None)  # the slot goes to this waiter: still taken
                return
        self.taken -= 1

    def _refusal(self, why: str) -> ServiceUnavailable:
        return ServiceUnavailable.busy(
            f"The service receives {self.limit:,} uploads at once already{why}",
            math.ceil(self.wait) if self.wait > 0 else UPLOAD_RETRY_AFTER,
        )
