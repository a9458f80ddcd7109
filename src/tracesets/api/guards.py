"""What keeps slow, stalled or too many clients from holding the service's resources.

A request body that stops arriving, or trickles in, is cut (408) so its connection,
task and temporary file are freed; uploads in progress are bounded (past the bound, or
past its traceset's share of it, an upload waits a moment for a slot, then 503 with
Retry-After), so each one keeps a file descriptor, two worker threads' turns and disk
bandwidth within a budget, and no one traceset holds them all.
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
    """ASGI middleware: a request body that falls behind its pace is cut (408).

    Its pace: each ``min_rate * timeout`` bytes of it (240 KiB by default) must
    arrive within ``timeout`` seconds of waiting for them. So a body that sends nothing
    for ``timeout`` seconds is cut, and so is one that keeps moving, a byte at a time,
    slower than ``min_rate`` bytes a second: otherwise one would hold its connection,
    task, temporary file and upload slot for as long as a signed URL lasts. Only the time
    the app waits on ``receive`` counts: a slow disk, or an upload waiting for its slot,
    is not the client's delay.

    Only the body is timed: once it has all arrived (or the client left), the app's later
    waits on ``receive`` (a streaming answer listening for a disconnect) are untouched.
    A body the server says has arrived whole (``BodyArrival``: most JSON bodies come
    with their headers) is read without a timer: arming and cancelling one was 4 % of
    upload-url's time on the event loop.
    """

    def __init__(self, app: ASGIApp, timeout: float, min_rate: int) -> None:
        self.app = app
        self.timeout = timeout
        self.min_rate = min_rate
        self.pace_bytes = min_rate * timeout  # what each ``timeout`` of waiting must bring

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        arrival = scope.get(BODY_ARRIVAL)
        if arrival is not None and arrival.complete:  # nothing to time
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        arrived = False
        waited = 0.0  # seconds waited for the bytes of the pace not yet brought
        brought = 0  # bytes brought towards the pace

        async def timed_receive() -> Message:
            nonlocal arrived, waited, brought
            if arrived:
                return await receive()
            began = loop.time()
            try:  # asyncio.timeout, unlike wait_for, needs no task per chunk
                async with asyncio.timeout_at(began + self.timeout - waited):
                    message = await receive()
            except TimeoutError:
                raise self._too_slow(brought) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                arrived = True
                return message
            brought += len(message.get("body", b""))
            if brought >= self.pace_bytes:  # the pace kept: the next bytes' time starts
                waited, brought = 0.0, 0
            else:
                waited += loop.time() - began
            return message

        await self.app(scope, timed_receive, send)

    def _too_slow(self, brought: int) -> RequestTimeout:
        if brought == 0:
            why = f"The request body sent nothing for {self.timeout:g} seconds"
        else:
            why = (
                f"The request body sent {brought:,} bytes in {self.timeout:g} seconds: "
                f"slower than {self.min_rate:,} bytes a second"
            )
        return RequestTimeout.of([Problem("body", None, why)])


class UploadSlots:
    """A bound on the uploads one process receives at once, with a short wait for a slot.

    An upload that finds every slot taken waits up to ``wait`` seconds, first come first
    served, and starts as soon as one frees: its body is not read while it waits, so it
    holds a connection, not memory or a file. Uploads of many clients that start together
    (the ranks of a job that ends) then run one after the other instead of being told to
    come back seconds later. Past the wait, or with as many uploads waiting as the bound
    itself, the answer is 503 with a Retry-After of the wait: no slot freed for that long.

    Whoever holds signed URLs holds only their share: one file is received by one upload
    at a time, and one traceset's uploads hold at most half the slots (``per_traceset``).
    An upload past its share waits as one past the bound does, and never holds up the
    uploads behind it that are within theirs. So a URL, or a traceset's URLs, sent many
    slow uploads at once (each must still keep the body's pace, ``IdleBodyTimeout``)
    leave slots to every other traceset; a file sent again while its upload still runs
    (a client that gave up on it) is received once that one ends.

    The event loop is single-threaded, so the counts need no lock. A slot that frees is
    handed to the first waiter within its share, never counted free in between: while a
    slot is free, no waiter is within its share.
    """

    def __init__(self, limit: int, wait: float = 0.0) -> None:
        self.limit = limit
        self.wait = wait
        self.per_traceset = max(1, limit // 2)
        self.taken = 0
        self._by_traceset: dict[str, int] = {}
        self._files: set[tuple[str, int]] = set()  # (traceset id, index) being received
        self._waiting: deque[tuple[tuple[str, int], asyncio.Future[None]]] = deque()

    @property
    def waiting(self) -> int:
        return sum(1 for _, future in self._waiting if not future.done())

    @asynccontextmanager
    async def slot(self, traceset_id: str, idx: int) -> AsyncIterator[None]:
        """A slot for receiving file ``idx`` of traceset ``traceset_id``."""
        file = (traceset_id, idx)
        await self._take(file)
        try:
            yield
        finally:
            self._give_back(file)

    def _why_not(self, file: tuple[str, int]) -> str | None:
        """Why ``file``'s upload cannot start now, or None if it can."""
        if file in self._files:
            return "An upload of this file is in progress already"
        if self.taken >= self.limit:
            return f"The service receives {self.limit:,} uploads at once already"
        if self._by_traceset.get(file[0], 0) >= self.per_traceset:
            return (
                f"This traceset's uploads hold {self.per_traceset:,} of the service's "
                f"{self.limit:,} upload slots already, the most one traceset may"
            )
        return None

    def _hold(self, file: tuple[str, int]) -> None:
        self.taken += 1
        self._by_traceset[file[0]] = self._by_traceset.get(file[0], 0) + 1
        self._files.add(file)

    async def _take(self, file: tuple[str, int]) -> None:
        why = self._why_not(file)
        if why is None:  # no waiter is within its share while a slot is free: none passed
            self._hold(file)
            return
        if self.wait <= 0:
            raise self._refusal(why)
        if self.waiting >= self.limit:
            raise self._refusal(f"{why}, and {self.waiting:,} more uploads wait for slots")
        handed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((file, handed))
        try:
            async with asyncio.timeout(self.wait):
                await handed
        except TimeoutError:
            if not self._was_handed(file, handed):
                why = self._why_not(file) or why
                raise self._refusal(f"{why}; none ended within {self.wait:g} seconds") from None
        except BaseException:  # the request's task was cancelled: pass on a slot handed to it
            if self._was_handed(file, handed):
                self._give_back(file)
            raise

    def _was_handed(self, file: tuple[str, int], handed: asyncio.Future[None]) -> bool:
        """Whether the slot came (just as the wait ended); if not, the waiter leaves the queue."""
        if handed.done() and not handed.cancelled():
            return True
        with contextlib.suppress(ValueError):
            self._waiting.remove((file, handed))
        return False

    def _give_back(self, file: tuple[str, int]) -> None:
        self.taken -= 1
        self._files.discard(file)
        left = self._by_traceset[file[0]] - 1
        if left:
            self._by_traceset[file[0]] = left
        else:
            del self._by_traceset[file[0]]
        for waiter in self._waiting:
            waiting_file, handed = waiter
            if not handed.done() and self._why_not(waiting_file) is None:
                self._waiting.remove(waiter)
                self._hold(waiting_file)
                handed.set_result(None)  # the slot goes to this waiter: still taken
                return

    def _refusal(self, why: str) -> ServiceUnavailable:
        return ServiceUnavailable.busy(
            why, math.ceil(self.wait) if self.wait > 0 else UPLOAD_RETRY_AFTER
        )
