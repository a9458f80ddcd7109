"""Reading a folder of local traces: each file's findings and figures, one process per core.

A job's folder holds a trace per rank, thousands of them. What costs is not the header
(a tenth of a millisecond a file) but the figures' pass over every event, which is
Python bound to one core: threads would take turns, so the files are shared out among
processes, a batch at a time. Each file is read once (``read_once``) for both its
findings and its figures, and the results come back in the files' order, so the output
is the same as reading them one after the other.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from tracesets.client.files import LocalFile
from tracesets.inspection import FileFinding, FileSource, SourceError, inspect_file
from tracesets.inspection.cores import cores
from tracesets.inspection.jsonscan import CHUNK
from tracesets.inspection.source import READ_ONCE_LIMIT, ByteSource, read_once

if TYPE_CHECKING:
    from tracesets.analysis import TraceAnalysis

#: Files a process gets at the least: with fewer, starting it costs more than it saves
#: (two processes from 64 files).
PARALLEL_FROM: Final = 32
#: The same when only headers are read (``tracesets upload``'s check): a few tenths of a
#: millisecond a file, so a second process (about 80 ms to start and feed) pays only for
#: thousands of files.
HEADERS_PARALLEL_FROM: Final = 1_024
#: Batches each process gets, so that one slow file does not leave the others idle...
BATCHES_PER_PROCESS: Final = 8
#: ... and files a batch holds at most: the last batches end nearly together (a rank's
#: trace takes about 2 ms, a batch's passage between processes a fraction of one).
BATCH_FILES: Final = 16
#: With headers alone, a file is read in one piece only up to the header reader's first
#: read; a larger one only where its header and tail are. ``tracesets upload``'s check
#: of 64 files of 2 MiB that are not traces read all 128 MiB for their first 512 bytes.
HEADERS_ONCE_LIMIT: Final = CHUNK


@dataclass(frozen=True, slots=True)
class LocalReading:
    """What the traces of some files say: their findings and, if asked, their figures."""

    findings: list[FileFinding]
    traces: list[TraceAnalysis]


def unreadable(file: LocalFile, error: Exception) -> FileFinding:
    return FileFinding(
        file=file.name,
        member=None,
        format="unknown",
        size=file.size,
        rank=None,
        world_size=None,
        backend=None,
        rank_source=None,
        problem=f"could not be read: {error}",
        readable=False,
    )


def read_file(file: LocalFile, figures: bool) -> LocalReading:
    """One primary file's findings, and its figures when ``figures``; a file that cannot
    be read is one finding that says so, and no figures.

    The figures are read first: a small gzip file is inflated whole for them, and its
    findings then read the same bytes instead of inflating its head again."""
    try:
        limit = READ_ONCE_LIMIT if figures else HEADERS_ONCE_LIMIT
        source: ByteSource = read_once(FileSource(file.path), limit)
    except (OSError, SourceError) as error:
        return LocalReading([unreadable(file, error)], [])
    traces: list[TraceAnalysis] = []
    if figures:
        from tracesets.analysis import analyze_file  # the figures' pass: not for headers alone

        try:
            traces = analyze_file(file.name, source)
        except (OSError, SourceError):  # a file read again (a large one) that failed this
            traces = []  # time: its findings stand, and a missing figure is no wrong one
    try:
        findings = inspect_file(file.name, source)
    except (OSError, SourceError) as error:
        return LocalReading([unreadable(file, error)], [])
    return LocalReading(findings, traces)


def _read_batch(files: Sequence[LocalFile], figures: bool) -> list[LocalReading]:
    # Headers make few objects: the collector as it is. The figures make many.
    collector: AbstractContextManager[object] = contextlib.nullcontext()
    if figures:
        from tracesets.analysis.collector import fewer_collections

        collector = fewer_collections()
    with collector:
        return [read_file(file, figures) for file in files]


def _read_in_processes(
    files: Sequence[LocalFile], figures: bool, workers: int
) -> list[LocalReading] | None:
    """The readings of ``files`` by ``workers`` processes; None when processes cannot be
    had (no shared memory for their locks, one killed), and this process reads them."""
    size = min(BATCH_FILES, -(-len(files) // (workers * BATCHES_PER_PROCESS)))
    batches = [files[i : i + size] for i in range(0, len(files), size)]
    if figures:  # imported once here, not by each process forked from this one
        import tracesets.analysis  # noqa: F401
    try:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            done = pool.map(_read_batch, batches, [figures] * len(batches))
            return [reading for batch in done for reading in batch]
    except (OSError, NotImplementedError, BrokenProcessPool):
        return None


def read_files(
    files: Sequence[LocalFile], *, figures: bool, workers: int | None = None
) -> LocalReading:
    """The findings (and figures) of the primary files among ``files``, in their order."""
    primary = [file for file in files if file.role == "primary"]
    least = PARALLEL_FROM if figures else HEADERS_PARALLEL_FROM
    workers = min(workers or cores(), max(1, len(primary) // least))
    readings = _read_in_processes(primary, figures, workers) if workers > 1 else None
    if readings is None:
        readings = _read_batch(primary, figures)
    return LocalReading(
        [finding for reading in readings for finding in reading.findings],
        [trace for reading in readings for trace in reading.traces],
    )
