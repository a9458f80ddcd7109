"""Trace inspection: what ranks and world size a traceset's own traces claim.

A declared rank count is only a claim; the traces carry their own. Pure: bytes come in
through a ``ByteSource`` (a local file, memory, or the service's S3 ranged reads), and
findings come out. No file is ever parsed whole, nor held whole past ``READ_ONCE_LIMIT``
(``read_once``: a rank's trace of a few dozen kilobytes costs one request, not three), so
the cost of inspecting a trace does not grow with it, except for gzip traces that keep
their ``distributedInfo`` at the end, which are streamed through in bounded memory.

    findings = inspect_file("traces.zip", FileSource("traces.zip"))
    summary = summarize(findings, declared_rank_count=16)
    summary.missing_ranks  # [8, 9, ..., 15]

Modules: ``source`` (where bytes come from), ``files`` (what kind a file is),
``archives`` (zip and tar members), ``decompress`` (gzip, bombs refused), ``jsonscan``
(one member of a huge JSON object), ``traces`` (head, then tail), ``distributed``
(Kineto's ``distributedInfo``), ``chakra`` (Chakra host traces), ``names`` (ranks in
file names), ``summary`` (the traceset against its declared rank count), ``budget``
(the CPU time one file's reading may take).
"""

from tracesets.inspection.files import inspect_file
from tracesets.inspection.findings import FORMATS, RANK_SOURCES, FileFinding
from tracesets.inspection.source import (
    ByteSource,
    BytesSource,
    FileSource,
    SliceSource,
    SourceError,
    open_source,
)
from tracesets.inspection.summary import Summary, summarize

__all__ = [
    "FORMATS",
    "RANK_SOURCES",
    "ByteSource",
    "BytesSource",
    "FileFinding",
    "FileSource",
    "SliceSource",
    "SourceError",
    "Summary",
    "inspect_file",
    "open_source",
    "summarize",
]
