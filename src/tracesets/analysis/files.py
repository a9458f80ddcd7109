"""Analysing one traceset file: each Kineto trace in it, read through once.

Files are opened the way inspection opens them (``tracesets.inspection.files``): gzip by
its magic bytes, zip and tar members one at a time, archives at the top level only, bomb
refusals alike. Every trace is then read in order, start to end, as one stream: a plain
file through a small buffer, a compressed one through its decompressor.

Bad bytes become a ``TraceAnalysis`` whose ``analysis.problem`` says what was wrong,
with the figures of the events read before it; a failure of the source is raised as
``SourceError``. Compressed bytes damaged in their middle often still inflate, into bytes
that are not JSON, and only the checksum at the stream's end tells a damaged upload from a
trace written wrong: so when the events of a trace whose end is checked (gzip, a zip
member) stop parsing, the rest of it is read, and a failed check is the problem given, as
inspection gives it. A zip member stored without compression is checked against its
CRC-32 too, as ``zipfile`` checks those it inflates: its bytes are read whole here.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from tracesets.analysis.decoding import TYPED
from tracesets.analysis.events import BLOCK, EventsUnreadable, Outside, scan_events
from tracesets.analysis.rank import GroupCollectives, RankAccumulator, RankAnalysis, spill_failed
from tracesets.analysis.spill import SpillFailed
from tracesets.inspection.archives import (
    CrcChecked,
    Member,
    is_tar,
    is_zip,
    tar_members,
    tar_stream_members,
    zip_members,
)
from tracesets.inspection.budget import OverBudget, file_budget
from tracesets.inspection.decompress import GZIP_MAGIC, Readable, open_gzip
from tracesets.inspection.distributed import groups_of, parse_ranks, whole_number
from tracesets.inspection.failures import describe
from tracesets.inspection.files import SNIFF_BYTES, Replay, read_up_to
from tracesets.inspection.jsonscan import ValueUnreadable, decode_value, find_last_key
from tracesets.inspection.source import (
    READ_AHEAD,
    ByteSource,
    SourceError,
    inflate_small,
    open_source,
)

#: A trace inflated whole is parsed in one piece up to this size (the events of four
#: blocks of 256 KiB held at once), block by block past it.
WHOLE_PARSE_LIMIT: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class TraceAnalysis:
    """One trace (``file``, or ``member`` of it) and what its events say."""

    file: str
    member: str | None
    analysis: RankAnalysis

    @property
    def label(self) -> str:
        return self.file if self.member is None else f"{self.file}!{self.member}"


def _distributed_info(outside: Outside) -> dict[str, Any] | None:
    at = find_last_key(outside.head, "distributedInfo")
    data = outside.head
    if at is None:
        at, data = find_last_key(outside.tail, "distributedInfo"), outside.tail
    if at is None:
        return None
    try:
        info = decode_value(data, at)
    except ValueUnreadable:
        return None
    return info if isinstance(info, dict) else None


def _declared_groups(outside: Outside, analysis: RankAnalysis) -> RankAnalysis:
    """The process groups of ``distributedInfo.pg_config`` beside those collectives named."""
    info = _distributed_info(outside)
    if info is None:
        return analysis
    groups = {group.name: group for group in analysis.collectives}
    for config in groups_of(info.get("pg_config")):
        name = config.get("pg_name")
        if name is None:
            continue
        group = groups.setdefault(str(name), GroupCollectives(name=str(name)))
        description = config.get("pg_desc")
        if group.description is None and isinstance(description, str):
            group.description = description
        if group.ranks is None:
            group.ranks = parse_ranks(config.get("ranks"))
        size = whole_number(config.get("pg_size"))
        if group.ranks is None and size == 1:
            group.ranks = []
    collectives = sorted(groups.values(), key=lambda g: g.name)
    return dataclasses.replace(analysis, collectives=collectives)


def _damage(stream: Readable) -> str | None:
    """What reading ``stream`` to its end runs into (its inflater's checksum), if anything."""
    try:
        while stream.read(BLOCK):
            pass
    except SourceError:
        raise
    except OverBudget:  # the file's time is spent: the events' own problem stands
        return None
    except Exception as error:
        return describe(error)
    return None


def analyze_stream(
    stream: Readable, block: int | None = None, *, checked: bool = False
) -> RankAnalysis:
    """The figures of one trace read in order; bad bytes become its ``problem``.

    ``checked``: ``stream`` checks its bytes at its end (a CRC-32), and says when they fail.
    """
    accumulator = RankAccumulator()
    try:
        outside = scan_events(stream, accumulator.add_all, TYPED, block)
    except SourceError:
        raise
    except EventsUnreadable as error:
        return accumulator.result((_damage(stream) if checked else None) or str(error))
    except SpillFailed as error:
        return accumulator.result(spill_failed(error), gpu=False)
    except Exception as error:
        return accumulator.result(describe(error))
    if not outside.found:
        return accumulator.result("not a PyTorch profiler trace: it has no traceEvents")
    return _declared_groups(outside, accumulator.result())


def analyze_whole(trace: bytes) -> RankAnalysis:
    """The figures of a trace inflated whole in memory: its events parsed in one piece
    when it is small (a rank's trace of 349 KB: one decode instead of a block's, a cut and
    the rest's, 2-3 % of its reading). A trace whose events are all valid JSON gives the
    same events either way, since a block is cut only between two events; one that is
    not is read again block by block, so that its partial figures are the same too."""
    if len(trace) <= WHOLE_PARSE_LIMIT:
        analysis = analyze_stream(io.BytesIO(trace), block=len(trace) + 1)
        if analysis.problem is None:
            return analysis
    return analyze_stream(io.BytesIO(trace))


def _streams(
    source: ByteSource | None, stream: Readable | None, *, top: bool, checked: bool = False
) -> Iterator[tuple[str | None, Readable | bytes, bool]]:
    """Each trace in some bytes (a file or a member): ``(member, stream, checked)``, or its
    bytes when the file was inflated whole. ``checked``: the stream (``stream``, and what is
    yielded) checks its bytes at its end."""
    if source is not None:
        stream = open_source(source, READ_AHEAD)
    assert stream is not None
    magic = read_up_to(stream, SNIFF_BYTES)
    stream = Replay(magic, stream)
    inflated = None
    if magic.startswith(GZIP_MAGIC):
        inflated = None if source is None else inflate_small(source)
        stream = open_gzip(stream) if inflated is None else io.BytesIO(inflated)
        magic = read_up_to(stream, SNIFF_BYTES)
        stream = Replay(magic, stream)
        source = None
        checked = True
    if is_zip(magic) or is_tar(magic):
        if not top:
            return
        members: Iterator[Member]
        if source is not None:
            members = zip_members(source) if is_zip(magic) else tar_members(source)
        elif is_tar(magic):
            members = tar_stream_members(stream)
        else:
            return
        in_zip = is_zip(magic)  # a zip member's CRC-32 is checked at its end
        for member in members:
            if member.problem is not None:
                continue
            opened: Readable | None = None
            if member.open is not None:
                opened = member.open()
            elif member.source is not None:
                opened = open_source(member.source, READ_AHEAD)
                if member.crc is not None:
                    opened = CrcChecked(opened, member.name, member.crc)
            if opened is None:
                continue
            for _, inner, inner_checked in _streams(None, opened, top=False, checked=in_zip):
                yield member.name, inner, inner_checked
        return
    if magic.lstrip().startswith(b"{") or magic.startswith(b"\xef\xbb\xbf"):
        yield None, stream if inflated is None else inflated, checked


def analyze_file(name: str, source: ByteSource) -> list[TraceAnalysis]:
    """The figures of each JSON trace in one traceset file, archives per member.

    Files and members that are not JSON traces are left out: inspection reports them.
    """
    found: list[TraceAnalysis] = []
    try:
        with file_budget():
            for member, trace, checked in _streams(source, None, top=True):
                if isinstance(trace, bytes):
                    analysis = analyze_whole(trace)
                else:
                    analysis = analyze_stream(trace, checked=checked)
                found.append(TraceAnalysis(name, member, analysis))
    except SourceError:
        raise
    except Exception:  # a broken archive: inspection reports it; the traces before it count
        return found
    return found
