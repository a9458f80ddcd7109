"""Gzip decompression in bounded steps, refusing bombs by how much they grow.

``gzip.GzipFile`` would do, but it cannot say how far the output has outgrown the input,
and a few kilobytes of gzip can unfold into gigabytes. ``GzipReader`` feeds the inflater
small pieces of input and asks for at most the caller's buffer of output at a time, so
memory stays at one chunk whatever the ratio; past ``BOMB_FLOOR`` bytes of output it
refuses to go on when the output is more than ``MAX_RATIO`` times the input read so far.
Real profiler traces compress 5 to 30 times (the Holistic Trace Analysis samples: 13 to
14).

The inflater is ISA-L's, whose streaming interface is zlib's: it inflates a trace at about
3.6 GB/s where zlib manages 1.25 GB/s (one core, 64 KiB steps). With zlib, inflating was a
fifth of the compiled analysis of a gzipped trace; ISA-L makes that pass 15 % faster.

Concatenated gzip members (what ``cat a.gz b.gz`` makes) are one stream, as for gzip
itself; zero padding after the last member is ignored, other trailing bytes end it.

``inflate_whole`` is the short way for a small file held in memory (a rank's trace of
tens of KB), in one call where the stepwise reader takes several. It answers only when the
whole stream inflates cleanly into at most ``WHOLE_LIMIT`` bytes (memory stays bounded);
otherwise the caller reads it step by step, so every refusal and error is the reader's.
"""

from __future__ import annotations

import io
from typing import Final, Protocol

from isal import isal_zlib

from tracesets.inspection.budget import spend

#: Output may always reach this many bytes, whatever the ratio.
BOMB_FLOOR: Final = 64 * 1024 * 1024
#: Past the floor, output may be at most this many times the input.
MAX_RATIO: Final = 100
#: Compressed bytes handed to the inflater at a time. Small, because it copies the input it
#: has not used yet on every call; the input's own buffer makes its reads larger.
INPUT_CHUNK: Final = 64 * 1024

GZIP_MAGIC: Final = b"\x1f\x8b"
#: The bits of a member header's flag byte that RFC 1952 reserves: set, the data is corrupt.
RESERVED_FLAGS: Final = 0xE0
#: ``inflate_whole`` gives at most this many bytes (a rank's trace is a few hundred KB)...
WHOLE_LIMIT: Final = 2 * 1024 * 1024
#: ... and is worth trying on at most this many (traces compress 5 to 30 times): a larger
#: file would often be inflated to the limit for nothing, and held beside its output.
WHOLE_INPUT_LIMIT: Final = 256 * 1024


class Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


class Refused(Exception):
    """Bytes Tracesets will not decompress: they grow past the ratio a trace can have."""


class Corrupt(Exception):
    """The gzip stream breaks its format where the inflater would not say so."""


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
        self._inflater = isal_zlib.decompressobj(wbits=31)
        self._carry = b""
        self._started = False
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
        if not self._started:
            self._carry = self._checked(self._head())
            self._started = True
        while True:
            spend()
            if self._inflater.eof and not self._next_member():
                self._finished = True
                return b""
            data = self._inflater.unconsumed_tail or self._input()
            if not data:
                raise Truncated(
                    f"the gzip stream stops after {self.input_bytes:,} compressed bytes, "
                    "before its end"
                )
            output = self._inflater.decompress(data, limit)
            if self._inflater.eof:
                self._carry = self._inflater.unused_data
            if output:
                self.output_bytes += len(output)
                if is_bomb(self.output_bytes, self.input_bytes):
                    raise Refused(refusal(self.output_bytes, self.input_bytes))
                return output

    def _next_member(self) -> bool:
        """After one gzip member ends: start the next one, or say the stream is over."""
        head = self._head()
        if head[:2] != GZIP_MAGIC:
            return False  # the end, zero padding, or trailing bytes gzip itself ignores
        self._inflater = isal_zlib.decompressobj(wbits=31)
        self._carry = self._checked(head)
        return True

    def _head(self) -> bytes:
        """The carried bytes, read on to a member header's first 4 if the stream has them."""
        head = self._carry
        while len(head) < 4:
            more = self._raw.read(INPUT_CHUNK)
            self.input_bytes += len(more)
            if not more:
                break
            head += more
        return head

    @staticmethod
    def _checked(head: bytes) -> bytes:
        """``head``, once its member's flags are known to be gzip's. ISA-L reads reserved
        flag bits as if they were not set, or all bits as every optional field present,
        waiting for bytes that never come; RFC 1952 (and zlib) call either an error."""
        if len(head) >= 4 and head[:2] == GZIP_MAGIC and head[3] & RESERVED_FLAGS:
            raise Corrupt(f"reserved header flags set: {head[3]:#04x}")
        return head


def inflate_whole(data: bytes) -> bytes | None:
    """Every gzip member of ``data`` inflated, as ``GzipReader`` would read them; None when
    it would refuse, stop short or fail (then let it say why), or past ``WHOLE_LIMIT``."""
    pieces: list[bytes] = []
    room = WHOLE_LIMIT
    while True:
        if data[3:4] and data[3] & RESERVED_FLAGS:
            return None
        inflater = isal_zlib.decompressobj(wbits=31)
        try:
            piece = inflater.decompress(data, room + 1)
        except Exception:  # ISA-L's own error: the stepwise reader says what is wrong
            return None
        room -= len(piece)
        if room < 0 or not inflater.eof:
            return None
        pieces.append(piece)
        data = inflater.unused_data
        if data[:2] != GZIP_MAGIC:  # one member (nearly always): its bytes, not a copy
            return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def open_gzip(raw: Readable) -> io.BufferedReader:
    """Buffered decompressed reads of ``raw``, for tarfile and for the trace scanner."""
    return io.BufferedReader(GzipReader(raw), buffer_size=64 * 1024)
