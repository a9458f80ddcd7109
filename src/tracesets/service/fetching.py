"""A batch's files fetched ahead of their reading, within a budget of bytes held.

Fetching is waiting (the store's round trips release the GIL), reading is CPU: a queue
keeps a few files' bytes on their way while one is read, but never a whole batch's, and
a pool of reading processes gets no more unread bytes than that budget either.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Final

from tracesets.db.inspection_files import Claim
from tracesets.inspection import ByteSource, SourceError
from tracesets.inspection.source import READ_ONCE_LIMIT

#: Files of a batch fetched at once, while one is read: a rank's trace costs a few
#: milliseconds of CPU and as much again of round trips to S3 (the wait releases the GIL).
FETCH_AHEAD: Final = 8
#: Bytes of small files read whole ahead of the one being inspected, at most (plus that
#: one): a batch of 16 files of 2 MiB, all fetched at once and held to the batch's end,
#: took a service from 84 to 130 MB of RSS.
FETCH_AHEAD_BYTES: Final = 8 * 1024 * 1024


class Stoppable:
    """A source that fails its next read once the process is told to stop, so a file
    being read is given back at once, wherever the reading is."""

    def __init__(self, source: ByteSource, stopping: threading.Event) -> None:
        self._source = source
        self._stopping = stopping

    @property
    def size(self) -> int:
        return self._source.size

    def read(self, offset: int, length: int) -> bytes:
        if self._stopping.is_set():
            raise SourceError("this process is stopping")
        return self._source.read(offset, length)


def _held(claim: Claim) -> int:
    """Bytes a fetched file holds in memory: small ones are read whole (``read_once``)."""
    return claim.size if claim.size <= READ_ONCE_LIMIT else 0


def fetch_ahead(
    batch: list[Claim], fetch: Callable[[Claim], Future[ByteSource]]
) -> Iterator[tuple[Claim, Future[ByteSource]]]:
    """Each claim of ``batch`` in order, with its fetch started ahead of the caller.

    At most FETCH_AHEAD files and FETCH_AHEAD_BYTES of whole reads are started and not
    yet handed over (one file is always started, whatever its size): fetching a whole
    batch at once held every small file's bytes until the batch's end.
    """
    waiting = deque(batch)
    started: deque[tuple[Claim, Future[ByteSource]]] = deque()
    ahead = 0
    while waiting or started:
        while waiting and (
            not started
            or (len(started) < FETCH_AHEAD and ahead + _held(waiting[0]) <= FETCH_AHEAD_BYTES)
        ):
            claim = waiting.popleft()
            ahead += _held(claim)
            started.append((claim, fetch(claim)))
        claim, future = started.popleft()
        yield claim, future
        del future  # handed over: the caller drops it once read
        ahead -= _held(claim)


def make_room(sent: list[tuple[Claim, Future[str]]], size: int) -> None:
    """Wait until the files sent to the pool and not yet read hold at most
    FETCH_AHEAD_BYTES with the next one (one is always let through), as for fetching.

    The caller asks only once every file sent, read or not, would not fit: asking each
    answer whether it is done, for every file of a job of 34 KB rank files, took a sixth
    of the queue's process's CPU."""
    while True:
        unread = [(claim, answer) for claim, answer in sent if not answer.done()]
        if not unread or sum(claim.size for claim, _ in unread) + size <= FETCH_AHEAD_BYTES:
            return
        wait([answer for _, answer in unread], return_when=FIRST_COMPLETED)
