"""Records sorted in bounded memory: sorted runs spilled to a temporary file, then merged.

A trace's GPU events must be swept in start order, but Kineto does not write them so:
each CUPTI buffer is in order, and the buffers are written in the order of their
addresses (``CuptiActivityBufferMap`` is a ``std::map`` keyed by the buffer's pointer),
so a trace jumps back in time wherever a later buffer sits at a lower address. No window
of bounded size can sort that. So up to ``BUFFER`` records are kept in memory; past
that, they are sorted and written to an unlinked temporary file as a run, and read back
merged, a block of each run at a time, at most ``FAN_IN`` runs at once (more runs are
first merged into longer ones). The result is exactly ``sorted()`` of what was added,
whatever the order; memory is one buffer, or ``FAN_IN`` blocks, whatever the count. The
file holds 8 bytes per field of each record: a few percent of the trace's JSON.
"""

from __future__ import annotations

import heapq
import os
import tempfile
import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice
from typing import Final, TypeVar

_T = TypeVar("_T")

#: Records sorted in memory before a run is written (about 150 bytes each meanwhile).
BUFFER: Final = 65_536
#: Runs merged at once.
FAN_IN: Final = 64
#: Records read back from a run at a time.
READ_BLOCK: Final = 2_048

Record = tuple[float, ...]


class SpillFailed(OSError):
    """The temporary file could not be made, written or read (the machine's fault, not the
    trace's: its folder full, or gone). The compiled twin raises it too."""


def _spilling(call: Callable[..., _T], *args: object) -> _T:
    try:
        return call(*args)
    except OSError as error:
        raise SpillFailed(error.errno, error.strerror or str(error)) from error


class SortedRecords:
    """Tuples of ``width`` floats, given in any order, handed back sorted, once."""

    def __init__(self, width: int, *, buffer: int | None = None, fan_in: int | None = None):
        self.width = width
        self.buffer_size = BUFFER if buffer is None else buffer
        self.fan_in = FAN_IN if fan_in is None else fan_in
        if self.buffer_size < 1 or self.fan_in < 2:
            raise ValueError("a buffer of at least 1 record and a fan-in of at least 2")
        self.buffer: list[Record] = []
        self.runs: list[tuple[int, int]] = []  # (offset in the file, records)
        self._fd: int | None = None
        self._closer: weakref.finalize[[int], SortedRecords] | None = None
        self._end = 0

    def add(self, record: Record) -> None:
        buffer = self.buffer
        buffer.append(record)
        if len(buffer) >= self.buffer_size:
            self._write_run(self._sorted_buffer())

    def add_all(self, records: list[Record]) -> None:
        """``add`` of each record, in order, in one call."""
        room = self.buffer_size - len(self.buffer)
        if len(records) < room:
            self.buffer.extend(records)
            return
        for record in records:
            self.add(record)

    def __bool__(self) -> bool:
        """Whether any record is held (the class has no ``__len__``: runs are not counted)."""
        return bool(self.buffer or self.runs)

    def _sorted_buffer(self) -> list[Record]:
        buffer, self.buffer = self.buffer, []
        buffer.sort()
        return buffer

    def _write_run(self, records: Iterable[Record]) -> None:
        if self._fd is None:  # unlinked at once: nothing is left behind, even by a crash
            self._fd, name = _spilling(tempfile.mkstemp, None, "tracesets-analysis-")
            os.unlink(name)
            self._closer = weakref.finalize(self, os.close, self._fd)  # if never closed
        start, written = self._end, 0
        records = iter(records)
        while block := list(islice(records, READ_BLOCK)):
            data = array("d", chain.from_iterable(block)).tobytes()
            while data:  # the runs being merged are read meanwhile, hence offsets, not seeks
                wrote = _spilling(os.pwrite, self._fd, data, self._end)
                data = data[wrote:]
                self._end += wrote
            written += len(block)
        self.runs.append((start, written))

    def _run(self, offset: int, count: int) -> Iterator[Record]:
        assert self._fd is not None
        width, size = self.width, 8 * self.width
        done = 0
        while done < count:
            take = min(READ_BLOCK, count - done)
            values = array("d")
            values.frombytes(_read_exactly(self._fd, take * size, offset + done * size))
            done += take
            yield from zip(*(values[i::width] for i in range(width)), strict=True)

    def __iter__(self) -> Iterator[Record]:
        """Every record added, in sorted order; the records are given up as they go."""
        if not self.runs:
            yield from self._sorted_buffer()
            return
        if self.buffer:
            self._write_run(self._sorted_buffer())
        while len(self.runs) > self.fan_in:  # merge the oldest runs into one
            merging, self.runs = self.runs[: self.fan_in], self.runs[self.fan_in :]
            self._write_run(heapq.merge(*(self._run(*run) for run in merging)))
        runs, self.runs = self.runs, []
        yield from heapq.merge(*(self._run(*run) for run in runs))
        self.close()

    def close(self) -> None:
        self.buffer = []
        self.runs = []
        if self._closer is not None:
            self._closer()
            self._closer = None
            self._fd = None


def _read_exactly(fd: int, size: int, offset: int) -> bytes:
    data = _spilling(os.pread, fd, size, offset)
    while len(data) < size:
        more = _spilling(os.pread, fd, size - len(data), offset + len(data))
        if not more:
            raise SpillFailed(f"the analysis spill file ended at {offset + len(data)}")
        data += more
    return data
