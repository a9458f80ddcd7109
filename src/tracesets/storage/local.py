"""Files in a local folder, received through the service's own signed PUT URLs.

An upload streams into a temporary file beside its destination (same filesystem),
hashing as it goes, and is renamed into place only once its byte count and sha256
check out and its bytes are on disk (fsync). So a file is never visible half
written, a refused upload leaves nothing behind, and memory stays a few MiB
whatever the file's size. Hashing and writing run on a worker thread, one buffer
behind the network, so the two overlap.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tracesets.problems import InvalidRequest, Problem

_BUFFER: Final = 4 * 1024 * 1024
_STALE_SECONDS: Final = 24 * 3600


@dataclass(frozen=True, slots=True)
class Received:
    size: int
    sha256: str


class _Sink:
    """The temporary file and its running digest; used from one thread at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
        self.digest = hashlib.sha256()

    def write(self, data: bytes) -> None:
        self.digest.update(data)
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]

    def finish(self) -> None:
        os.fsync(self.fd)
        os.close(self.fd)
        self.fd = -1

    def discard(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.path.unlink(missing_ok=True)


def _too_long(size: int) -> InvalidRequest:
    return InvalidRequest.of(
        [
            Problem(
                "body", None, f"The upload has more bytes than the declared size of {size:,} bytes"
            )
        ]
    )


class LocalBlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.blobs = root / "blobs"
        self.tmp = root / "tmp"
        self.blobs.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir(parents=True, exist_ok=True)
        # Leftovers of uploads cut short by a crash are never visible; drop the old ones.
        # (A fresh one may belong to another process sharing this folder.)
        cutoff = time.time() - _STALE_SECONDS
        for leftover in self.tmp.iterdir():
            with contextlib.suppress(FileNotFoundError):
                if leftover.stat().st_mtime < cutoff:
                    leftover.unlink()

    def path(self, key: str) -> Path:
        return self.blobs / key

    async def receive(
        self, key: str | None, chunks: AsyncIterator[bytes], *, size: int, sha256: str | None
    ) -> Received:
        """Stream ``chunks`` into place as ``key``; refuse (InvalidRequest) a wrong size or digest.

        With ``key`` None the bytes are checked and dropped: a repeated upload of a file
        already in place.
        """
        sink = _Sink(self.tmp / f"{uuid.uuid4().hex}.part")
        try:
            received = await self._stream(sink, chunks, size)
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
            else:
                await asyncio.to_thread(self._place, sink, key)
            return Received(received, digest)
        except BaseException:
            sink.discard()
            raise

    async def _stream(self, sink: _Sink, chunks: AsyncIterator[bytes], size: int) -> int:
        received = 0
        buffer: list[bytes] = []
        buffered = 0
        pending: asyncio.Future[None] | None = None
        try:
            async for chunk in chunks:
                received += len(chunk)
                if received > size:
                    raise _too_long(size)
                buffer.append(chunk)
                buffered += len(chunk)
                if buffered >= _BUFFER:
                    if pending is not None:
                        await pending
                    pending = asyncio.ensure_future(asyncio.to_thread(sink.write, b"".join(buffer)))
                    buffer.clear()
                    buffered = 0
            if pending is not None:
                await pending
                pending = None
            if buffer:
                await asyncio.to_thread(sink.write, b"".join(buffer))
        finally:
            if pending is not None:
                # Let the writer finish before the caller closes and removes the file.
                await asyncio.gather(pending, return_exceptions=True)
        return received

    def _place(self, sink: _Sink, key: str) -> None:
        sink.finish()
        final = self.path(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(sink.path, final)
        _fsync_dir(final.parent)

    def size_of(self, key: str) -> int | None:
        try:
            return self.path(key).stat().st_size
        except FileNotFoundError:
            return None

    def delete(self, key: str) -> None:
        self.path(key).unlink(missing_ok=True)

    def delete_prefix(self, prefix: str) -> None:
        shutil.rmtree(self.blobs / prefix, ignore_errors=True)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
