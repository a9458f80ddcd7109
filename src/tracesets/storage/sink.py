"""An upload's temporary file on its way to disk: hashed, written, fsynced, renamed.

Where the filesystem takes them, the bytes go to disk with direct writes
(``storage.direct``), past the page cache, so the final fsync has only the last few KiB
and the metadata to wait for. Elsewhere a block is the chunks as they came, written with
one ``writev``: no copy to join them. Each written block is handed to the kernel's
writeback at once (``posix_fadvise`` DONTNEED starts it on Linux), so the final fsync
waits for the last block or two rather than the whole file, and the pages already on
disk leave the page cache.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import fcntl
import hashlib
import os
import threading
from collections import deque
from pathlib import Path
from typing import Final

from tracesets.storage.direct import DirectWriter

_IOV_MAX: Final = max(16, os.sysconf("SC_IOV_MAX"))  # buffers one writev takes (1024 on Linux)
_FADVISE: Final = hasattr(os, "posix_fadvise")  # not on macOS: there the kernel decides


class Sink:
    """The temporary file and its running digest.

    ``hash_next`` and ``write_next`` may run at the same time on two threads, on the
    same block or different ones; each of the two takes the queued blocks one at a time,
    in order, whichever threads call it. The file is locked while
    its upload lives: the lock dies with the process, so a sweep knows a dead upload's
    leftover from a live one's, whichever process sharing the folder it belongs to.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
        self.digest = hashlib.sha256()
        self.written = 0
        self.previous = 0  # where the block before the last one written starts
        self.direct: DirectWriter | None = None
        self._to_hash: deque[list[bytes]] = deque()
        self._to_write: deque[list[bytes]] = deque()
        self._hashing = threading.Lock()
        self._writing = threading.Lock()
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            self.direct = DirectWriter.open(self.fd)
        except BaseException:
            self.discard()
            raise

    def queue(self, block: list[bytes]) -> None:
        """Line ``block`` up for ``hash_next`` and ``write_next``: each takes the oldest
        block not yet taken, so blocks are hashed and written in order whichever worker
        thread runs which call."""
        self._to_hash.append(block)
        self._to_write.append(block)

    def hash_next(self) -> None:
        with self._hashing:
            self.hash(self._to_hash.popleft())

    def write_next(self) -> None:
        with self._writing:
            self.write(self._to_write.popleft())

    def hash(self, block: list[bytes]) -> None:
        for chunk in block:
            self.digest.update(chunk)

    def write(self, block: list[bytes]) -> None:
        if self.direct is not None:
            self.direct.write(block)
            self.written += sum(map(len, block))
            return
        start = self.written
        for first in range(0, len(block), _IOV_MAX):
            _write_all(self.fd, block[first : first + _IOV_MAX])
        self.written += sum(map(len, block))
        if _FADVISE:
            # Starts writeback of this block; drops the previous one's pages if already on disk.
            os.posix_fadvise(
                self.fd, self.previous, self.written - self.previous, os.POSIX_FADV_DONTNEED
            )
        self.previous = start

    def finish(self, final: Path) -> None:
        """Move the file into place; closed (unlocked) only after, so no sweep takes it."""
        if self.direct is not None:
            self.direct.finish()
        os.fsync(self.fd)
        if _FADVISE and self.direct is None:
            os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.replace(self.path, final)
        self._close()

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)
        self._close()

    def _close(self) -> None:
        if self.direct is not None:
            self.direct.close()
            self.direct = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _write_all(fd: int, chunks: list[bytes]) -> None:
    done = os.writev(fd, chunks)
    if done == sum(map(len, chunks)):
        return
    # A short write (a signal, a full disk): finish chunk by chunk, so a real error surfaces.
    for chunk in chunks:
        if done >= len(chunk):
            done -= len(chunk)
            continue
        view = memoryview(chunk)[done:]
        done = 0
        while view:
            view = view[os.write(fd, view) :]


async def join(jobs: list[concurrent.futures.Future[None]]) -> None:
    """Wait for the worker threads' jobs to end.

    A thread cannot be cancelled: if this wait is, block until the jobs end anyway, as
    the caller is about to close and remove the file they use.
    """
    if all(job.done() for job in jobs):
        return
    signals = [asyncio.wrap_future(job) for job in jobs]
    for signal in signals:
        signal.add_done_callback(_seen)
    try:
        await asyncio.wait(signals)
    finally:
        concurrent.futures.wait(jobs)


def _seen(signal: asyncio.Future[None]) -> None:
    # The job's own future raises its error (_settle); this copy only says it ended.
    if not signal.cancelled():
        signal.exception()


async def settle(jobs: list[concurrent.futures.Future[None]]) -> None:
    """Wait for the jobs, then raise the first one's error, if any."""
    await join(jobs)
    for job in jobs:
        job.result()
