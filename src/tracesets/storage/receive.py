"""An upload's bytes, streamed into a temporary file and placed under their final name.

The temporary file is beside its destination (same filesystem), hashed as it fills,
and renamed into place only once its byte count and sha256 check out and its bytes are
on disk (fsync). So a file is never visible half written, a refused upload leaves
nothing behind, and memory stays a few MiB whatever the file's size.

Hashing and writing each run on a worker thread of their own, up to two blocks behind
the network, so the three overlap (both release the GIL); ``storage.sink`` writes them.
The local store (``storage.local``) decides the names; this module only fills them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import os
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar, cast

from tracesets.problems import InvalidRequest, Problem, ServiceUnavailable
from tracesets.storage.sink import Sink, join, settle

# The blocks an upload holds (the one filling, those its worker threads have) share a
# budget among the uploads in progress: a lone upload's blocks are large (fewer hops to
# the worker threads), 8 at once get 256 KiB each. With 8 uploads at once, blocks of
# 2 MiB took the serving process from 75 to 113 MB of RSS, 512 KiB ones to 97 MB (with
# the direct writes' buffers), 256 KiB ones to 92 MB.
_HELD_BUDGET: Final = 4 * 1024 * 1024
_MIN_BLOCK: Final = 256 * 1024
#: A whole body at most this long is hashed on the event loop and written by the thread
#: that fsyncs it.
_INLINE_BYTES: Final = 64 * 1024
_SYNCERS: Final = 32  # uploads fsyncing at once; a thread each, asleep in the kernel

R = TypeVar("R")


def _settle_with(
    future: concurrent.futures.Future[Any], result: object, error: BaseException | None
) -> None:
    """Hand an outcome to a future its waiter may have cancelled meanwhile."""
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)


@dataclass(frozen=True, slots=True)
class Received:
    size: int
    sha256: str


def _too_long(size: int) -> InvalidRequest:
    return InvalidRequest.of(
        [
            Problem(
                "body", None, f"The upload has more bytes than the declared size of {size:,} bytes"
            )
        ]
    )


class Receiver:
    """Receives uploads into ``tmp``, each placed under the name ``named(key, sha256)``."""

    def __init__(self, tmp: Path, named: Callable[[str, str], Path]) -> None:
        self.tmp = tmp
        self._named = named
        # Two threads per upload in progress (hash, write); more uploads wait their turn.
        self._workers = concurrent.futures.ThreadPoolExecutor(
            max_workers=16, thread_name_prefix="blob-store"
        )
        # Threads that wait on fsync and nothing else, so many small uploads ending at
        # once are on disk together (the filesystem joins their flushes into few journal
        # commits) instead of queueing on the event loop's few default workers.
        self._syncers = concurrent.futures.ThreadPoolExecutor(
            max_workers=_SYNCERS, thread_name_prefix="blob-fsync"
        )
        self._receiving = 0  # uploads streaming in (the event loop's count: no lock)

    async def receive(
        self, key: str | None, chunks: AsyncIterator[bytes], *, size: int, sha256: str | None
    ) -> Received:
        """Stream ``chunks`` into place as ``key`` (under their digest); refuse
        (InvalidRequest) a wrong size or digest.

        With ``key`` None the bytes are checked and dropped: a repeated upload of a file
        already in place.
        """
        received, _ = await self._receive(key, chunks, size, sha256, None)
        return received

    async def receive_and_record(
        self,
        key: str,
        chunks: AsyncIterator[bytes],
        *,
        size: int,
        sha256: str | None,
        record: Callable[[str], concurrent.futures.Future[R]],
    ) -> tuple[Received, R]:
        """``receive``, then ``record`` the bytes (given their digest) from the thread
        that placed them: the event loop waits once, for what ``record`` started (the
        database's commit), not once for the placing and again for the commit. Each wait
        is a turn of the loop, some 100 ms when it is busy (bench/README)."""
        received, recorded = await self._receive(key, chunks, size, sha256, record)
        return received, cast(R, recorded)

    async def _receive(
        self,
        key: str | None,
        chunks: AsyncIterator[bytes],
        size: int,
        sha256: str | None,
        record: Callable[[str], concurrent.futures.Future[Any]] | None,
    ) -> tuple[Received, Any]:
        try:
            sink = Sink(self.tmp / f"{uuid.uuid4().hex}.part")
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            raise ServiceUnavailable.busy("The service has too many files open", 5) from exc
        try:
            received, tail = await self._stream(sink, chunks, size)
            digest = sink.digest.hexdigest()
            if received != size:
                raise InvalidRequest.of(
                    [
                        Problem(
                            "body",
                            received,
                            f"The upload has {received:,} bytes; the file was declared "
                            f"with {size:,} bytes",
                        )
                    ]
                )
            if sha256 is not None and digest != sha256:
                raise InvalidRequest.of(
                    [
                        Problem(
                            "body",
                            digest,
                            f"The upload's sha256 is {digest}; the file was declared with {sha256}",
                        )
                    ]
                )
            if key is None:
                sink.discard()
                return Received(received, digest), None
            recorded: concurrent.futures.Future[Any] = concurrent.futures.Future()
            placing = self._syncers.submit(self._place, sink, key, digest, tail, record, recorded)
            try:
                return Received(received, digest), await asyncio.wrap_future(recorded)
            finally:  # the sink is discarded below on failure: never under the thread
                concurrent.futures.wait([placing])
        except BaseException:
            sink.discard()
            raise

    async def _stream(
        self, sink: Sink, chunks: AsyncIterator[bytes], size: int
    ) -> tuple[int, list[bytes]]:
        self._receiving += 1
        try:
            return await self._blocks(sink, chunks, size)
        finally:
            self._receiving -= 1

    async def _blocks(
        self, sink: Sink, chunks: AsyncIterator[bytes], size: int
    ) -> tuple[int, list[bytes]]:
        """The bytes received, hashed, and written but for the tail returned: a small
        body is hashed here and written with the fsync that places it, one hand-off to a
        thread instead of two (each waits a turn of a busy event loop)."""
        received = 0
        block: list[bytes] = []
        buffered = 0
        queued: deque[list[concurrent.futures.Future[None]]] = deque()
        try:
            async for chunk in chunks:
                received += len(chunk)
                if received > size:
                    raise _too_long(size)
                block.append(chunk)
                buffered += len(chunk)
                block_size, depth = _pipeline(self._receiving)
                if buffered >= block_size:
                    queued.append(self._submit(sink, block))
                    block = []
                    buffered = 0
                    while len(queued) > depth:
                        await settle(queued.popleft())
            if buffered == received <= _INLINE_BYTES:  # the whole body, never submitted
                sink.hash(block)  # some 45 µs at most
                return received, block
            if block:
                queued.append(self._submit(sink, block))
            while queued:
                await settle(queued.popleft())
        finally:
            # After an error, the queued blocks' jobs may still be running.
            await join([job for jobs in queued for job in jobs])
        return received, []

    def _submit(self, sink: Sink, block: list[bytes]) -> list[concurrent.futures.Future[None]]:
        sink.queue(block)
        return [self._workers.submit(sink.hash_next), self._workers.submit(sink.write_next)]

    def _place(
        self,
        sink: Sink,
        key: str,
        sha256: str,
        tail: list[bytes],
        record: Callable[[str], concurrent.futures.Future[Any]] | None,
        recorded: concurrent.futures.Future[Any],
    ) -> None:
        """(On a syncer thread) the bytes written, synced and named; then ``record``
        started, its outcome handed to ``recorded`` when it comes."""
        try:
            if tail:
                sink.write(tail)
            final = self._named(key, sha256)
            final.parent.mkdir(parents=True, exist_ok=True)
            # Bytes already under this name are the same bytes: replacing them changes nothing.
            sink.finish(final)
            _fsync_dir(final.parent)
            if record is None:
                _settle_with(recorded, None, None)
                return
            started = record(sha256)
        except BaseException as exc:
            _settle_with(recorded, None, exc)
            return
        started.add_done_callback(
            lambda done: _settle_with(
                recorded, None if done.exception() else done.result(), done.exception()
            )
        )


def _pipeline(receiving: int) -> tuple[int, int]:
    """The block size and how many blocks the worker threads may have at once.

    Two blocks queued rather than one let the threads run ahead of the network by a block
    when the event loop is late and catch up when the disk is: on a shared machine the
    three (receiving, hashing, writing) lose their core at different moments. Held
    together with the block filling, they stay within the upload's share of the budget;
    where that share is too small for three blocks of ``_MIN_BLOCK``, one is queued.
    """
    share = max(2 * _MIN_BLOCK, _HELD_BUDGET // max(1, receiving))
    depth = 2 if share >= 3 * _MIN_BLOCK else 1
    return share // (depth + 1), depth


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
