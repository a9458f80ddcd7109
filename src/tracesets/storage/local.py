"""Files in a local folder, received through the service's own signed PUT URLs.

An upload streams into a temporary file beside its destination (same filesystem),
hashing as it goes, and is renamed into place only once its byte count and sha256
check out and its bytes are on disk (fsync). So a file is never visible half
written, a refused upload leaves nothing behind, and memory stays a few MiB
whatever the file's size.

A file's bytes are kept under a name made of its key and their sha256
(``TRACESET/INDEX.SHA256``), and the database records that digest: what a row
describes is always exactly the bytes its name holds, and no later upload can
replace them, as other bytes land under another name. Which name counts is decided
by the database (``LocalTransfers``), only while the traceset is pending.

Hashing and writing each run on a worker thread of their own, up to two blocks behind
the network, so the three overlap (both release the GIL); ``storage.sink`` writes them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import fcntl
import os
import shutil
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypeVar, cast

from tracesets.inspection.source import FileSource
from tracesets.problems import InvalidRequest, Problem, ServiceUnavailable
from tracesets.records import Checked
from tracesets.storage.base import UploadIncomplete, UploadPlan
from tracesets.storage.signing import Method, URLSigner
from tracesets.storage.sink import Sink, join, settle
from tracesets.uploadrequest import PartDigests

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


class LocalBlobStore:
    """The ``BlobStore`` of a folder; its upload and download URLs point at the service."""

    checks_at_once = 1
    remote = False

    def __init__(
        self,
        root: Path,
        signer: URLSigner,
        *,
        url_path: str | None = None,
        upload_ttl: int = 6 * 3600,
        download_ttl: int = 900,
    ) -> None:
        # The service mounts the signed-URL route; the store only prefixes its keys with it.
        self.root = root
        self.url_path = url_path
        self.signer = signer
        self.upload_ttl = upload_ttl
        self.download_ttl = download_ttl
        self.blobs = root / "blobs"
        self.tmp = root / "tmp"
        self.blobs.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir(parents=True, exist_ok=True)
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

    def sweep_tmp(self, cutoff: float) -> int:
        """Remove temporary files last written before ``cutoff`` (a Unix time) whose
        upload is dead: no process holds their lock. Returns how many were removed.

        Such leftovers of uploads cut short by a crash are never visible. A live
        upload, of this process or another sharing the folder, holds its file's lock;
        the age spares a file just created and not yet locked.
        """
        removed = 0
        for leftover in self.tmp.iterdir():
            with contextlib.suppress(FileNotFoundError):
                if leftover.stat().st_mtime < cutoff and _unlocked(leftover):
                    leftover.unlink()
                    removed += 1
        return removed

    def path(self, key: str, sha256: str) -> Path:
        """Where the bytes of ``key`` with digest ``sha256`` are, once received."""
        named = self._named(key, sha256)
        if not named.exists():
            legacy = self.blobs / key  # stored before names carried the digest
            if legacy.exists():
                return legacy
        return named

    def _named(self, key: str, sha256: str) -> Path:
        return self.blobs / f"{key}.{sha256}"

    # -- BlobStore: plans, checks and URLs --------------------------------------------------

    def _signed_url(self, method: Method, key: str, ttl: int, base_url: str) -> tuple[str, int]:
        if self.url_path is None:
            raise RuntimeError("this store was opened without the route its URLs are served on")
        query, expires = self.signer.query(method, key, ttl)
        return f"{base_url}{self.url_path}/{key}?{query}", expires

    def plan_upload(
        self,
        key: str,
        *,
        size: int,
        sha256: str | None,
        base_url: str,
        parts: PartDigests | None = None,
    ) -> UploadPlan:
        # One PUT through the service, which hashes the bytes as they arrive: no parts.
        url, expires = self._signed_url("PUT", key, self.upload_ttl, base_url)
        return UploadPlan(expires_at=datetime.fromtimestamp(expires, UTC), url=url)

    def resume_upload(
        self,
        key: str,
        *,
        size: int,
        sha256: str | None,
        upload_id: str | None,
        part_size: int | None,
        base_url: str,
    ) -> UploadPlan | None:
        if self.arrived(key, size=size, sha256=sha256, upload_id=None, part_size=None):
            return None
        return self.plan_upload(key, size=size, sha256=sha256, base_url=base_url)

    def arrived(
        self,
        key: str,
        *,
        size: int,
        sha256: str | None,
        upload_id: str | None,
        part_size: int | None,
    ) -> bool:
        return sha256 is not None and self.size_of(key, sha256) == size

    def checked_at_upload(self, prefix: str) -> Mapping[str, int]:
        """None: ``finish_upload`` is a look at one file's name, as cheap as a listing."""
        return {}

    def finish_upload(
        self, key: str, *, size: int, sha256: str | None, upload_id: str | None
    ) -> Checked:
        # receive() placed the file under its digest only after checking its size and
        # digest: what is left to know is whether the file the row names is there.
        if sha256 is None or self.size_of(key, sha256) != size:
            raise UploadIncomplete("has not been received")
        return Checked(sha256, "sha256", sha256)

    def download_url(self, key: str, *, filename: str, base_url: str) -> str:
        return self._signed_url("GET", key, self.download_ttl, base_url)[0]

    def open_source(self, key: str, *, sha256: str, size: int | None = None) -> FileSource:
        return FileSource(self.path(key, sha256))

    def abort_upload(self, key: str, upload_id: str) -> None:
        """Nothing to abort: a local upload is one PUT, and a refused one leaves nothing."""

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

    def size_of(self, key: str, sha256: str) -> int | None:
        """The size of the bytes ``path`` names, from one ``stat`` where they are under their
        digest: ``complete`` asks it of every file, 100,000 for a job of as many ranks."""
        blobs = os.fspath(self.blobs)
        for name in (f"{blobs}/{key}.{sha256}", f"{blobs}/{key}"):  # the legacy name second
            try:
                return os.stat(name).st_size
            except FileNotFoundError:
                continue
        return None

    def delete(self, key: str, sha256: str) -> None:
        self._named(key, sha256).unlink(missing_ok=True)

    def drop_superseded(self, prefix: str, kept: Mapping[str, str]) -> None:
        """Remove the bytes under ``prefix/`` that no file names: uploads replaced by a
        later one before ``complete``, and late ones it refused. ``kept`` maps each key
        to its digest.

        The folder is listed once and each kept file's name looked up in the listing, as
        ``path`` would find it (under its digest, else under the legacy name): a ``stat``
        a file took 6 s of a 100,000-file ``complete``."""
        folder = self.blobs / prefix
        try:
            present = set(os.listdir(folder))
        except FileNotFoundError:
            return
        wanted: set[str] = set()
        for key, sha256 in kept.items():
            legacy = key.rpartition("/")[2]
            named = f"{legacy}.{sha256}"
            wanted.add(legacy if named not in present and legacy in present else named)
        for name in present - wanted:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / name)

    def delete_prefix(self, prefix: str) -> None:
        shutil.rmtree(self.blobs / prefix, ignore_errors=True)


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


def _unlocked(path: Path) -> bool:
    """Whether no process holds the file's lock (taking it, then letting it go at once)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(
            fd, fcntl.LOCK_SH | fcntl.LOCK_NB
        )  # shared: works on a read-only fd over NFS too
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
