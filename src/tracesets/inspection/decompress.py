"""Gzip decompression in bounded steps, refusing bombs by how much they grow.

``gzip.GzipFile`` would do, but it cannot say how far the output has outgrown the input,
and a few kilobytes of gzip can unfold into gigabytes. ``GzipReader`` feeds zlib small
pieces of input and asks for at most the caller's buffer of output at a time, so memory
stays at one chunk whatever the ratio; past ``BOMB_FLOOR`` bytes of output it refuses to
go on when the output is more than ``MAX_RATIO`` times the input read so far. Real
profiler traces compress 5 to 30 times (the Holistic Trace Analysis samples: 13 to 14).

Concatenated gzip members (what ``cat a.gz b.gz`` makes) are one stream, as for gzip
itself; zero padding after the last member is ignored, other trailing bytes end it.
"""

from __future__ import annotations

import io
import zlib
from typing import Final, Protocol

#: Output may always reach this many bytes, whatever the ratio.
BOMB_FLOOR: Final = 64 * 1024 * 1024
#: Past the floor, output may be at most this many times the input.
MAX_RATIO: Final = 100
#: Compressed bytes handed to zlib at a time. Small, because zlib copies the input it has
#: not used yet on every call; the input's own buffer makes its reads larger.
INPUT_CHUNK: Final = 64 * 1024

GZIP_MAGIC: Final = b"\x1f\x8b"


class Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


class Refused(Exception):
    """Bytes Tracesets will not decompress: they grow past the ratio a trace can have."""


class Truncated(Exception):
    """The compressed stream stops before its end."""


def is_bomb(output_bytes: int, input_bytes: int) -> bool:
    return output_bytes > BOMB_FLOOR and output_bytes > MAX_RATIO * max(input_bytes, 1)


def refusal(output_bytes: int, input_bytes: int) -> str:
    return (
        f"refused: {input_bytes:,} compressed bytes unfold into more than {output_bytes:,} "
        f"(over {MAX_RATIO} times their size), which no trace does"
    )


class GzipReader(io.RawIOBase):
    """The decompressed bytes of a gzip stream read from ``raw``, in bounded steps."""

    def __init__(self, raw: Readable) -> None:
        super().__init__()
        self._raw = raw
        self._zlib = zlib.decompressobj(wbits=31)
        self._carry = b""
        self._finished = False
        self.input_bytes = 0
        self.output_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        if self._finished or len(buffer) == 0:
            return 0
        data = self._next(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _input(self) -> bytes:
        if self._carry:
            data, self._carry = self._carry, b""
            return data
        data = self._raw.read(INPUT_CHUNK)
        self.input_bytes += len(data)
        return data

    def _next(self, limit: int) -> bytes:
        while True:
            if self._zlib.eof and not self._next_member():
                self._finished = True
                return b""
            data = self._zlib.unconsumed_tail or self._input()
            if not data:
                raise Truncated(
                    f"the gzip stream stops after {self.input_bytes:,} compressed bytes, "
                    "before its end"
                )
            output = self._zlib.decompress(data, limit)
            if self._zlib.eof:
                self._carry = self._zlib.unused_data
            if output:
                self.output_bytes += len(output)
                if is_bomb(self.output_bytes, self.input_bytes):
                    raise Refused(refusal(self.output_bytes, self.input_bytes))
                return output

    def _next_member(self) -> bool:
        """After one gzip member ends: start the next one, or say the stream is over."""
        head = self._carry
        while len(head) < 2:
            more = self._raw.read(INPUT_CHUNK)
            self.input_bytes += len(more)
            if not more:
                break
            head += more
        if head[:2] != GZIP_MAGIC:
            return False  # the end, zero padding, or trailing bytes gzip itself ignores
        self._zlib = zlib.decompressobj(wbits=31)
        self._carry = head
        return True


def open_gzip(raw: Readable) -> io.BufferedReader:
    """Buffered decompressed reads of ``raw``, for tarfile and for the trace scanner."""
    return io.BufferedReader(GzipReader(raw), buffer_size=64 * 1024)
