"""Where a traceset file's bytes come from, read by offset: a local file, memory, S3.

Inspection never holds a whole file. It asks a ``ByteSource`` for a few ranges (the
head, the tail, an archive's directory) and, for compressed data, streams it through in
small pieces. The service implements ``ByteSource`` with S3 ranged GETs; here are the
local file and in-memory ones, a window onto another source (a tar member, a stored zip
member), and a seekable file object over any source for ``zipfile`` and ``tarfile``.

A failure of the source itself (a disk error, a storage request that failed) is not bad
input: it is raised as ``SourceError`` so that the caller can retry or fail the job,
where bad bytes only ever become a finding.
"""

from __future__ import annotations

import io
import os
from typing import Final, Protocol

from tracesets.inspection.decompress import WHOLE_INPUT_LIMIT, inflate_whole

#: Reads of the seekable adapter are rounded up to this, so ``zipfile``'s many small
#: header reads cost one request each, not one per field.
BUFFER_SIZE: Final = 64 * 1024
#: Gzip read straight through is read ahead this far: 1,024 requests for 1 GiB.
READ_AHEAD: Final = 1024 * 1024
#: A file up to this size is read in one request by ``read_once``: a rank's trace of a
#: few dozen kilobytes is otherwise asked for its first bytes, its head and its whole
#: stream (figures) apart, three requests where one does.
READ_ONCE_LIMIT: Final = 4 * 1024 * 1024


class ByteSource(Protocol):
    @property
    def size(self) -> int: ...

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes from ``offset``; fewer only when the source ends first."""
        ...


class SourceError(Exception):
    """Reading the source failed (I/O, storage); the bytes themselves were never judged."""


def fetch(source: ByteSource, offset: int, length: int) -> bytes:
    """``source.read`` within the source's bounds, its own failures raised as SourceError."""
    offset = max(0, offset)
    length = max(0, min(length, source.size - offset))
    if length == 0:
        return b""
    try:
        data = source.read(offset, length)
    except Exception as error:
        raise SourceError(
            f"reading {length:,} bytes at offset {offset:,} failed: {error}"
        ) from error
    return data[:length]


class FileSource:
    """A local file. Each read opens it afresh: nothing to close, safe across threads.

    Its path is kept as text: the inspection opens one for each of a job's rank files,
    and a ``pathlib.Path`` built for each cost more than the ``stat``."""

    def __init__(self, path: str | os.PathLike[str], *, size: int | None = None) -> None:
        self.path = os.fspath(path)
        self._size = os.stat(self.path).st_size if size is None else size

    @property
    def size(self) -> int:
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        with open(self.path, "rb") as handle:
            handle.seek(offset)
            return handle.read(length)


class BytesSource:
    """Bytes in memory, for tests and small uploads; a small gzip file's inflated bytes
    kept once made, so that its figures and its findings inflate it once."""

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self.inflated: bytes | None = None

    @property
    def size(self) -> int:
        return len(self._data)

    def read(self, offset: int, length: int) -> bytes:
        return self._data[offset : offset + length]


def read_once(source: ByteSource, limit: int = READ_ONCE_LIMIT) -> ByteSource:
    """``source`` itself when it is larger than ``limit``; else its bytes, read in one
    request and held while the file is read (bounded by ``limit``, like any read ahead)."""
    if source.size > limit:
        return source
    return BytesSource(fetch(source, 0, source.size))


def inflate_small(source: ByteSource) -> bytes | None:
    """A small gzip file inflated in one call (``inflate_whole``), kept on a
    ``BytesSource``; None when it must be read step by step."""
    if source.size > WHOLE_INPUT_LIMIT:
        return None
    if isinstance(source, BytesSource) and source.inflated is not None:
        return source.inflated
    inflated = inflate_whole(fetch(source, 0, source.size))
    if isinstance(source, BytesSource):
        source.inflated = inflated
    return inflated


def inflated_already(source: ByteSource) -> bytes | None:
    """What ``inflate_small`` kept of ``source``, if it ran: reading only a file's head,
    inflating it whole would cost more than the stepwise reader's first block."""
    return source.inflated if isinstance(source, BytesSource) else None


class SliceSource:
    """``length`` bytes of another source from ``start``: a member stored whole in an archive."""

    def __init__(self, source: ByteSource, start: int, length: int) -> None:
        self._source = source
        self._start = start
        self._size = max(0, min(length, source.size - start))

    @property
    def size(self) -> int:
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        length = min(length, self._size - offset)
        if length <= 0:
            return b""
        return self._source.read(self._start + offset, length)


class SourceReader(io.RawIOBase):
    """A read-only, seekable raw file over a ByteSource; wrap it with ``open_source``."""

    def __init__(self, source: ByteSource) -> None:
        super().__init__()
        self._source = source
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._source.size}
        if whence not in base:
            raise ValueError(f"invalid whence {whence}")
        position = base[whence] + offset
        if position < 0:
            raise OSError("seek before the start of the file")
        self._position = position
        return position

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        data = fetch(self._source, self._position, len(buffer))
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)


def open_source(source: ByteSource, buffer_size: int = BUFFER_SIZE) -> io.BufferedReader:
    """A seekable binary file over ``source`` with a small buffer, for zipfile and tarfile."""
    return io.BufferedReader(SourceReader(source), buffer_size=buffer_size)
